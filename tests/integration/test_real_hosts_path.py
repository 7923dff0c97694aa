"""Issue #30 over SSH ("real hosts": OpenSSH servers in namespaces, sshrig.py): every drop
counter on the path, each host's CPU window by its own clock and each host's stack are
read through the host interface, as locally. That a whole run over SSH stores them and
reports them is checked on test_real_hosts.py's run of the plan (one run for both)."""

from __future__ import annotations

from offlab.measure import counters, cpu, stackconfig
from offlab.hosts import hostsfile
from offlab.hosts.ssh import SshHost

from .test_real_hosts import lab  # noqa: F401 - the two sshd "servers"


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
