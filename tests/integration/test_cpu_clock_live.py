"""Issue-37 behaviour on real namespaces and the kernel's own clocks: a role's tasks are
timed by the scheduler in nanoseconds, and a sample whose role's tasks used more CPU than
the role's one core had over the window is refused, with the reason kept in the sample."""

import sys
import time

import pytest

from offlab.measure import measure
from offlab.records import Sample
from offlab.report.model import cpu_timed
from offlab.topology import build

pytestmark = pytest.mark.alone  # a burner's CPU against its core's window: a neighbour takes that core


BURN_S = 0.6
"""CPU seconds the sender's stand-in burns, by its own CPU clock, then it sleeps."""
SPIN = ("import time\n"
        f"while time.process_time() < {BURN_S}:\n"
        "    pass\n"
        "time.sleep(3600)\n")
WINDOW_S = 0.25
"""The window the sample claims for it: less than its tasks were on a CPU, which one
core cannot give — a pinning that did not hold, or a window clock that is wrong."""


def _sample(counters: dict) -> Sample:
    return Sample(case_key="bare/x", repetition=1, started_at=0.0, duration_s=1.0, throughput_bps=1e9,
                  sender_bps=1e9, retransmits=0, lost_packets=None, total_packets=None, cpu=(),
                  roles={"sender": 0, "receiver": 1}, counters=counters)


def test_a_role_whose_tasks_used_more_than_its_core_had_in_the_window_is_refused():
    # The process burns a fixed amount of CPU by its own clock (however loaded the
    # machine is: no share of a core is assumed), timed by the scheduler's clock read
    # through the sender's namespace, against a window shorter than that.
    with build("bare", 1500) as topo:
        burner = topo.sender.host.spawn([sys.executable, "-c", SPIN])
        try:
            apps = {"sender_app": ((burner.pid, topo.sender.host),)}
            before = measure._task_ns(apps)
            deadline = time.monotonic() + 120.0  # a guard, not a measurement
            after = before
            while after["sender_app"] - before["sender_app"] < 0.9 * BURN_S * 1e9:
                assert time.monotonic() < deadline, "the burner never got its CPU"
                time.sleep(0.1)
                after = measure._task_ns(apps)
        finally:
            topo.sender.host.stop(burner)
        counters = measure._task_counters(topo, before, after, WINDOW_S)
    used = counters["sender_app_ns_pct"]
    assert used == counters["role_tasks_pct.sender"] >= 0.9 * BURN_S / WINDOW_S * 100
    assert counters["cpu_refused.sender"] == used
    assert not cpu_timed(_sample(counters))  # left out of every CPU figure
    # the same sample with its tasks within their core keeps its CPU figures
    within = {k: v for k, v in counters.items() if not k.startswith("cpu_refused.")}
    assert cpu_timed(_sample(within))
