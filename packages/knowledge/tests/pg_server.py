"""A real, throw-away PostgreSQL server for the tests and benchmarks (Debian's ``postgresql``).

``initdb`` and ``pg_ctl`` refuse to run as root, so under root only those server programs run
as the ``postgres`` user (``runuser``), in a temporary folder that user owns; Python itself
never does. The server listens on a Unix socket in that folder only (no TCP port), with a
UTF-8 database cluster (``C.UTF-8``: trigrams of Chinese text need a UTF-8 character type) and
``fsync`` off. :meth:`PostgresServer.stop` ends it by its postmaster pid, so an aborted run
leaves no server behind as long as the caller stops it in a ``finally``.

``DSH_TEST_POSTGRES_URL`` points the tests at an external server instead: its URL must let
us create and drop databases (and, for one test, a role). The fault tests (restarts, a hot
standby, password authentication) always start servers of their own.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import quote

EXTERNAL_ENV = "DSH_TEST_POSTGRES_URL"
PASSWORD_USER = "dsh_password_user"  # noqa: S105 - a role name
PASSWORD = "correct-horse-battery"  # noqa: S105 - a test server's throw-away role


def binaries() -> Path | None:
    """The folder of Debian's PostgreSQL server programs, or None when not installed."""
    root = Path("/usr/lib/postgresql")
    found = sorted(
        (p for p in root.glob("*/bin") if (p / "initdb").is_file()),
        key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
    )
    if found:
        return found[-1]
    beside = shutil.which("initdb")
    return Path(beside).parent if beside else None


def _as_server_user(argv: list[str]) -> list[str]:
    if os.geteuid() == 0:
        return ["runuser", "-u", "postgres", "--", *argv]
    return argv


