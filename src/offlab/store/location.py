"""Where a store is: a SQLite file (a path, the default) or a PostgreSQL database (a
URL), parsed from `--store`, and the engine that reaches it.

Anything with ``://`` is a URL and never a path, so a mistyped URL is refused in one line
instead of becoming a directory named ``postgresql:`` (issue 28). Passwords never appear
in what offlab prints or records (the machine lock names the store): ``display`` masks them,
and the documentation recommends ~/.pgpass or PGPASSWORD over a password in the URL.
"""

from __future__ import annotations

import os
import re
import sqlite3
import statistics
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import create_engine, event
from sqlalchemy.engine import URL, Engine, make_url
from sqlalchemy.exc import ArgumentError

from .errors import StoreError
from .masking import mask_url

SQLITE_TIMEOUT_S = 30.0
"""How long a SQLite writer waits for another one's transaction (two lab instances
writing one file) before giving up."""
CONNECT_TIMEOUT_S = 10
POSTGRES_SCHEMES = {"postgresql", "postgres", "postgresql+psycopg"}
_URL_LIKE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
EXAMPLE = "postgresql://USER@HOST:5432/DATABASE or a file path"


@dataclass(frozen=True)
class StoreLocation:
    url: URL
    path: Path | None
    """The SQLite file; None for a database server."""

    @property
    def is_file(self) -> bool:
        return self.path is not None

    @property
    def dialect(self) -> str:
        return "sqlite" if self.is_file else "postgresql"

    @property
    def display(self) -> str:
        """The store as the user named it, with any password masked."""
        if self.path is not None:
            return str(self.path)
        return self.url.render_as_string(hide_password=True).replace("postgresql+psycopg://", "postgresql://", 1)

    def same_as(self, other: "StoreLocation") -> bool:
        if self.path is not None and other.path is not None:
            return self.path.resolve() == other.path.resolve()
        return self.path is None and other.path is None and self.url == other.url

    def reports_dir(self) -> Path:
        """Where commands put what they write when --out is not given: beside a SQLite file;
        results/ in the current directory for a database server."""
        return self.path.parent if self.path is not None else Path("results")

    def __str__(self) -> str:
        return self.display


def parse(text: str | Path | StoreLocation) -> StoreLocation:
    """A `--store` value as a location; a URL offlab cannot use is one line with the fix."""
    if isinstance(text, StoreLocation):
        return text
    if isinstance(text, Path) or not _URL_LIKE.match(str(text)):
        if str(text).startswith(("postgresql:", "postgres:")):
            # not echoed: without "//" nothing tells a password from a host in it
            raise StoreError(f"--store {str(text).split(':', 1)[0]}:…: not a store URL; write it as {EXAMPLE}")
        path = Path(text)
        return StoreLocation(URL.create("sqlite", database=str(path)), path)
    try:
        url = make_url(str(text))
    except (ArgumentError, ValueError) as failure:
        raise StoreError(f"{mask_url(str(text))}: not a store URL ({failure}); write it as {EXAMPLE}") from None
    if url.drivername == "sqlite":
        if not url.database:
            raise StoreError(f"{mask_url(str(text))}: names no file; write it as sqlite:///path/to/offlab.sqlite or a file path")
        return parse(Path(url.database))
    if url.drivername not in POSTGRES_SCHEMES:
        raise StoreError(f"{mask_url(str(text))}: offlab stores results in SQLite or PostgreSQL, not "
                         f"{url.drivername}; write it as {EXAMPLE}")
    url = url.set(drivername="postgresql+psycopg")
    if not url.database:
        raise StoreError(f"{mask_url(str(text))}: names no database; write it as {EXAMPLE}")
    return StoreLocation(url, None)


def _user_sets_timeout(url: URL) -> bool:
    """Whether the user chose a connect timeout (or may have, in a service file):
    libpq's keyword arguments would override it, so offlab then passes none."""
    return any(k in url.query for k in ("connect_timeout", "service")) or any(
        v in os.environ for v in ("PGCONNECT_TIMEOUT", "PGSERVICE"))


