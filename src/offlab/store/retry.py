"""A write transaction that survives a dropped connection.

A run holds its pooled connection idle through each 10–60 s measurement; a server
restart, a failover or an idle timeout in between cuts it. The engine pre-pings a
connection before lending it (storage/location.py), which covers a connection that died
while idle; what is left is a connection cut during the transaction itself, or a server
that is still coming back. Those — and only those, never a constraint or a syntax error
— are retried, a bounded number of times with a growing pause: the transaction rolled
back with its connection, so running it again from the start writes it once.
"""

from __future__ import annotations

import time
from typing import Callable, TypeVar

from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError, OperationalError

T = TypeVar("T")

PAUSES_S = (0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 15.0, 15.0)
"""Pauses between attempts: about a minute in all, what a restart or failover takes."""
_CONNECTION_SQLSTATES = ("08", "57P01", "57P02", "57P03")
"""SQLSTATE class 08 (connection exception) and the server's admin/crash shutdown and
'cannot connect now' (starting up)."""


def is_connection_lost(failure: BaseException) -> bool:
    """Whether a failure is the connection's, not the statement's."""
    if not isinstance(failure, OperationalError):
        return False
    if failure.connection_invalidated:
        return True
    sqlstate = getattr(failure.orig, "sqlstate", None)
    if sqlstate is None:  # the client's own: connection refused, reset, closed
        return type(failure.orig).__name__ == "OperationalError"
    return sqlstate.startswith(_CONNECTION_SQLSTATES)


def in_transaction(engine: Engine, work: Callable[[Connection], T],
                   done_already: Callable[[Connection], bool] | None = None,
                   sleep: Callable[[float], None] = time.sleep) -> T | None:
    """Run `work` in one transaction, again after a lost connection (up to PAUSES_S).
    `done_already`: asked first on each retry, for work whose commit may have reached the
    server before the connection dropped (then it is not done twice, and None is returned)."""
    for attempt, pause in enumerate((*PAUSES_S, None)):
        try:
            with engine.begin() as conn:
                if attempt and done_already is not None and done_already(conn):
                    return None
                return work(conn)
        except DBAPIError as failure:
            if pause is None or not is_connection_lost(failure):
                raise
        sleep(pause)
    raise AssertionError("unreachable")
