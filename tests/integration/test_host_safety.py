"""Each hazard of pointing offlab at a server people use, on two OpenSSH "servers" in
namespaces (sshrig.py), each test failing without its guard: the SSH session or the
default route on the test interface refused; an upper device's MTU put back; a failing
undo not stopping the others; a second controller refused while a run holds the
servers; SIGHUP restoring like SIGTERM. (`kill -9` of the controller and the servers'
own watchdog restoring them: test_real_hosts.py.)"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from offlab.hosts import changes, hostsfile
from offlab.hosts.base import HostError
from offlab.hosts.journal import JOURNAL_DIR, Journal, read_identity
from offlab.hosts.server import SERVER_DIR
from offlab.hosts.session import RemoteSession
from offlab.hosts.ssh import AUDIT_LOG, SshHost
from offlab.hosts.offloads import GRO, TSO, Interface, OffloadControl
from offlab.records import OffloadProfile

from .runs import OFFLAB, start_run
from .sshrig import PAIR

PLAN = """
name = "safety"
runs = {runs}
duration = 0.5
warmup = 0.5
scenarios = ["bare"]
mtus = [{mtu}]
traffic = ["tcp"]
sequences = ["all-on"]
"""


@pytest.fixture()
def lab(ssh_rigs):
    with ssh_rigs.use(PAIR) as rig:
        yield rig


@pytest.fixture()
def clean(lab):
    """After each test: no journal, no hold, nothing of offlab running on the servers."""
    yield lab
    assert not list(JOURNAL_DIR.glob("*.json")) and not Path(SERVER_DIR).exists()
    deadline = time.monotonic() + 5  # a released server's watchdog sees it within a second
    while _offlab_processes(lab) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _offlab_processes(lab)


def _offlab_processes(lab) -> list[str]:
    """iperf3 or a watchdog still running in a server's namespace."""
    found = []
    for server in lab.servers.values():
        for pid in subprocess.run(["ip", "netns", "pids", server.namespace], capture_output=True,
                                  text=True).stdout.split():
            try:
                line = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if "iperf3" in line or "offlab-watchdog" in line:
                found.append(line)
    return found


def _mtu(lab, name: str, device: str) -> int:
    return int(lab.servers[name].run(["cat", f"/sys/class/net/{device}/mtu"]).stdout)


def _run(lab, tmp_path, hosts: Path, *extra: str, mtu: int = 1400) -> subprocess.CompletedProcess:
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN.format(runs=1, mtu=mtu))
    return subprocess.run([*OFFLAB, "run", "--hosts", str(hosts), "--plan", str(plan), "--out",
                           str(tmp_path / "r"), "--no-progress", "--yes", *extra],
                          capture_output=True, text=True, timeout=180)


def _hosts(lab, tmp_path, text: str) -> Path:
    path = tmp_path / "hosts.toml"
    path.write_text(text)
    return path


def test_the_ssh_session_on_the_test_interface_is_refused(clean, tmp_path):
    lab = clean
    # The sender's "test interface" is the one its SSH session arrives by.
    hosts = _hosts(lab, tmp_path, lab.hosts_toml()
                   .replace('interface = "ofl-ta0"\naddress = "10.241.0.1"', 'interface = "mgmt0"\naddress = "10.240.1.2"')
                   .replace('peer = "10.241.0.1"', 'peer = "10.240.1.2"'))
    done = _run(lab, tmp_path, hosts)
    line = done.stderr.strip().splitlines()[-1]
    assert done.returncode == 1 and "offlab's own SSH session" in line and "--allow-shared-interface" in line
    assert _mtu(lab, "a", "mgmt0") == 1500 and not (tmp_path / "r").exists()
    doctor = subprocess.run([*OFFLAB, "doctor", "--hosts", str(hosts)], capture_output=True, text=True, timeout=120)
    assert doctor.returncode == 1 and "offlab's own SSH session" in doctor.stdout


def test_without_a_terminal_or_yes_nothing_changes_and_the_servers_are_named(clean, tmp_path):
    lab = clean
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN.format(runs=1, mtu=1400))
    done = subprocess.run([*OFFLAB, "run", "--hosts", str(lab.hosts_file), "--plan", str(plan), "--out",
                           str(tmp_path / "r"), "--no-progress"], capture_output=True, text=True, timeout=180,
                          stdin=subprocess.DEVNULL)
    line = done.stderr.strip().splitlines()[-1]
    assert done.returncode == 1 and "pass --yes" in line, done.stderr
    assert "sender hosta, interface ofl-ta0: MTU set to 1400" in line and "receiver hostb" in line
    assert _mtu(lab, "a", "ofl-ta0") == 1500 and not (tmp_path / "r").exists()