class PostgresServer:
    """One server in its own temporary folder; ``url(name)`` addresses a database on it."""

    def __init__(
        self, bin_dir: Path, *, primary: PostgresServer | None = None, tcp: bool = False
    ) -> None:
        self.bin = bin_dir
        # tcp: also listen on the loopback address, on a free port (the socket file then
        # carries that port's number too); for what only TCP has, such as SSL negotiation.
        self.port = _free_port() if tcp else 5432
        self.root = Path(tempfile.mkdtemp(prefix="dsh-pg-"))
        self.data = self.root / "data"
        self.socket_dir = self.root / "sock"
        self.primary = primary
        self.pid: int | None = None
        self.socket_dir.mkdir()
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres", "postgres")
            shutil.chown(self.socket_dir, "postgres", "postgres")
        self.root.chmod(0o755)

    # --- life cycle ---------------------------------------------------------------------

    def _run(self, *argv: str) -> None:
        done = subprocess.run(
            _as_server_user([str(self.bin / argv[0]), *argv[1:]]),
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
            cwd=self.root,
        )
        if done.returncode != 0:
            raise RuntimeError(f"{argv[0]} failed: {done.stdout}{done.stderr}")

    def start(self) -> PostgresServer:
        if self.primary is None:
            self._run(
                "initdb",
                "-D",
                str(self.data),
                "-U",
                "postgres",
                "--locale=C.UTF-8",
                "-E",
                "UTF8",
                "--auth=trust",
                "--no-sync",
            )
            (self.data / "pg_hba.conf").write_text(
                f"local all {PASSWORD_USER} scram-sha-256\n"
                "local all all trust\n"
                "local replication all trust\n"
                "host all all 127.0.0.1/32 trust\n"
            )
        else:
            # A hot standby: a base backup of the primary, started read-only (-R writes
            # standby.signal and the connection back to the primary).
            self._run(
                "pg_basebackup",
                "-D",
                str(self.data),
                "-h",
                str(self.primary.socket_dir),
                "-U",
                "postgres",
                "-R",
                "--no-sync",
                "-X",
                "stream",
                "--checkpoint=fast",
            )
        self._start()
        return self

    def _start(self) -> None:
        listen = "127.0.0.1" if self.port != 5432 else ""
        options = (
            f"-c listen_addresses='{listen}' -c port={self.port} "
            f"-c unix_socket_directories={self.socket_dir} "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off "
            "-c max_connections=200 -c shared_buffers=32MB"
        )
        self._run(
            "pg_ctl",
            "-D",
            str(self.data),
            "-l",
            str(self.root / "server.log"),
            "-w",
            "-t",
            "60",
            "-o",
            options,
            "start",
        )
        self.pid = int((self.data / "postmaster.pid").read_text().split()[0])

    def halt(self) -> None:
        """Stop the server (fast shutdown) but keep its data: :meth:`resume` starts it again."""
        self._signal_and_wait(signal.SIGINT)

    def resume(self) -> None:
        self._start()

    def restart(self) -> None:
        """Stop (fast) and start again on the same data and socket."""
        self.halt()
        self.resume()

    def _signal_and_wait(self, which: signal.Signals) -> None:
        if self.pid is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, which)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                os.kill(self.pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.02)
        else:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
        self.pid = None

    def stop(self) -> None:
        """End the server by its postmaster pid (fast shutdown) and remove its folder."""
        try:
            self._signal_and_wait(signal.SIGINT)
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    # --- addressing ---------------------------------------------------------------------

    def url(self, database: str = "postgres", *, user: str = "postgres") -> str:
        port = "" if self.port == 5432 else f"&port={self.port}"
        return f"postgresql://{user}@/{database}?host={quote(str(self.socket_dir), safe='/')}{port}"

    def tcp_url(self, database: str = "postgres", *, user: str = "postgres") -> str:
        return f"postgresql://{user}@127.0.0.1:{self.port}/{database}"

    def psql(self, database: str, sql: str) -> str:
        done = subprocess.run(
            [
                str(self.bin / "psql"),
                "-X",
                "-q",
                "-A",
                "-t",
                "-v",
                "ON_ERROR_STOP=1",
                "-h",
                str(self.socket_dir),
                "-p",
                str(self.port),
                "-U",
                "postgres",
                "-d",
                database,
                "-c",
                sql,
            ],
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
        if done.returncode != 0:
            raise RuntimeError(f"psql failed: {done.stderr}")
        return done.stdout.strip()


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class DatabaseFactory:
    """Fresh databases from one template, on our own server or an external one."""

    def __init__(self, admin_url: str, url_for: Callable[[str], str]) -> None:
        import psycopg

        self.admin = psycopg.connect(admin_url, autocommit=True)
        self.url_for = url_for
        self.prefix = f"dsh_{os.getpid()}_{uuid.uuid4().hex[:6]}"
        self.template = f"{self.prefix}_template"
        self.created: list[str] = []
        # C.UTF-8 where the server has it (Debian, ours); else the server's own UTF-8 locale.
        self.locale = " LC_COLLATE 'C.UTF-8' LC_CTYPE 'C.UTF-8'"
        create = f"CREATE DATABASE \"{self.template}\" TEMPLATE template0 ENCODING 'UTF8'"
        try:
            self.admin.execute(create + self.locale)
        except psycopg.Error:
            self.locale = ""
            self.admin.execute(create)
        self.created.append(self.template)
        self.counter = 0

    def create(self, *, from_template: bool = True) -> str:
        """A new empty database; returns its URL."""
        self.counter += 1
        name = f"{self.prefix}_{self.counter}"
        template = self.template if from_template else "template0"
        extra = "" if from_template else " ENCODING 'UTF8'" + self.locale
        self.admin.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"{extra}')
        self.created.append(name)
        return self.url_for(name)

    def close(self, *, drop: bool) -> None:
        try:
            for name in reversed(self.created if drop else []):
                with contextlib.suppress(Exception):
                    self.admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            self.admin.close()


def external_url() -> str | None:
    value = os.environ.get(EXTERNAL_ENV, "").strip()
    return value or None


def with_database(url: str, name: str) -> str:
    """``url`` with its database name replaced by ``name`` (query and credentials kept)."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, parts.fragment))


@contextlib.contextmanager
def running_server() -> Iterator[PostgresServer]:
    """Our own server for the duration of the block (stopped in a finally)."""
    found = binaries()
    if found is None:
        raise FileNotFoundError("PostgreSQL server programs (initdb) are not installed")
    server = PostgresServer(found)
    try:
        server.start()
        yield server
    finally:
        server.stop()
