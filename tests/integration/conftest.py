"""Integration tests build real namespaces: they need root, iperf3 and ethtool.

`make test` runs them in two lanes at once, each a pytest of its own and a lab instance
of its own (OFFLAB_TEST_LANE gives it its runtime directory, tests/conftest.py), then
the measuring ones alone. A lane is a marker this file gives each test:

* **rigs**: every test that reaches servers over SSH (it asks for `ssh_rigs`). The SSH
  servers start once per session (sshrig.py) and stop when it ends, and their wiring,
  journals and holds are one machine's: these tests follow one another in one lane.
* **lab**: the tests of runs on this machine (namespaces named by pid, their own
  runtime directory, QEMU guests, PostgreSQL): the other lane, beside the rigs.
* **alone** (`pytestmark = pytest.mark.alone` in the module): tests whose assertions
  read a measured figure's relation to the machine (an A/A comparison, the CPU clock,
  pacing), run after the two lanes with nothing beside them.

Much of the lanes' time is waiting (a watchdog's delay, an SSH round trip, a guest's
boot), which is why two of them fit on two cores."""

import os
import shutil
from pathlib import Path

import pytest

from .sshrig import SSHD, Rigs


@pytest.hookimpl(tryfirst=True)  # the lanes' markers before `-m` selects by them
def pytest_collection_modifyitems(items):
    missing = [tool for tool in ("iperf3", "ethtool", "ip") if shutil.which(tool) is None]
    reason = ("needs root" if os.geteuid() != 0 else
              f"needs {', '.join(missing)} (make setup)" if missing else None)
    for item in items:
        if "integration" in str(item.fspath):
            item.add_marker(pytest.mark.integration)
            item.add_marker(lane(item))
            if reason:
                item.add_marker(pytest.mark.skip(reason=reason))


def lane(item: pytest.Item) -> pytest.MarkDecorator:
    """The module docstring's lane of a test, as the marker `-m` selects it by."""
    if item.get_closest_marker("alone") is not None:
        return pytest.mark.alone
    return pytest.mark.rigs if "ssh_rigs" in item.fixturenames else pytest.mark.lab


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