def test_the_default_route_on_the_test_interface_is_refused(clean, tmp_path):
    lab = clean
    server = lab.servers["a"]
    server.ip("route", "add", "default", "via", "10.241.0.2", "dev", "ofl-ta0")
    try:
        done = _run(lab, tmp_path, lab.hosts_file)
    finally:
        server.ip("route", "del", "default")
    line = done.stderr.strip().splitlines()[-1]
    assert done.returncode == 1 and "the default route via 10.241.0.2 leaves by ofl-ta0" in line
    assert _mtu(lab, "a", "ofl-ta0") == 1500


def test_an_upper_device_is_refused_and_with_the_override_its_mtu_is_put_back(clean, tmp_path):
    lab = clean
    server = lab.servers["a"]
    server.ip("link", "add", "link", "ofl-ta0", "name", "mv7", "type", "macvlan")
    try:
        refused = _run(lab, tmp_path, lab.hosts_file)
        assert refused.returncode == 1 and "mv7 (macvlan) sits on ofl-ta0" in refused.stderr.splitlines()[-1]
        # Allowed: the run lowers ofl-ta0 to 1400, the kernel lowers mv7 with it; both go back.
        audited = AUDIT_LOG.read_text().count("\n") if AUDIT_LOG.exists() else 0
        done = _run(lab, tmp_path, lab.hosts_file, "--allow-shared-interface")
        assert done.returncode == 0, done.stderr
        new = [json.loads(line) for line in AUDIT_LOG.read_text().splitlines()[audited:]]
        assert any(e["host"] == "tx" and "ip link set dev ofl-ta0 mtu 1400" in e["command"] for e in new)
        assert "mv7 (macvlan) sits on ofl-ta0" in done.stderr  # said as a warning
        assert _mtu(lab, "a", "ofl-ta0") == 1500 and _mtu(lab, "a", "mv7") == 1500
    finally:
        server.ip("link", "del", "mv7")


def test_a_failing_undo_does_not_stop_the_others(clean):
    lab = clean
    hosts = hostsfile.load(lab.hosts_file)
    spec = hosts.hosts["sender"]
    host = SshHost("tx", spec, hosts.ssh_config)
    try:
        journal = Journal(host, spec, hosts.ssh_config, read_identity(host, spec.interface))
        host.journal = journal
        host.set_link(spec.interface, mtu=1300)
        # Its undo fails (the loopback device cannot be deleted), though it is still as
        # "set": the restore's drift check lets it through to its undo.
        journal.add(changes.device("lo"))
        host.ip("link", "set", "dev", spec.interface, "mtu", "1300")
        with pytest.raises(HostError) as caught:
            journal.restore()
        assert "device lo" in str(caught.value) and "offlab restore" in str(caught.value)
        assert _mtu(lab, "a", "ofl-ta0") == 1500  # undone after the failure
    finally:
        host.journal = None
        journal.discard()
        host.close()


def test_a_second_controller_is_refused_and_sighup_restores(clean, tmp_path):
    lab = clean
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN.format(runs=20, mtu=4000))
    db = tmp_path / "r" / "offlab.sqlite"
    run = start_run(["--hosts", str(lab.hosts_file), "--plan", str(plan), "--out", str(db.parent), "--yes"], db,
                    wait_for=1)  # mid-run: a second stored sample would only cost another case
    try:
        assert run.poll() is None, run.communicate()[1]
        # Another controller (its own journal directory, as on another machine).
        second = RemoteSession(hostsfile.load(lab.hosts_file), journal_dir=tmp_path / "other")
        with pytest.raises(HostError, match="in use by another offlab run"):
            second.start()
        assert _mtu(lab, "a", "ofl-ta0") == 4000  # the first run's state, untouched
        run.send_signal(signal.SIGHUP)  # the terminal closed
        run.wait(timeout=60)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    assert run.returncode == 128 + signal.SIGHUP, run.stderr.read()
    assert _mtu(lab, "a", "ofl-ta0") == 1500 and _mtu(lab, "b", "ofl-tb0") == 1500


def test_an_as_configured_baseline_keeps_what_the_operator_turned_off(clean):
    """`baseline = "as-configured"`: the all-on profile leaves GRO off where the operator
    had it off; the default baseline turns it on. The kernel's read-back is the oracle."""
    server = clean.servers["a"]
    control = OffloadControl()
    was = "on" if control.read(Interface("tx", server, "ofl-ta0"))[GRO].on else "off"  # put back after
    server.run(["ethtool", "-K", "ofl-ta0", "generic-receive-offload", "off"])
    try:
        all_on = OffloadProfile("all-on", "both")
        control.apply(all_on, [Interface("tx", server, "ofl-ta0", {}, {GRO: False, TSO: True})])
        assert control.read(Interface("tx", server, "ofl-ta0"))[GRO].on is False
        control.apply(all_on, [Interface("tx", server, "ofl-ta0")])
        assert control.read(Interface("tx", server, "ofl-ta0"))[GRO].on is True
    finally:
        server.run(["ethtool", "-K", "ofl-ta0", "generic-receive-offload", was])
