"""Where a PostgreSQL event log lives: a ``postgresql://`` connection string, and the form of
it that may be shown (never its password: invariant 5). Parsed by `harness.store.target`,
the one place that tells a URL from a file path.

The password should come from the environment (``PGPASSWORD``) or ``~/.pgpass``, which libpq
reads itself; one given inside the URL still works but is never printed, logged or put in an
error message.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

from harness.vocabulary.errors import StoreError

SCHEMES = ("postgresql://", "postgres://")
_SECRET_PARAMS = frozenset({"password", "sslpassword"})


@dataclass(frozen=True)
class PostgresUrl:
    """A connection string and what of it may be shown."""

    url: str
    shown: str
    secrets: tuple[str, ...]

    def __repr__(self) -> str:  # the dataclass's would print the password
        return f"PostgresUrl({self.shown!r})"

    @classmethod
    def parse(cls, target: str) -> PostgresUrl:
        """``target``, a ``postgresql://`` URL, split into what may be shown and its secrets."""
        try:
            parts = urlsplit(target)
            _ = parts.port  # raises on a malformed port
        except ValueError as exc:
            raise StoreError(f"not a PostgreSQL connection string: {exc}") from exc
        secrets = [unquote(parts.password)] if parts.password else []
        query = parse_qsl(parts.query, keep_blank_values=True)
        secrets += [value for key, value in query if key.lower() in _SECRET_PARAMS and value]
        host = parts.hostname or ""
        if ":" in host:  # an IPv6 address goes back inside brackets
            host = f"[{host}]"
        netloc = (f"{parts.username}@" if parts.username else "") + host
        if parts.port is not None:
            netloc += f":{parts.port}"
        kept = urlencode([(k, v) for k, v in query if k.lower() not in _SECRET_PARAMS])
        shown = urlunsplit((parts.scheme, netloc, parts.path, kept, ""))
        return cls(target, shown, tuple(secrets))

    def scrub(self, text: str) -> str:
        """``text`` (a driver's error message) with the password and the raw URL removed."""
        text = text.replace(self.url, self.shown)
        for secret in self.secrets:
            text = text.replace(secret, "***")
        return text

    def __str__(self) -> str:
        return self.shown
