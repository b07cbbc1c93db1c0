"""Where an event log lives, read once from what the user typed: a SQLite file path or a
``postgresql://`` (or ``postgres://``) URL, and nothing else.

Every boundary (the CLI's log arguments, ``store =`` in a campaign file, the library
façade, the families' commands) parses here, so no other module tests a string for a
scheme. What looks like a connection string in another form is refused rather than taken as
a file name: a libpq ``key=value`` string (``host=localhost dbname=x password=...``), a
``user:password@host`` address without a scheme, or a URL of another scheme
(``mysql://...``). Taking them as file names would create a SQLite file named after the
connection string, its password in the name. The refusal names the field and shows the URL
form; it never repeats what was typed, which may hold a password (invariant 5).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from harness.store.postgres_url import SCHEMES, PostgresUrl
from harness.vocabulary.errors import ConfigError, StoreError

# The user goes in the query: `harness.vocabulary.errors.redact` strips whatever stands
# between "://" and "@" from every message, so "postgresql://user@host" would read
# "postgresql://host" in the refusal.
URL_FORM = "postgresql://host:port/dbname?user=NAME"
FIX = (
    f"give a SQLite file path, or a PostgreSQL URL of the form {URL_FORM} with the password "
    "in PGPASSWORD or ~/.pgpass (a file whose name holds '=' or '@' can be given as "
    "./NAME)"
)

# The keywords of a libpq connection string (PostgreSQL's "Parameter Key Words"), the
# common ones: one of them before "=" at the start or after a space is a connection string.
_LIBPQ_KEYWORDS = (
    "host|hostaddr|port|dbname|user|password|passfile|connect_timeout|client_encoding"
    "|options|application_name|fallback_application_name|keepalives|sslmode|sslcert|sslkey"
    "|sslpassword|sslrootcert|sslcrl|requiressl|krbsrvname|gssencmode|service"
    "|target_session_attrs|channel_binding|load_balance_hosts"
)
_LIBPQ_PAIR = re.compile(rf"(?i)(?:^|\s)(?:{_LIBPQ_KEYWORDS})\s*=")
_OTHER_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://")
# ``user:password@host`` or ``user@host:5432``: credentials or a port around an "@" in the
# first path segment. A plain ``run@2024.db`` stays a file name.
_SCHEMELESS = re.compile(r"^[^/\\\s@]*(?::[^/\\\s@]*@|@[^/\\\s:@]*:\d+(?:/|$))")


class LogTargetError(ConfigError):
    """A log target that is neither a file path nor a PostgreSQL URL. ``reason`` is the
    message without the field, for a validator that reports the field itself."""

    def __init__(self, reason: str, *, field: str) -> None:
        self.reason = f"{reason} (fix: {FIX})"
        super().__init__(reason, field=field, fix=FIX)


@dataclass(frozen=True)
class LogTarget:
    """A parsed log location: ``path`` for a SQLite file, ``url`` for a PostgreSQL
    database (exactly one is set). Shown (``str``) without a password."""

    path: Path | None = None
    url: PostgresUrl | None = None

    @property
    def shown(self) -> str:
        """How to name the log in output: the file path, or the URL without its password."""
        return self.url.shown if self.url is not None else str(self.path)

    def __str__(self) -> str:
        return self.shown

    def __repr__(self) -> str:  # the dataclass's would print the URL with its password
        return f"LogTarget({self.shown!r})"


def parse_target(value: str | Path, *, field: str = "log") -> LogTarget:
    """``value`` as a log target, or a `LogTargetError` naming ``field`` (``--db``,
    ``store``...) when it is empty or looks like a connection string of another form."""
    text = str(value)
    if not text.strip():
        raise LogTargetError("no log given (an empty name)", field=field)
    if isinstance(value, str) and text.lower().startswith(SCHEMES):
        try:
            return LogTarget(url=PostgresUrl.parse(text))
        except StoreError as exc:  # a malformed port or IPv6 address
            raise LogTargetError("not a well-formed PostgreSQL URL", field=field) from exc
    reason = refusal(text)
    if reason:
        raise LogTargetError(reason, field=field)
    return LogTarget(path=Path(value))


def refusal(text: str) -> str | None:
    """Why ``text`` is no file path (it reads as a connection string), or None. Says what
    kind of string it is, never what it holds."""
    other = _OTHER_SCHEME.match(text)
    if other:
        scheme = other.group(1).lower()
        if scheme in ("postgresql", "postgres"):
            return None
        shown = scheme if len(scheme) <= 20 else "another"
        return f"a {shown}:// URL is no event log: logs are SQLite files or PostgreSQL databases"
    if _LIBPQ_PAIR.search(text):
        return (
            "a libpq key=value connection string is not accepted (it would be taken as a "
            "file name, password and all)"
        )
    if _SCHEMELESS.match(text):
        return "a user:password@host address without a scheme is not accepted"
    return None


def shown_target(target: object) -> str:
    """How to name a log (a file path, a database, a `LogTarget` or a `Log`) in output:
    never with a password."""
    if isinstance(target, str | Path):
        return parse_target(target).shown
    return str(target)  # a LogTarget or a Log shows itself without a password
