"""`offlab doctor --store`: whether a store can be reached and read by this offlab, and
`offlab store upgrade`: bring an older schema (or an empty database) to this offlab's
revision — on PostgreSQL the only command that changes the schema, run by its owner."""

from __future__ import annotations

import sqlite3

from sqlalchemy.exc import DBAPIError

from ..store.errors import StoreError
from ..store.location import StoreLocation, connect_error, make_engine
from ..store.schema import head_revision, read_state, upgrade, upgrade_command
from ..store.store import Store
from .doctor import Check


def upgrade_store(location: StoreLocation) -> str:
    """Upgrade the schema; one line saying from which revision to which."""
    engine = make_engine(location, readonly=False)
    try:
        with engine.connect() as connection:
            before = read_state(connection).revision
        upgrade(engine, location)
    except (DBAPIError, sqlite3.DatabaseError) as failure:
        raise connect_error(location, failure) from None
    finally:
        engine.dispose()
    if before == head_revision():
        return f"{location.display}: already at schema revision {before}; nothing to do"
    return f"{location.display}: schema revision {before or 'none'} → {head_revision()}"


def check_store(location: StoreLocation) -> list[Check]:
    fix = ""
    try:
        with Store(location, readonly=True) as store:
            runs, running = store.run_count()
    except StoreError as failure:
        detail = str(failure)
        if "needs an upgrade" in detail:
            fix = upgrade_command(location)
        return [Check("store", False, detail.removeprefix(f"{location.display}: "), fix)]
    return [Check("store", True, f"{location.dialect} at {location.display}, schema revision "
                  f"{head_revision()}: {runs} runs ({running} running)")]
