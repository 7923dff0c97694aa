"""A real PostgreSQL server for the tests, from Debian's `postgresql` package (make setup
installs it): a new cluster in a temporary directory (initdb), started with pg_ctl as
the `postgres` user on a unix socket in that directory and a free loopback port, stopped
and removed at the end. Nothing of the machine's own clusters is touched.

Two roles: `postgres` (trust, over the socket: the tests' administrator, creating a
database per test) and `offlab` with a password (scram-sha-256 over TCP, as a team's
server would ask), which is what the store URLs under test use.

A server whose test session was killed (SIGKILL, a CI timeout) cannot stop itself; each
server's directory names its owner process, and the next session stops and removes the
servers whose owner is gone (`reap_orphans`).
"""

from __future__ import annotations

import itertools
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import psycopg
import psycopg.sql

from offlab.runscope import pid_alive
from hangguard import HANG_S

USER, PASSWORD = "offlab", "lab-secret"
ROOT_PREFIX = "offlab-pg-"
# A directory without its owner file (a session that died between mkdtemp and writing
# it, or one started by a version of this module without owners) is reaped only once it
# is this old and no server runs in it: its owner is unknown, so a running server in it
# may belong to a live session.
_OWNERLESS_GRACE_S = 60
_counter = itertools.count()


def server_bindir() -> Path | None:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"),
                   key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0)
    return found[-1].parent if found else None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _as_postgres(*argv: str) -> None:
    subprocess.run(["runuser", "-u", "postgres", "--", *argv], check=True, capture_output=True,
                   text=True, timeout=HANG_S)


class PgServer:
    def __init__(self, bindir: Path):
        self.bindir = bindir
        self.root = Path(tempfile.mkdtemp(prefix=ROOT_PREFIX))
        (self.root / "owner").write_text(f"{os.getpid()}\n")
        shutil.chown(self.root, "postgres", "postgres")
        os.chmod(self.root, 0o755)
        self.data = self.root / "data"
        self.port = _free_port()

    def start(self) -> "PgServer":
        _as_postgres(str(self.bindir / "initdb"), "-D", str(self.data), "-U", "postgres",
                     "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--no-sync")
        self._pg_ctl_start()
        with self.admin() as conn:
            conn.execute(f"CREATE ROLE {USER} LOGIN CREATEDB PASSWORD '{PASSWORD}'")
        return self

    def stop(self) -> None:
        try:
            _as_postgres(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    def admin(self, dbname: str = "postgres") -> psycopg.Connection:
        return psycopg.connect(host=str(self.root), port=self.port, user="postgres", dbname=dbname,
                               autocommit=True)

    def create_database(self, owner: str = USER) -> str:
        name = f"store_{os.getpid()}_{next(_counter)}"
        with self.admin() as conn:
            conn.execute(f"CREATE DATABASE {name} OWNER {owner}")
        return name

    def create_role(self, password: str) -> str:
        """A new login role with this password (scram over TCP); its name."""
        name = f"role_{os.getpid()}_{next(_counter)}"
        with self.admin() as conn:
            conn.execute(psycopg.sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
                psycopg.sql.Identifier(name), psycopg.sql.Literal(password)))
        return name

    def dump(self, dbname: str) -> str:
        """The database as pg_dump writes it (schema and every row)."""
        done = subprocess.run(["runuser", "-u", "postgres", "--", str(self.bindir / "pg_dump"),
                               "-h", str(self.root), "-p", str(self.port), dbname],
                              check=True, capture_output=True, text=True, timeout=HANG_S)
        return done.stdout

    def restart(self) -> None:
        """Stop the server (fast: every connection cut, as a restart or failover does;
        not immediate, which with this test server's synchronous_commit=off would lose
        the last commits) and start it again on the same port with the same data."""
        _as_postgres(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop")
        self._pg_ctl_start()

    def _pg_ctl_start(self) -> None:
        options = (f"-k {self.root} -p {self.port} -c listen_addresses=127.0.0.1 -c fsync=off "
                   "-c synchronous_commit=off -c full_page_writes=off")
        _as_postgres(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-o", options,
                     "-l", str(self.root / "server.log"), "-w", "-t", "60", "start")

    def url(self, dbname: str, password: str = PASSWORD, port: int | None = None, user: str = USER) -> str:
        return f"postgresql://{user}:{password}@127.0.0.1:{port or self.port}/{dbname}"

    def tables(self, dbname: str) -> set[str]:
        with self.admin(dbname) as conn:
            rows = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'").fetchall()
        return {row[0] for row in rows}


def _in_use(root: Path) -> bool:
    """Its owner session is alive, or (owner unknown) it is new or a server runs in it."""
    try:
        return pid_alive(int((root / "owner").read_text()))
    except ValueError:
        return False
    except FileNotFoundError:
        pass
    if time.time() - root.stat().st_mtime < _OWNERLESS_GRACE_S:
        return True
    try:
        return pid_alive(int((root / "data" / "postmaster.pid").read_text().split()[0]))
    except (FileNotFoundError, ValueError, IndexError):
        return False


def reap_orphans(bindir: Path) -> list[Path]:
    """Stop and remove the servers whose test session is gone; the directories reaped."""
    reaped = []
    for root in sorted(Path(tempfile.gettempdir()).glob(ROOT_PREFIX + "*")):
        if not root.is_dir() or _in_use(root):
            continue
        if (root / "data" / "postmaster.pid").exists():
            # immediate: nothing in a dead session's scratch database is worth a checkpoint
            subprocess.run(["runuser", "-u", "postgres", "--", str(bindir / "pg_ctl"), "-D",
                            str(root / "data"), "-m", "immediate", "-w", "stop"],
                           capture_output=True, timeout=HANG_S)
        shutil.rmtree(root, ignore_errors=True)
        reaped.append(root)
    return reaped
