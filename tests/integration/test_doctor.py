"""`offlab doctor` on this machine: every check passes and nothing is left behind."""

from offlab.run.doctor import run_checks
from offlab.topology import our_namespaces


def test_all_checks_pass_here():
    checks = run_checks()
    failed = [(c.name, c.detail, c.fix) for c in checks if not c.ok]
    assert failed == []
    assert {"root", "iperf3", "ethtool", "kernel: veth", "kernel: vxlan", "kernel: tun"} <= {c.name for c in checks}
    assert our_namespaces() == []
