"""Issue-37 behaviour on real namespaces and the kernel's own clocks: a role's tasks are
timed by the scheduler in nanoseconds, and a sample whose role's tasks used more CPU than
the role's one core had is refused, with the reason kept in the sample."""

import sys
import time

from offlab import measure
from offlab.records import Sample
from offlab.report.model import cpu_timed
from offlab.topology import build

SPIN = ("import hashlib, threading\n"
        "data = b'x' * (1 << 22)\n"
        "def spin():\n"
        "    while True:\n"
        "        hashlib.sha256(data).digest()\n"  # releases the GIL: the threads run in parallel
        "for _ in range(4):\n"
        "    threading.Thread(target=spin, daemon=True).start()\n"
        "threading.Event().wait()\n")


def _sample(counters: dict) -> Sample:
    return Sample(case_key="bare/x", repetition=1, started_at=0.0, duration_s=1.0, throughput_bps=1e9,
                  sender_bps=1e9, retransmits=0, lost_packets=None, total_packets=None, cpu=(),
                  roles={"sender": 0, "receiver": 1}, counters=counters)


def test_a_sender_whose_tasks_ran_on_both_cores_is_refused():
    # The "sender" here is four hashing threads left free on both cores, as a process
    # whose pinning did not hold: its scheduler clock reads more than its one core had.
    # At nice -20 they outweigh a shared machine's other work (nice 0 and above) about
    # 88:1 on each core, so they do get more than one core, however busy it is.
    with build("bare", 1500) as topo:
        spinner = topo.sender.host.spawn(["nice", "-n", "-20", sys.executable, "-c", SPIN])
        try:
            time.sleep(0.5)
            apps = {"sender_app": ((spinner.pid, topo.sender.host),)}
            before, opened = measure._task_ns(apps), time.monotonic()
            time.sleep(2.0)
            after, closed = measure._task_ns(apps), time.monotonic()
        finally:
            topo.sender.host.stop(spinner)
        counters = measure._task_counters(topo, before, after, closed - opened)
    used = counters["sender_app_ns_pct"]
    assert used == counters["role_tasks_pct.sender"]
    assert used > 102.0  # four threads on two cores: more than one core's time
    assert counters["cpu_refused.sender"] == used
    assert not cpu_timed(_sample(counters))
    # the same sample with its tasks within their core keeps its CPU figures
    within = {k: v for k, v in counters.items() if not k.startswith("cpu_refused.")}
    assert cpu_timed(_sample(within))
