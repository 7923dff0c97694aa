"""Issue #30 over SSH ("real hosts": OpenSSH servers in namespaces, sshlab.py): every drop
counter on the path, each host's CPU window by its own clock and each host's stack are
read through the host interface, as locally."""

from __future__ import annotations

import sqlite3
import subprocess

from offlab import counters, cpu, stackconfig
from offlab.hosts import hostsfile
from offlab.hosts.ssh import SshHost

from .runs import OFFLAB
from .test_real_hosts import lab  # noqa: F401 - the two sshd "servers"

PLAN = """
name = "ssh-path"
runs = 1
duration = 1.0
warmup = 1.0
scenarios = ["bare"]
mtus = [1500]
traffic = ["tcp"]
sequences = ["tx-all-off"]
"""


def test_counters_clock_and_stack_are_read_over_ssh(lab):  # noqa: F811
    specs = hostsfile.load(lab.hosts_file).hosts
    hosts = {"tx": SshHost("tx", specs["sender"], str(lab.ssh_config)),
             "rx": SshHost("rx", specs["receiver"], str(lab.ssh_config))}
    try:
        interface = specs["receiver"].interface
        found = counters.snapshot_many(hosts, {"rx": [interface]})
        # each SSH host is its own machine: softnet_stat read on both, qdiscs per device
        assert "tx:softnet.cpu0.dropped" in found and "rx:softnet.cpu0.squeezed" in found
        assert any(k.startswith(f"rx:qdisc.{interface}.") and k.endswith(".drops") for k in found)
        assert any(k.startswith(f"rx:nic.{interface}.") for k in found)
        snap = cpu.snapshot(hosts["rx"])
        assert snap.uptime_s is not None and snap.ticks
        stack = stackconfig.read(hosts["rx"], [interface])
        assert stack["tool.iperf3"].startswith("iperf 3") and f"dev.{interface}.gso_max_size" in stack
    finally:
        for host in hosts.values():
            host.close()


def test_a_run_over_ssh_keeps_drops_windows_and_stacks(lab, tmp_path):  # noqa: F811
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN)
    done = subprocess.run([*OFFLAB, "run", "--hosts", str(lab.hosts_file), "--plan", str(plan),
                           "--out", str(tmp_path / "r"), "--no-progress", "--yes"], capture_output=True, text=True,
                          timeout=240)
    assert done.returncode == 0, done.stderr
    with sqlite3.connect(tmp_path / "r" / "offlab.sqlite") as conn:
        names = {n for (n,) in conn.execute("SELECT DISTINCT name FROM sample_counter")}
        stacked = {h for (h,) in conn.execute("SELECT DISTINCT host FROM run_stack WHERE key = 'tool.iperf3'")}
    assert {"cpu_window_s.tx", "cpu_window_s.rx", "tcp_segments", "tcp_retrans_pct"} <= names
    assert stacked == {"tx", "rx"}
    report = next((tmp_path / "r").glob("*/report.md")).read_text()
    for title in ("## Drops and retransmits on the path", "## CPU windows", "## Stack configuration per host",
                  "## The seeds' claims, answered"):
        assert title in report
