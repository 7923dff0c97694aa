"""The store's schema history on both engines: a new store is created at the newest
revision, stores of the hand-written release (format 2, tests/fixtures/v2_store.sql.gz,
written by offlab at 5ee5f9b from fixtures/make_store.py and dumped with sqlite3's
iterdump) are upgraded in place with every figure kept, and a schema from a newer offlab
is refused in one line with nothing written."""

from __future__ import annotations

import gzip
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from fixtures.make_store import build_store, fixture_cases, fixture_run_info
from offlab.run.store_health import upgrade_store
from offlab.store.location import parse
from offlab.store.schema import FORMAT_VERSION, head_revision
from offlab.store.store import Store, StoreError
from hangguard import HANG_S

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


def test_the_revisions_readers_know_are_the_alembic_history():
    """Readers check a store against schema.REVISIONS without loading Alembic; the
    history itself is the truth."""
    from alembic.script import ScriptDirectory
    from offlab.store.schema import REVISIONS, _config
    history = ScriptDirectory.from_config(_config())
    assert tuple(reversed([script.revision for script in history.walk_revisions()])) == REVISIONS
    assert history.get_current_head() == head_revision()


def test_a_reading_command_starts_without_the_measuring_side_or_alembic():
    """`list`, `history`, `compare` and `doctor --store` import neither Alembic nor the
    lab's run side (pyroute2, the run loop): seconds of start-up on every command."""
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys; from offlab import cli; import offlab.run.store_health; "
         "print(' '.join(sys.modules))"], capture_output=True, text=True, check=True).stdout.split()
    assert not {"alembic", "pyroute2", "offlab.run.runflow", "offlab.run.plan", "matplotlib", "scipy"} & set(loaded)


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
        # the run's case counter (revision 0005) is filled from the cases it holds
        assert [(r.cases, r.samples) for r in old.runs()][0] == (len(upgraded.cases), sum(
            len(v) for v in upgraded.samples.values())) == (new.runs()[0].cases, new.runs()[0].samples)
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


def test_two_owners_upgrading_an_empty_database_at_once_create_it_once(pg_empty_url):
    import threading
    failures = []

    def upgrade_it():
        try:
            upgrade_store(parse(pg_empty_url))
        except Exception as failure:  # collected and asserted below
            failures.append(failure)

    threads = [threading.Thread(target=upgrade_it) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert _sql(pg_empty_url, "SELECT version_num FROM alembic_version") == [(head_revision(),)]


def _at_revision(url: str, revision: str) -> None:
    """A PostgreSQL store as an older offlab left it (Alembic to `revision`)."""
    from alembic import command
    from offlab.store.schema import _config
    engine = create_engine(parse(url).url)
    with engine.begin() as connection:
        command.upgrade(_config(connection), revision)
    engine.dispose()


@pytest.mark.parametrize("readonly", [False, True])
def test_on_postgresql_only_store_upgrade_changes_the_schema(pg_empty_url, tmp_path, readonly):
    empty = pytest.raises(StoreError, Store, pg_empty_url, readonly=readonly)
    assert "\n" not in str(empty.value)
    if not readonly:
        assert f"offlab store upgrade --store {parse(pg_empty_url).display}" in str(empty.value)
    assert _sql(pg_empty_url, "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'") == [(0,)]
    _at_revision(pg_empty_url, "0001")
    old = pytest.raises(StoreError, Store, pg_empty_url, readonly=readonly)
    message = str(old.value)
    assert f"offlab store upgrade --store {parse(pg_empty_url).display}" in message and "\n" not in message
    assert _sql(pg_empty_url, "SELECT version_num FROM alembic_version") == [("0001",)]
    upgraded = subprocess.run([sys.executable, "-c", "from offlab.entry import main; main()", "store",
                               "upgrade", "--store", pg_empty_url], capture_output=True, text=True,
                              timeout=HANG_S, cwd=tmp_path)
    assert upgraded.returncode == 0, upgraded.stderr
    assert f"0001 → {head_revision()}" in upgraded.stdout and "lab-secret" not in upgraded.stdout
    Store(pg_empty_url, readonly=readonly).close()


def test_a_sqlite_store_still_upgrades_itself(tmp_path):
    path = tmp_path / "old.sqlite"
    engine = create_engine(f"sqlite:///{path}")
    from alembic import command
    from offlab.store.schema import _config
    with engine.begin() as connection:
        command.upgrade(_config(connection), "0001")
    engine.dispose()
    Store(path).close()
    assert _sql(path, "SELECT version_num FROM alembic_version") == [(head_revision(),)]
