"""Caps that cap and drift that is real (issue 38, points 4 and 8), through `offlab run
--hosts` on the two OpenSSH "servers" of sshrig.py as a user would run it: UDP is capped
as the total a case offers (iperf3's -b is per stream), `--dry-run` applies the cap as
the run does, the dry run and the confirmation name the host-wide socket buffer limits a
UDP run raises on each server, and an offload somebody changes on a server mid-run is
left as they set it by the run's restore, while a CPU mask the kernel reads back in
another form than it was written is put back, not taken for drift. (A neighbour entry
offlab replaces, put back: test_router_hosts.py, where offlab-fwd as R needs one.)"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from offlab.hosts import hostsfile
from offlab.hosts.journal import JOURNAL_DIR, Journal, read_identity
from offlab.hosts.server import SERVER_DIR
from offlab.hosts.ssh import AUDIT_LOG, SshHost

from .runs import OFFLAB, stderr_after
from .sshrig import PAIR

PLAN = """
name = "caps"
runs = 1
duration = 1.5
warmup = 0.5
scenarios = ["bare"]
mtus = [1400]
traffic = ["udp1472"]
sequences = ["all-on"]
udp_rate = "{rate}"
streams = {streams}
"""


@pytest.fixture()
def lab(ssh_rigs):
    with ssh_rigs.use(PAIR) as rig:
        yield rig


def _plan(tmp_path: Path, rate: str, streams: int) -> Path:
    path = tmp_path / f"udp-{rate}-x{streams}.toml"
    path.write_text(PLAN.format(rate=rate, streams=streams))
    return path


def _offlab_run(lab, plan: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([*OFFLAB, "run", "--hosts", str(lab.hosts_file), "--plan", str(plan), "--out", str(out),
                           "--no-progress", *extra], capture_output=True, text=True, timeout=240,
                          stdin=subprocess.DEVNULL)


def _audited_commands() -> int:
    """Commands the controller has sent to any server so far (its audit log)."""
    return len(AUDIT_LOG.read_text().splitlines()) if AUDIT_LOG.exists() else 0


def _mtu(lab, name: str, device: str) -> int:
    return int(lab.servers[name].run(["cat", f"/sys/class/net/{device}/mtu"]).stdout)


def test_udp_above_the_cap_in_total_is_refused_by_the_dry_run_and_the_run_before_any_server_is_reached(lab, tmp_path):
    """400 Mbit/s per stream is under the default 1 Gbit/s cap, but four streams offer
    1.6 Gbit/s (iperf3 -P 4 -b 400M paces each stream): the run is refused in one line
    naming the total, before any command reaches a server (the audit log gains no
    line, no store is made, no hold is taken) — and the dry run refuses it the same way,
    as it refuses 2 Gbit/s on one stream (a dry run that passes is a run that starts)."""
    sent_before = _audited_commands()
    for rate, streams, total in (("400M", 4, "1.6 Gbit/s in total"), ("2G", 1, "2 Gbit/s")):
        out = tmp_path / f"dry-{rate}"
        dry = _offlab_run(lab, _plan(tmp_path, rate, streams), out, "--dry-run")
        line = (dry.stderr.strip().splitlines() or [""])[-1]
        assert dry.returncode == 1, f"--dry-run accepted UDP at {rate} x {streams} streams: {dry.stdout[-400:]}"
        assert total in line and "above the cap of 1 Gbit/s" in line and "udp_max_rate" in line, line

    out = tmp_path / "run"
    done = _offlab_run(lab, _plan(tmp_path, "400M", 4), out, "--yes")
    line = (done.stderr.strip().splitlines() or [""])[-1]
    assert done.returncode == 1, f"the run started UDP at 4 x 400 Mbit/s under a 1 Gbit/s cap: {done.stderr[-600:]}"
    assert "1.6 Gbit/s in total (0.4 Gbit/s x 4 streams)" in line and "per stream" in line, line
    assert _audited_commands() == sent_before, "commands reached the servers before the refusal"
    assert not out.exists() and not Path(SERVER_DIR).exists()
    assert _mtu(lab, "a", "ofl-ta0") == 1500 and _mtu(lab, "b", "ofl-tb0") == 1500


def test_the_dry_run_and_the_confirmation_name_the_host_wide_socket_buffer_limits(lab, tmp_path):
    """A UDP run raises net.core.rmem_max and wmem_max on each server where lower (for
    every socket there, not only offlab's): `--dry-run` names each with its value now,
    read on the server, and the question a run asks before it changes anything names
    them per server. Neither changes them."""
    plan = _plan(tmp_path, "100M", 1)
    now = {key: lab.servers["a"].run(["cat", f"/proc/sys/net/core/{key}"]).stdout.strip()
           for key in ("rmem_max", "wmem_max")}
    dry = _offlab_run(lab, plan, tmp_path / "dry", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    for key, value in now.items():
        assert f"host-wide net.core.{key} {value} -> 4194304" in dry.stdout \
            or f"host-wide net.core.{key} already {value}" in dry.stdout, \
            f"the dry run does not name net.core.{key} ({value} on hosta): {dry.stdout[-800:]}"

    asked = _offlab_run(lab, plan, tmp_path / "asked")  # no terminal, no --yes: the question, refused
    line = (asked.stderr.strip().splitlines() or [""])[-1]
    assert asked.returncode == 1 and "pass --yes" in line, asked.stderr
    segments = line.split(" | ")  # one per server
    for role in ("sender hosta", "receiver hostb"):
        said = next((s for s in segments if role in s), "")
        assert "host-wide net.core.rmem_max and net.core.wmem_max raised to 4194304" in said, \
            f"the confirmation does not name the host-wide limits for {role}: {line}"
    after = {key: lab.servers["a"].run(["cat", f"/proc/sys/net/core/{key}"]).stdout.strip() for key in now}
    assert after == now and not Path(SERVER_DIR).exists()
    assert json.loads(lab.servers["a"].ip("-j", "link", "show", "dev", "ofl-ta0").stdout)[0]["mtu"] == 1500


TCP_PLAN = """
name = "drift"
runs = 1
duration = 30.0
warmup = 1.0
scenarios = ["bare"]
mtus = [1400]
traffic = ["tcp"]
sequences = ["all-on"]
"""


def _features(lab, name: str, device: str) -> dict[str, tuple[str, bool]]:
    """`ethtool -k` on a server: feature -> (on/off, fixed)."""
    found = {}
    for line in lab.servers[name].run(["ethtool", "-k", device]).stdout.splitlines()[1:]:
        feature, _, value = line.strip().partition(": ")
        if value:
            found[feature] = (value.split()[0], "[fixed]" in value)
    return found


def _put_back(lab, name: str, device: str, features: dict[str, tuple[str, bool]]) -> None:
    """The features as they were (twice: one feature may take another with it)."""
    for _ in range(2):
        now = _features(lab, name, device)
        pairs = [part for feature, (value, fixed) in features.items()
                 if not fixed and now.get(feature, (value,))[0] != value for part in (feature, value)]
        if pairs:
            lab.servers[name].run(["ethtool", "-K", device, *pairs], check=False)


def _sender_client_runs(lab) -> bool:
    """iperf3's client runs on server a (the case's profile is in place by then)."""
    pids = subprocess.run(["ip", "netns", "pids", lab.servers["a"].namespace], capture_output=True,
                          text=True).stdout.split()
    for pid in pids:
        try:
            words = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(word.endswith(b"iperf3") for word in words) and b"-c" in words:
            return True
    return False


def test_an_offload_changed_by_someone_else_mid_run_is_left_alone_by_the_runs_restore(lab, tmp_path):
    """The run has set the sender's features (the all-on profile) and measures; an
    operator turns GSO off on that interface. On Ctrl-C the run's restore reads the
    features first: they are no longer what the run set (journaled as read back after
    its change), so it leaves them — GSO stays off on the server — and says so, naming
    the feature, instead of writing its recorded originals over the operator's change."""
    before = _features(lab, "a", "ofl-ta0")
    assert before["generic-segmentation-offload"] == ("on", False)
    plan = tmp_path / "drift.toml"
    plan.write_text(TCP_PLAN)
    run = subprocess.Popen([*OFFLAB, "run", "--hosts", str(lab.hosts_file), "--plan", str(plan), "--out",
                            str(tmp_path / "r"), "--yes", "--no-progress"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not _sender_client_runs(lab):
            assert run.poll() is None and time.monotonic() < deadline, stderr_after(run)[-800:]
            time.sleep(0.05)
        lab.servers["a"].run(["ethtool", "-K", "ofl-ta0", "generic-segmentation-offload", "off"])  # the operator
        run.send_signal(signal.SIGINT)
        out, err = run.communicate(timeout=120)
        after = _features(lab, "a", "ofl-ta0")
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
        _put_back(lab, "a", "ofl-ta0", before)
    assert after["generic-segmentation-offload"][0] == "off", \
        "the run's restore turned GSO back on over the operator's change (no drift check)"
    said = [line for line in err.splitlines() if "left the features of ofl-ta0 alone" in line]
    assert said and "generic-segmentation-offload off now" in said[0], err
    assert _mtu(lab, "a", "ofl-ta0") == 1500 and _mtu(lab, "b", "ofl-tb0") == 1500
    assert not list(JOURNAL_DIR.glob("*.json")) and not Path(SERVER_DIR).exists()


RPS_CPUS = "/sys/class/net/ofl-ta0/queues/rx-0/rps_cpus"


def test_a_cpu_mask_read_back_in_the_kernels_own_form_is_put_back_not_taken_for_drift(lab):
    """A restore puts a value back only while it still reads as the value offlab set
    (journaled as written). The kernel prints a CPU mask in its own form, not as
    written: here (two CPUs) "00000001" — the zero-padded groups a machine with more
    CPUs prints — reads back "1" (on 64 CPUs "4" reads back "00000000,00000004"). The
    restore compares masks as numbers, so it puts the old mask back; comparing the text,
    it would report drift and leave RPS on."""
    hosts = hostsfile.load(lab.hosts_file)
    spec = hosts.hosts["sender"]
    server = lab.servers["a"]
    before = server.read_file(RPS_CPUS).strip()
    host = SshHost("tx", spec, hosts.ssh_config)
    journal = Journal(host, spec, hosts.ssh_config, read_identity(host, spec.interface))
    host.journal = journal
    try:
        host.write_file(RPS_CPUS, "00000001\n")
        assert server.read_file(RPS_CPUS).strip() == "1", "the kernel printed the mask as written"
        said = journal.restore()
        after = server.read_file(RPS_CPUS).strip()
    finally:
        host.journal = None
        journal.discard()
        host.close()
        server.run(["sh", "-c", f"echo {before} > {RPS_CPUS}"])  # whatever the restore left
    assert after == before, f"RPS left at {after} on ofl-ta0: {said}"
    assert not journal.drift, f"the restore took the kernel's form of offlab's own mask for drift: {said}"
    assert f"file {RPS_CPUS} {before}" in " ".join(said), said
    assert not list(JOURNAL_DIR.glob("*.json")) and not Path(SERVER_DIR).exists()
