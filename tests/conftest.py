"""Fixtures shared by the store's tests: one real PostgreSQL server per test session
(tests/pgserver.py), a fresh database per test, and `store_at`, a store location on
either engine so the same test runs against SQLite and PostgreSQL.

`make test` runs the unit tests in two pytest-xdist workers at once (the integration
tests run alone afterwards, tests/integration/conftest.py). A CLI test that gets as
far as `offlab run` takes the machine's run lock, so each worker is its own lab
instance with its own runtime directory (OFFLAB_RUNTIME_DIR, runscope.py): two
workers never refuse each other as "another offlab run"."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

_WORKER = os.environ.get("PYTEST_XDIST_WORKER")
_WORKER_RUNTIME = Path(f"/run/offlab-tests-{_WORKER}-{os.getpid()}") if _WORKER else None
if _WORKER_RUNTIME is not None:
    # Set before any test module imports offlab (runscope reads it at import), and
    # inherited by every `offlab` the tests start.
    os.environ["OFFLAB_RUNTIME_DIR"] = str(_WORKER_RUNTIME)

# After the runtime directory is set: pgserver imports offlab.runscope, which reads it.
from pgserver import PgServer, reap_orphans, server_bindir  # noqa: E402
from offlab.runscope import pid_alive  # noqa: E402


def pytest_configure(config):
    """`-n` over tests/integration is refused before any worker starts: those tests
    share fixed names and measure, so they must run one at a time."""
    if _WORKER or not config.pluginmanager.hasplugin("xdist") or not config.getoption("numprocesses"):
        return
    integration = (Path(__file__).parent / "integration").resolve()
    if integration in {Path(p).resolve() for p in config.getoption("ignore") or []}:
        return
    for arg in config.args:
        path = Path(arg.split("::")[0]).resolve()
        if path == integration or integration in path.parents or path in integration.parents:
            raise pytest.UsageError("tests/integration runs in one process: drop -n, or pass "
                                    "--ignore=tests/integration to the parallel run (make test runs both)")


def _reap_dead_workers_runtime() -> None:
    """Runtime directories of workers killed before their session finished."""
    for stale in Path("/run").glob("offlab-tests-*-*"):
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