def make_engine(location: StoreLocation, readonly: bool) -> Engine:
    if location.path is None:
        # Only what the user has not set: libpq reads the rest (the URL's query, PG*
        # variables, ~/.pgpass or PGPASSFILE, a service file) as it always does.
        args = {} if _user_sets_timeout(location.url) else {"connect_timeout": CONNECT_TIMEOUT_S}
        # Readers: one REPEATABLE READ snapshot per command (Store holds its transaction),
        # read-only so the server refuses any write one might attempt. Pre-ping: a pooled
        # connection that idled through a measurement may be gone (restart, failover,
        # idle timeout); writer.py retries a transaction cut in the middle.
        options = {"isolation_level": "REPEATABLE READ", "postgresql_readonly": True} if readonly else {}
        return create_engine(location.url, connect_args=args, pool_pre_ping=True,
                             execution_options=options)
    if readonly:
        uri = "file:" + urllib.parse.quote(str(location.path.resolve())) + "?mode=ro"
        engine = create_engine("sqlite://", creator=lambda: sqlite3.connect(
            uri, uri=True, timeout=SQLITE_TIMEOUT_S, check_same_thread=False))
    else:
        engine = create_engine(location.url, connect_args={"timeout": SQLITE_TIMEOUT_S,
                                                           "check_same_thread": False})
    _sqlite_transactions(engine, wal=not readonly)
    return engine


class _SampleStd:
    """PostgreSQL's stddev_samp for SQLite (which has none): the sample standard
    deviation of the non-NULL values, NULL with fewer than two (a history's query is
    then one text on both engines)."""

    def __init__(self) -> None:
        self.values: list[float] = []

    def step(self, value: float | None) -> None:
        if value is not None:
            self.values.append(value)

    def finalize(self) -> float | None:
        return statistics.stdev(self.values) if len(self.values) > 1 else None


def _sqlite_transactions(engine: Engine, wal: bool) -> None:
    """Let SQLAlchemy, not Python's sqlite3 module, begin transactions, so DDL is
    transactional (a failed migration leaves the store as it was), and let a writer's
    transactions take the write lock up front (BEGIN IMMEDIATE): two writers of one file
    (a campaign's pairs, two lab instances) then queue for up to SQLITE_TIMEOUT_S
    instead of one failing half-way when its read lock cannot become a write lock."""

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection, _record):
        dbapi_connection.isolation_level = None
        dbapi_connection.execute("PRAGMA foreign_keys = ON")
        dbapi_connection.create_aggregate("stddev_samp", 1, _SampleStd)
        if wal:
            # WAL lets reports read while a run writes (store.close goes back to a
            # rollback journal for read-only openers).
            dbapi_connection.execute("PRAGMA journal_mode = WAL")

    @event.listens_for(engine, "begin")
    def _on_begin(connection):
        connection.exec_driver_sql("BEGIN IMMEDIATE" if wal else "BEGIN")


def connect_error(location: StoreLocation, failure: Exception) -> StoreError:
    """One line for a database that cannot be reached: the driver's reason and the fix."""
    cause = getattr(failure, "orig", None) or failure
    lines = [line.strip() for line in str(cause).splitlines() if line.strip()]
    reason = lines[0] if lines else type(cause).__name__
    reason = reason.rpartition(" failed: ")[2] or reason
    reason = reason.replace("FATAL:  ", "").strip()
    if location.path is not None:
        return StoreError(f"{location.display}: not a usable offlab store ({reason}); pass --store "
                          "with a results .sqlite, or move this file away")
    if "password" in reason:
        fix = "check the user's password (in ~/.pgpass, PGPASSWORD or the URL)"
    elif "does not exist" in reason and "database" in reason:
        fix = f"create it (createdb -O USER {location.url.database}) or name another"
    elif "does not exist" in reason:
        fix = "create the role (createuser) or name another user in the URL"
    else:
        fix = "check the server is running and the URL's host and port"
    return StoreError(f"{location.display}: cannot reach the store ({reason}); {fix}")


def check_reachable(location: StoreLocation) -> None:
    """Connect once and disconnect (a database server only): `offlab run` says a server is
    down or a password wrong before it takes the machine or changes anything."""
    if location.path is not None:
        return
    from sqlalchemy import text
    from sqlalchemy.exc import DBAPIError
    engine = make_engine(location, readonly=True)
    try:
        with engine.connect() as connection:
            connection.execute(text("SELECT 1"))
    except DBAPIError as failure:
        raise connect_error(location, failure) from None
    finally:
        engine.dispose()
