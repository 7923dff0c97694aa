"""Integration tests build real namespaces: they need root, iperf3 and ethtool. They
share fixed names (rigs, journals, /var/lib/offlab) and measure: one at a time, never
in pytest-xdist workers (`make test` runs them in a pytest of their own; tests/conftest.py
refuses `-n` on them). The SSH servers of every rig start once per session
(sshrig.py) and stop when it ends."""

import os
import shutil
from pathlib import Path

import pytest

from .sshrig import SSHD, Rigs


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
def ssh_rigs():
    """The session's SSH servers and the rig wired on them (sshrig.py): a module's rig
    fixture is `with ssh_rigs.use(SHAPE) as rig: yield rig`, which resets the rig after
    each test and checks it is as wired."""
    if not Path(SSHD).exists():
        pytest.skip("openssh-server is not installed (make setup)")
    rigs = Rigs()
    yield rigs
    rigs.close()
