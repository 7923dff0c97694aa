"""offlab on "real hosts" over SSH: two OpenSSH servers in namespaces (sshrig.py), the
plan run through `offlab run --hosts`, and the faults a user's servers meet — offlab
killed, a host's sshd gone, a wrong hosts file — each leaving both hosts as they were."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from offlab.hosts import hostsfile
from offlab.hosts.journal import JOURNAL_DIR
from offlab.hosts.server import SERVER_DIR
from offlab.hosts.ssh import SshHost
from offlab.hosts.offloads import parse_features
from offlab.run.plan import parse

from .runs import OFFLAB, samples, start_run
from .sshrig import PAIR, WATCHDOG_S

SUDO = "/usr/bin/sudo"

PLAN = """
name = "ssh"
runs = {runs}
duration = 1.0
warmup = 1.0
scenarios = ["bare", "vxlan"]
mtus = [{mtu}]
traffic = ["tcp"]
sequences = ["tx"]
"""


@pytest.fixture()
def lab(ssh_rigs):
    """test_a_host_lost_mid_run kills a server's sshd: the reset after it starts it again."""
    with ssh_rigs.use(PAIR) as rig:
        yield rig


def _state(lab, role: str) -> tuple[int, bool]:
    """(MTU, TSO on) of a host's test interface, read over ssh."""
    spec = hostsfile.load(lab.hosts_file).hosts[role]
    host = SshHost(role, spec, str(lab.ssh_config))
    try:
        mtu = int(host.read_file(f"/sys/class/net/{spec.interface}/mtu"))
        features = parse_features(host.run(["ethtool", "-k", spec.interface]).stdout).features
        return mtu, features["tcp-segmentation-offload"].on
    finally:
        host.close()


def test_the_plan_over_ssh_has_the_local_cases_keeps_drops_windows_and_stacks_and_restores(lab, tmp_path):
    """One run carries both checks of a whole run over SSH (each `offlab run` here costs
    its start, its report and the servers' restore, so the two share one): the same
    cases as a local run, the path's drop counters, each host's CPU window and stack,
    and both hosts as before. `tx-all-off` turns TSO, TX checksumming and GSO off
    together on the sender: every feature the `tx` sequence touches is changed over
    SSH and must come back."""
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN.format(runs=1, mtu=1500).replace('sequences = ["tx"]', 'sequences = ["tx-all-off"]'))
    before = {role: _state(lab, role) for role in ("sender", "receiver")}
    done = subprocess.run([*OFFLAB, "run", "--hosts", str(lab.hosts_file), "--plan", str(plan),
                           "--out", str(tmp_path / "r"), "--no-progress", "--yes"], capture_output=True, text=True,
                          timeout=240)
    assert done.returncode == 0, done.stderr
    with sqlite3.connect(tmp_path / "r" / "offlab.sqlite") as conn:
        keys = {k for (k,) in conn.execute('SELECT key FROM "case"')}
        hosts = conn.execute("SELECT settings FROM run").fetchone()[0]
        cpu_hosts = {h for (h,) in conn.execute("SELECT DISTINCT host FROM sample_cpu")}
        nic = conn.execute("SELECT COUNT(*) FROM sample_counter WHERE name LIKE 'rx:nic.ofl-tb0.%'").fetchone()[0]
        names = {n for (n,) in conn.execute("SELECT DISTINCT name FROM sample_counter")}
        stacked = {h for (h,) in conn.execute("SELECT DISTINCT host FROM run_stack WHERE key = 'tool.iperf3'")}
    assert keys == {c.key for c in parse(plan.read_text(), "p").cases}  # the same cases as a local run
    assert any("vxlan/" in k for k in keys) and any("tso+txcsum+gso-off" in k for k in keys)
    assert "ssh: sender hosta" in hosts and cpu_hosts == {"tx", "rx"} and nic > 0
    assert {"cpu_window_s.tx", "cpu_window_s.rx", "tcp_segments", "tcp_retrans_pct"} <= names
    assert stacked == {"tx", "rx"}
    report = next((tmp_path / "r").glob("*/report.md")).read_text()
    assert "Hosts reached over SSH" in report and "nic driver: veth" in report
    # The stand-ins' test interfaces are veth: the report keeps the virtual-device caveats.
    assert "is a software device, not a NIC" in report
    for title in ("## Drops and retransmits on the path", "## CPU windows", "## Stack configuration per host",
                  "## The seeds' claims, answered"):
        assert title in report
    assert {role: _state(lab, role) for role in ("sender", "receiver")} == before
    assert not list(JOURNAL_DIR.glob("*.json"))


