"""Fixtures shared by the store's tests: one real PostgreSQL server per test session
(tests/pgserver.py), a fresh database per test, and `store_at`, a store location on
either engine so the same test runs against SQLite and PostgreSQL."""

from __future__ import annotations

import os

import pytest

from pgserver import PgServer, server_bindir


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
def pg_url(pg_server) -> str:
    """A URL of a new, empty database owned by the password-authenticated offlab role."""
    return pg_server.url(pg_server.create_database())


@pytest.fixture(params=["sqlite", "postgresql"])
def store_at(request, tmp_path):
    """Where a new store goes: a SQLite file or an empty PostgreSQL database."""
    if request.param == "sqlite":
        return tmp_path / "deep" / "dir" / "results.sqlite"
    return request.getfixturevalue("pg_url")
