"""Integration tests build real namespaces: they need root, iperf3 and ethtool. They
share fixed names (rigs, journals, /var/lib/offlab) and measure: one at a time, never
in pytest-xdist workers (`make test` runs them in a pytest of their own; tests/conftest.py
refuses `-n` on them). The SSH servers of every rig start once per session
(sshpool.py) and stop when it ends."""

import os
import shutil
from pathlib import Path

import pytest

from .sshpool import SSHD, pool, stop_pool


def pytest_collection_modifyitems(items):
    missing = [tool for tool in ("iperf3", "ethtool", "ip") if shutil.which(tool) is None]
    reason = ("needs root" if os.geteuid() != 0 else
              f"needs {', '.join(missing)} (make setup)" if missing else None)
    for item in items:
        if "integration" in str(item.fspath):
            item.add_marker(pytest.mark.integration)
            if reason:
                item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(scope="session")
def ssh_servers():
    """The session's SSH servers (sshpool.py), shared by every rig: sshlab.ssh_lab(),
    routerlab.router_lab() and sshfleet.ssh_fleet() wire them, and so may a test."""
    if not Path(SSHD).exists():
        pytest.skip("openssh-server is not installed (make setup)")
    return pool()


def pytest_sessionfinish(session, exitstatus):
    stop_pool()  # whichever rig started the servers, they end with the session