def test_kill_9_the_servers_watchdog_restores_them_and_restore_finds_them_back(lab, tmp_path):
    """Nobody's help: after `kill -9` of the controller each server's watchdog restores it
    (MTU, iperf3 killed by process group, the hold released) once the heartbeat is older
    than watchdog_s; `offlab restore` then learns that from the server (the watchdog's
    mark) and only clears the controller's journals."""
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN.format(runs=20, mtu=4000))
    before = {role: _state(lab, role) for role in ("sender", "receiver")}
    db = tmp_path / "r" / "offlab.sqlite"
    # One stored sample is mid-run enough: each further case over SSH costs seconds.
    run = start_run(["--hosts", str(lab.hosts_file), "--plan", str(plan), "--out", str(db.parent), "--yes"], db,
                    wait_for=1)
    assert run.poll() is None, run.communicate()[1]
    assert _state(lab, "sender")[0] == 4000 and _iperf3_on_servers(lab)  # changed while it ran
    run.send_signal(signal.SIGKILL)
    run.wait(timeout=10)
    assert len(list(JOURNAL_DIR.glob("*.json"))) == 2
    deadline = time.monotonic() + WATCHDOG_S + 30
    while Path(SERVER_DIR).exists() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not Path(SERVER_DIR).exists(), "the servers' watchdog did not restore them"
    assert {role: _state(lab, role) for role in ("sender", "receiver")} == before
    assert not _iperf3_on_servers(lab)
    restored = subprocess.run([*OFFLAB, "restore"], capture_output=True, text=True, timeout=120)
    assert restored.returncode == 0, restored.stderr
    assert "restored sender: already restored by the server's own watchdog" in restored.stdout, restored.stdout
    assert not list(JOURNAL_DIR.glob("*.json")) and samples(db) >= 1


def _iperf3_on_servers(lab) -> bool:
    for server in lab.servers.values():
        for pid in subprocess.run(["ip", "netns", "pids", server.namespace], capture_output=True,
                                  text=True).stdout.split():
            try:
                if Path(f"/proc/{pid}/comm").read_text().strip() == "iperf3":
                    return True
            except OSError:
                continue
    return False


def test_a_host_lost_mid_run_fails_the_run_in_one_line_and_the_other_is_restored(lab, tmp_path):
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN.format(runs=20, mtu=4000))
    db = tmp_path / "r" / "offlab.sqlite"
    run = start_run(["--hosts", str(lab.hosts_file), "--plan", str(plan), "--out", str(db.parent), "--yes"], db,
                    wait_for=1)
    kept = samples(db)
    lab.kill_sshd("b")
    _, stderr = run.communicate(timeout=120)
    assert run.returncode == 1
    last = stderr.strip().splitlines()[-1]
    assert last.startswith("offlab: ") and "(hostb)" in last and "offlab restore" in last, stderr
    assert samples(db) >= kept
    assert _state(lab, "sender") [0] == 1500  # the reachable host was put back
    journals = list(JOURNAL_DIR.glob("*.json"))
    assert len(journals) == 1 and '"ssh": "hostb"' in journals[0].read_text()  # kept for `offlab restore`
    lab.pool.server("b")  # the host is back (its sshd again): `offlab restore` puts it as it was
    restored = subprocess.run([*OFFLAB, "restore"], capture_output=True, text=True, timeout=120)
    assert restored.returncode == 0, restored.stdout + restored.stderr
    assert _state(lab, "receiver") == (1500, True) and not list(JOURNAL_DIR.glob("*.json"))


@pytest.mark.parametrize("edit, text", [
    (lambda t: t.replace('interface = "ofl-ta0"', 'interfce = "ofl-ta0"'), "[sender]: unknown key 'interfce'"),
    # An address on the lab's own management link where nobody answers: no traffic leaves it.
    (lambda t: t.replace('ssh = "hostb"', 'ssh = "root@10.240.2.9"'), "receiver (root@10.240.2.9)"),
])
def test_a_wrong_hosts_file_is_one_line_and_changes_nothing(lab, tmp_path, edit, text):
    bad = tmp_path / "hosts.toml"
    bad.write_text(edit(lab.hosts_file.read_text()))
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN.format(runs=1, mtu=4000))
    done = subprocess.run([*OFFLAB, "run", "--hosts", str(bad), "--plan", str(plan), "--out", str(tmp_path / "r"),
                           "--no-progress", "--yes"], capture_output=True, text=True, timeout=120)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1 and text in lines[-1], done.stderr
    assert _state(lab, "sender") == (1500, True) and _state(lab, "receiver") == (1500, True)
    assert not list(JOURNAL_DIR.glob("*.json"))


