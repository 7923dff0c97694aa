"""Fixtures shared by the store's tests: one real PostgreSQL server per test session
(tests/pgserver.py), a fresh database per test, and `store_at`, a store location on
either engine so the same test runs against SQLite and PostgreSQL.

`make test` runs the unit tests in two pytest-xdist workers at once, then the
integration tests in two lanes at once (tests/integration/conftest.py). A CLI test that
gets as far as `offlab run` takes the machine's run lock, so each worker and each lane
is its own lab instance with its own runtime directory (OFFLAB_RUNTIME_DIR,
runscope.py): two of them never refuse each other as "another offlab run"."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

_WORKER = os.environ.get("PYTEST_XDIST_WORKER")
_LANE = _WORKER or os.environ.get("OFFLAB_TEST_LANE")
"""An xdist worker, or an integration lane (tests/integration/conftest.py) that runs
beside another pytest: either is a lab instance of its own."""
# Short: a campaign's pairs nest their own runtime directories in it, and ssh's control
# socket under those must fit a unix socket's 108 bytes (the old /run/offlab-tests-…
# name left a campaign's sockets 109 bytes long).
_WORKER_RUNTIME = Path(f"/run/ofl-t-{_LANE}-{os.getpid()}") if _LANE else None
if _WORKER_RUNTIME is not None:
    # Set before any test module imports offlab (runscope reads it at import), and
    # inherited by every `offlab` the tests start.
    os.environ["OFFLAB_RUNTIME_DIR"] = str(_WORKER_RUNTIME)

# After the runtime directory is set: pgserver imports offlab.runscope, which reads it.
from pgserver import PgServer, reap_orphans, server_bindir  # noqa: E402
from offlab.runscope import pid_alive  # noqa: E402


def pytest_configure(config):
    """`-n` over tests/integration is refused before any worker starts: its tests run in
    lanes of their own processes (tests/integration/conftest.py), never spread over
    workers."""
    if _WORKER or not config.pluginmanager.hasplugin("xdist") or not config.getoption("numprocesses"):
        return
    integration = (Path(__file__).parent / "integration").resolve()
    if integration in {Path(p).resolve() for p in config.getoption("ignore") or []}:
        return
    for arg in config.args:
        path = Path(arg.split("::")[0]).resolve()
        if path == integration or integration in path.parents or path in integration.parents:
            raise pytest.UsageError("tests/integration runs in one process per lane: drop -n (make test runs "
                                    "its lanes: -m rigs and -m lab at once, then -m alone), or pass "
                                    "--ignore=tests/integration to the parallel run")


def _reap_dead_workers_runtime() -> None:
    """Runtime directories of workers killed before their session finished."""
    for stale in Path("/run").glob("ofl-t-*-*"):
        pid = stale.name.rsplit("-", 1)[1]
        if pid.isdigit() and not pid_alive(int(pid)):
            shutil.rmtree(stale, ignore_errors=True)


def pytest_sessionstart(session):
    """What a killed session left behind (PostgreSQL servers, worker runtime
    directories) goes before this one starts: nothing accumulates across killed runs."""
    if os.geteuid() != 0 or _WORKER:
        return
    _reap_dead_workers_runtime()
    bindir = server_bindir()
    if bindir is not None:
        reap_orphans(bindir)


def pytest_sessionfinish(session, exitstatus):
    if _WORKER_RUNTIME is not None:
        shutil.rmtree(_WORKER_RUNTIME, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_server():
    if os.geteuid() != 0:
        pytest.skip("needs root to start PostgreSQL as the postgres user")
    bindir = server_bindir()
    if bindir is None:
        pytest.fail("PostgreSQL's server is not installed (/usr/lib/postgresql/*/bin): run make setup")
    server = PgServer(bindir).start()
    yield server
    server.stop()


@pytest.fixture()
def pg_empty_url(pg_server) -> str:
    """A URL of a new, empty database owned by the password-authenticated offlab role."""
    return pg_server.url(pg_server.create_database())


@pytest.fixture()
def pg_url(pg_empty_url) -> str:
    """A new database with offlab's tables, created as its owner does it (`offlab store
    upgrade`): on PostgreSQL a writer never creates or changes the schema itself."""
    from offlab.run.store_health import upgrade_store
    from offlab.store.location import parse
    upgrade_store(parse(pg_empty_url))
    return pg_empty_url


@pytest.fixture(params=["sqlite", "postgresql"])
def store_at(request, tmp_path):
    """Where a new store goes: a SQLite file or a PostgreSQL database with offlab's
    tables and no run."""
    if request.param == "sqlite":
        return tmp_path / "deep" / "dir" / "results.sqlite"
    return request.getfixturevalue("pg_url")
