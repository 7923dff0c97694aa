"""Bringing a store's schema to the revision this offlab writes, or refusing it.

One migration history for both engines (Alembic, alembic/versions). A store is in one
of these states when it is opened:

* empty (a new file, an empty database): a SQLite file is created at the newest
  revision; a PostgreSQL database is refused until its owner runs `offlab store upgrade`;
* a SQLite store of the hand-written releases (a ``meta`` table, no ``alembic_version``):
  format 1 is first upgraded by offlab.store.migrations, then the history adopts it at 0001;
* at an older revision: a SQLite file is upgraded by its first writer; a PostgreSQL
  schema only by `offlab store upgrade` (open_for_writing refuses it in one line);
* at the newest: used as it is;
* written by a newer offlab (a revision this one does not know, or a newer format in
  ``meta``): refused in one line before anything is written.

Upgrades run in one transaction (PostgreSQL and SQLite both have transactional DDL)
under a lock — an advisory lock on PostgreSQL, the write lock on SQLite — so two
upgrades at once upgrade once; the second waits for the first's transaction and then
finds the store current. Reading commands never upgrade: they ask for it in one line.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from typing import TYPE_CHECKING

from sqlalchemy import inspect, text
from sqlalchemy.engine import Connection, Engine

from .migrations import MIGRATIONS
from .errors import StoreError
from .location import StoreLocation

if TYPE_CHECKING:
    from alembic.config import Config

SCRIPTS = Path(__file__).parent / "alembic"
FORMAT_VERSION = 4
"""meta.format_version of the newest revision: what offlab releases before Alembic read
to refuse a store they cannot write (see alembic/versions/0002_team_store.py)."""
UPGRADE_LOCK = 0x6F66_6C61_62  # "oflab": the advisory lock key of schema upgrades
REVISIONS = ("0001", "0002", "0003", "0004", "0005")
"""The revisions of alembic/versions, oldest first. A reading command checks a store
against them without importing Alembic (most of its start-up otherwise); only an
upgrade loads the history. tests/test_store_schema.py checks they are the history's."""


@dataclass(frozen=True)
class SchemaState:
    tables: frozenset[str]
    format_version: int | None
    revision: str | None


def _config(connection: Connection | None = None) -> "Config":
    from alembic.config import Config
    config = Config()
    config.set_main_option("script_location", str(SCRIPTS))
    if connection is not None:
        config.attributes["connection"] = connection
    return config


def head_revision() -> str:
    return REVISIONS[-1]


def known_revisions() -> set[str]:
    return set(REVISIONS)


def read_state(connection: Connection) -> SchemaState:
    tables = frozenset(inspect(connection).get_table_names())
    version = revision = None
    if "meta" in tables:
        row = connection.execute(text("SELECT value FROM meta WHERE key = 'format_version'")).first()
        version = int(row[0]) if row else None
    if "alembic_version" in tables:
        row = connection.execute(text("SELECT version_num FROM alembic_version")).first()
        revision = row[0] if row else None
    return SchemaState(tables, version, revision)


def refuse_newer(location: StoreLocation, state: SchemaState) -> None:
    if state.revision is not None and state.revision not in known_revisions():
        what = f"schema revision {state.revision}"
    elif state.format_version is not None and state.format_version > FORMAT_VERSION:
        what = f"results format {state.format_version}"
    else:
        return
    raise StoreError(f"{location.display}: {what} is from a newer offlab than this one "
                     f"(format {FORMAT_VERSION}, revision {head_revision()}); upgrade offlab")


def upgrade(engine: Engine, location: StoreLocation) -> None:
    """Bring a store that may be written to the newest revision (see the module doc)."""
    from alembic import command
    with engine.connect() as connection:
        with connection.begin():
            if location.dialect == "postgresql":
                connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": UPGRADE_LOCK})
            state = read_state(connection)
            refuse_newer(location, state)
            if state.revision == head_revision():
                return
            if state.revision is None and state.tables - {"meta"}:
                _adopt_legacy(connection, location, state)
            command.upgrade(_config(connection), "head")


def _adopt_legacy(connection: Connection, location: StoreLocation, state: SchemaState) -> None:
    """A store of the hand-written releases: format 1 upgraded to 2 here, format 2 as it is
    (revision 0001 then creates only the tables it lacks)."""
    if "run" not in state.tables or state.format_version is None:
        raise StoreError(f"{location.display}: holds tables but is not an offlab store; pass --store "
                         "with a results store, or an empty database")
    version = state.format_version
    while version < 2:
        step = MIGRATIONS.get(version)
        if step is None or location.dialect != "sqlite":
            raise StoreError(f"{location.display}: no upgrade from results format {version}")
        step(connection.connection.driver_connection)
        version += 1
        connection.execute(text("UPDATE meta SET value = :v WHERE key = 'format_version'"), {"v": str(version)})


def upgrade_command(location: StoreLocation) -> str:
    return f"offlab store upgrade --store {location.display}"


def open_for_writing(engine: Engine, location: StoreLocation) -> None:
    """A writer's checks. A SQLite file is one engineer's: it is upgraded in place. A
    PostgreSQL schema is the team's: only `offlab store upgrade`, run by the role that
    owns it, changes it (a lab machine with a newer offlab must not upgrade it under the
    others mid-campaign); a writer of another revision is refused in one line."""
    if location.dialect == "sqlite":
        upgrade(engine, location)
        return
    with engine.connect() as connection:
        state = read_state(connection)
    refuse_newer(location, state)
    if not state.tables:
        raise StoreError(f"{location.display}: an empty database; create offlab's tables once, as the "
                         f"role that is to own them, with: {upgrade_command(location)}")
    if state.revision != head_revision():
        raise StoreError(f"{location.display}: results format {state.format_version} (schema revision "
                         f"{state.revision or 'none'}) is older than this offlab's ({FORMAT_VERSION}, "
                         f"{head_revision()}); the schema's owner upgrades it with: {upgrade_command(location)}")


def check_readable(connection: Connection, location: StoreLocation) -> None:
    """A reading command's checks: an offlab store at the newest revision."""
    state = read_state(connection)
    if state.format_version is None:
        raise StoreError(f"{location.display}: not an offlab store (no format version); pass --store "
                         "with a results store")
    refuse_newer(location, state)
    if state.revision != head_revision():
        raise StoreError(f"{location.display}: results format {state.format_version} needs an upgrade "
                         "that a reading command does not write; upgrade it once, as a user who may "
                         f"write it, with: {upgrade_command(location)}")