@contextmanager
def _sudo_hidden(lab, server: str):
    """sudo out of sight on one SSH server while the block runs: an empty device bound
    over it (which `command -v` does not take for a program) in the mount namespace of
    that server's sshd (sshrig.py gives each one its own), so only that server lacks it."""
    enter = ["nsenter", "-t", str(lab.pool.sshd[server].pid), "-m"]
    subprocess.run([*enter, "mount", "--bind", "/dev/null", SUDO], check=True)
    try:
        yield
    finally:
        subprocess.run([*enter, "umount", SUDO], check=True)


def test_a_missing_tool_is_one_line_naming_the_host_and_changes_nothing(lab, tmp_path):
    """sudo = true on a host without sudo: the run refuses before it touches anything."""
    bad = tmp_path / "hosts.toml"
    bad.write_text(lab.hosts_file.read_text().replace('app_core = 1\n', 'app_core = 1\nsudo = true\n', 1))
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN.format(runs=1, mtu=4000))
    with _sudo_hidden(lab, "b"):
        done = subprocess.run([*OFFLAB, "run", "--hosts", str(bad), "--plan", str(plan), "--out",
                               str(tmp_path / "r"), "--no-progress", "--yes"], capture_output=True, text=True,
                              timeout=120)
    assert done.returncode == 1, done.stderr
    assert done.stderr.strip().splitlines() == [
        "offlab: receiver (hostb): sudo not found there; install it on hostb (apt-get install sudo), "
        f"or check with offlab doctor --hosts {bad}"]
    assert _state(lab, "receiver") == (1500, True) and not (tmp_path / "r").exists()
    doctor = subprocess.run([*OFFLAB, "doctor", "--hosts", str(lab.hosts_file)], capture_output=True,
                            text=True, timeout=120)
    assert doctor.returncode == 0, doctor.stdout
    assert "sender (hosta)" in doctor.stdout and "peer over the test interface" in doctor.stdout


def test_pinning_irqs_of_a_device_without_them_is_refused_and_restored(lab, tmp_path):
    pinned = tmp_path / "hosts.toml"
    pinned.write_text(lab.hosts_file.read_text().replace('app_core = 1\n', 'app_core = 1\nirq_core = 0\npin_irqs = true\n'))
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN.format(runs=1, mtu=4000))
    done = subprocess.run([*OFFLAB, "run", "--hosts", str(pinned), "--plan", str(plan), "--out", str(tmp_path / "r"),
                           "--no-progress", "--yes"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "has no MSI IRQs to pin" in done.stderr.strip().splitlines()[-1]
    assert _state(lab, "sender") == (1500, True) and _state(lab, "receiver") == (1500, True)
    assert not list(JOURNAL_DIR.glob("*.json"))


def test_udpload_is_copied_to_the_servers_by_hash_and_runs_there(lab, tmp_path):
    """offlab-udpload over --hosts: this machine's build copied into each server's files
    cache (hosts/files.py; the rig's servers share this machine's files), run there by
    the run's ssh connections — GSO sends 44 datagrams a call, the sink counts them."""
    from offlab.hosts import files
    from offlab.measure.udpload import find_binary
    plan = tmp_path / "plan.toml"
    plan.write_text('name = "udp-ssh"\nruns = 1\nduration = 0.5\nwarmup = 0.5\nscenarios = ["bare"]\n'
                    'mtus = [1500]\nsequences = ["all-on"]\ntraffic = ["udp1472-plain", "udp1472-gso"]\n'
                    'udp_rate = "200M"\n')
    before = {role: _state(lab, role) for role in ("sender", "receiver")}
    done = subprocess.run([*OFFLAB, "run", "--hosts", str(lab.hosts_file), "--plan", str(plan),
                           "--out", str(tmp_path / "r"), "--no-progress", "--yes"], capture_output=True, text=True,
                          timeout=240)
    assert done.returncode == 0, done.stderr
    with sqlite3.connect(tmp_path / "r" / "offlab.sqlite") as conn:
        per_send = dict(conn.execute("SELECT s.case_key, v.value FROM sample_counter v JOIN sample s "
                                     "ON s.id = v.sample_id WHERE v.name = 'udpload_segments_per_send'"))
        received = conn.execute("SELECT MIN(total_packets - lost_packets) FROM sample").fetchone()[0]
    assert sorted(per_send.values()) == [1, 44], per_send
    assert received > 0
    assert (Path(files.CACHE_DIR) / files.sha256(find_binary()) / "offlab-udpload").is_file()
    assert {role: _state(lab, role) for role in ("sender", "receiver")} == before
    assert not list(JOURNAL_DIR.glob("*.json"))
