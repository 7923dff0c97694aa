"""The store's schema history on both engines: a new store is created at the newest
revision, stores of the hand-written release (format 2, tests/fixtures/v2_store.sql.gz,
written by offlab at 5ee5f9b from fixtures/make_store.py and dumped with sqlite3's
iterdump) are upgraded in place with every figure kept, and a schema from a newer offlab
is refused in one line with nothing written."""

from __future__ import annotations

import gzip
import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from fixtures.make_store import build_store, fixture_cases, fixture_run_info
from offlab.storage.location import parse
from offlab.storage.schema import FORMAT_VERSION, head_revision
from offlab.store import Store, StoreError

V2_FIXTURE = Path(__file__).parent / "fixtures" / "v2_store.sql.gz"


def _sql(where, statement: str):
    """Run one statement on a store behind offlab's back (the test's own connection)."""
    url = parse(where).url if not isinstance(where, Path) else f"sqlite:///{where}"
    engine = create_engine(url)
    with engine.begin() as conn:
        result = conn.execute(text(statement))
        rows = result.all() if result.returns_rows else None
    engine.dispose()
    return rows


@pytest.fixture()
def v2_path(tmp_path: Path) -> Path:
    path = tmp_path / "v2.sqlite"
    connection = sqlite3.connect(path)
    connection.executescript(gzip.decompress(V2_FIXTURE.read_bytes()).decode())
    connection.close()
    return path


def test_a_new_store_is_at_the_newest_revision(store_at):
    Store(store_at).close()
    assert _sql(store_at, "SELECT version_num FROM alembic_version") == [(head_revision(),)]
    assert _sql(store_at, "SELECT value FROM meta WHERE key = 'format_version'") == [(str(FORMAT_VERSION),)]


def test_a_format_2_store_is_upgraded_with_every_figure_kept(v2_path: Path, tmp_path: Path):
    written = tmp_path / "today.sqlite"
    build_store(written, runs=3)  # the same fixture run, written by today's store
    with Store(v2_path) as old, Store(written) as new:
        upgraded = old.load_run("fixture-run")
        assert upgraded.cases == new.load_run("fixture-run").cases
        assert upgraded.samples == new.load_run("fixture-run").samples
        assert set(upgraded.adaptive) == {fixture_cases()[0].key}
        assert [r.id for r in old.runs()] == ["fixture-run", "killed-run"]
    assert _sql(v2_path, "SELECT version_num FROM alembic_version") == [(head_revision(),)]
    # The measured order of a sample's rows is kept from SQLite's rowid.
    assert _sql(v2_path, "SELECT COUNT(*) FROM sample_counter WHERE seq IS NULL") == [(0,)]


def test_a_reading_command_does_not_upgrade(v2_path: Path):
    before = v2_path.read_bytes()
    with pytest.raises(StoreError) as refused:
        Store(v2_path, readonly=True)
    assert "needs an upgrade" in str(refused.value) and "\n" not in str(refused.value)
    assert v2_path.read_bytes() == before


@pytest.mark.parametrize("statement, said", [
    ("UPDATE alembic_version SET version_num = '9999'", "schema revision 9999 is from a newer offlab"),
    (f"UPDATE meta SET value = '{FORMAT_VERSION + 1}' WHERE key = 'format_version'",
     f"results format {FORMAT_VERSION + 1} is from a newer offlab"),
])
@pytest.mark.parametrize("readonly", [False, True])
def test_a_schema_from_a_newer_offlab_is_refused_and_nothing_written(store_at, statement, said, readonly):
    with Store(store_at) as store:
        store.begin_run(fixture_run_info())
    _sql(store_at, statement)
    tables = _sql(store_at, "SELECT version_num FROM alembic_version")
    with pytest.raises(StoreError) as refused:
        Store(store_at, readonly=readonly)
    message = str(refused.value)
    assert said in message and "upgrade offlab" in message and "\n" not in message
    assert _sql(store_at, "SELECT version_num FROM alembic_version") == tables
    assert _sql(store_at, "SELECT COUNT(*) FROM run") == [(1,)]


def test_two_writers_opening_an_empty_database_at_once_create_it_once(pg_url):
    import threading
    failures = []

    def open_it():
        try:
            Store(pg_url).close()
        except Exception as failure:  # collected and asserted below
            failures.append(failure)

    threads = [threading.Thread(target=open_it) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert _sql(pg_url, "SELECT version_num FROM alembic_version") == [(head_revision(),)]
