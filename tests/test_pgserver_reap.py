"""A test session killed with its PostgreSQL server running leaves the server behind
(nothing in the dead process can stop it); the next session's start reaps it."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path


from pgserver import reap_orphans, server_bindir
from hangguard import HANG_S

_START_AND_HANG = """
import sys, time
sys.path.insert(0, {tests!r})
from pathlib import Path
from pgserver import PgServer
server = PgServer(Path({bindir!r})).start()
print(server.root, flush=True)
time.sleep(600)
"""


def _postmaster_pid(root: Path) -> int:
    return int((root / "data" / "postmaster.pid").read_text().split()[0])


def _alive(pid: int) -> bool:
    """Running, not a zombie waiting for init to reap it."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_a_killed_sessions_server_is_stopped_and_removed_and_a_live_ones_is_kept(pg_server):
    bindir = server_bindir()
    code = _START_AND_HANG.format(tests=str(Path(__file__).parent), bindir=str(bindir))
    session = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        root = Path(session.stdout.readline().strip())
    finally:
        session.send_signal(signal.SIGKILL)
        session.wait(timeout=HANG_S)
    assert root.name.startswith("offlab-pg-"), root
    postmaster = _postmaster_pid(root)
    assert _alive(postmaster), "the killed session's server should still be running before the reap"

    reaped = reap_orphans(bindir)

    assert root in reaped
    assert not root.exists()
    assert not _alive(postmaster)
    # this session's own server (its owner, this process, is alive) is untouched
    assert pg_server.root.exists() and pg_server.root not in reaped
    with pg_server.admin() as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)
