"""`offlab run` with real QEMU guests: a plan's `qemu` scenario boots two guests per
topology, measures between them, records what each guest's driver negotiated and where
the host's CPU went (vCPU threads, QEMU's other threads), and reports it — with, under
TCG, the note that these are no performance figures and no advice drawn from them.
Nothing is left behind: no QEMU, no namespace."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from offlab.store.store import Store
from offlab.runscope import RUNTIME_ROOT
from offlab.topology import our_namespaces
from offlab.vm import GuestImageMissing, find_image

from .runs import OFFLAB

try:
    find_image()
except GuestImageMissing as missing:
    pytest.skip(str(missing), allow_module_level=True)

PLAN = """
name = "guests-test"
runs = 1
duration = 1.5
warmup = 0.5
scenarios = ["qemu"]
guest_paths = ["vm2vm"]
backends = ["tap", "vhost-user"]
fwd_modes = ["gro"]
virtio = ["all-on", "host-tso-off"]
mtus = [1500]
traffic = ["tcp"]
sequences = ["all-on"]

[[profiles]]
name = "tso-off"
side = "tx"
off = ["tcp-segmentation-offload"]
"""


def qemu_running() -> list[str]:
    """This lab instance's guests still running: their files are under its runtime
    directory (the other lane's and the SSH servers' guests are not)."""
    found = subprocess.run(["pgrep", "-f", f"qemu-system-x86_64 .*-name ofl-.*{RUNTIME_ROOT}/"],
                           capture_output=True, text=True)
    return found.stdout.split()


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("guests")
    (out / "plan.toml").write_text(PLAN)
    done = subprocess.run([*OFFLAB, "run", "--plan", str(out / "plan.toml"), "--out", str(out), "--no-progress"],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    return out


def load(out: Path):
    with Store(next(out.glob("*.sqlite")), readonly=True) as store:
        return store.load_run(store.latest_run_id())


def test_every_sample_records_the_guests_negotiation_and_accelerator(run):
    results = load(run)
    samples = [s for case in results.cases for s in results.samples[case.key]]
    assert len(samples) >= 4 * 2  # 4 topologies × ≥2 profiles
    for case in results.cases:
        wanted_tso = case.topology["virtio"] == "all-on"
        for sample in results.samples[case.key]:
            assert sample.throughput_bps > 0
            qemu = sample.datapath["qemu"]
            assert qemu[f"backend.{case.topology['backend']}"].on and qemu["accel.tcg"].on != qemu["accel.kvm"].on
            for role in ("a", "b"):
                assert sample.datapath[f"virtio:{role}"]["host_tso4"].on is wanted_tso
                assert sample.datapath[f"virtio:{role}"]["version_1"].on
            # The host's CPU by QEMU thread class, and the guests' own cores, in the window.
            assert sample.counters["qemu-a:vcpu_usr_pct"] > 0
            assert "qemu-b:other_sys_pct" in sample.counters
            assert "a:cpu0_idle_pct" in sample.counters and "b:cpu0_soft_pct" in sample.counters
            assert {c.host for c in sample.cpu} == {""}  # shares are this machine's cores only


def test_offlab_fwd_as_the_guests_backend_merges_their_mtu_frames(run):
    """vhost-user in gro mode: a guest without host_tso4 sends MTU frames, which the
    engine merges for the other guest (which took guest_tso4), as seen by offlab-fwd."""
    results = load(run)
    for case in results.cases:
        if case.topology["backend"] != "vhost-user":
            continue
        sample = results.samples[case.key][0]
        seen = sample.datapath["vhost-user:a@ab"]
        assert seen["host_tso4"].on is (case.topology["virtio"] == "all-on")
        assert sample.datapath["fwd@ab"]["mode.gro"].on
        if case.topology["virtio"] == "host-tso-off":
            assert sample.counters.get("fwd@ab:a>b:rx_super_packets", 0) == 0
            assert sample.counters["fwd@ab:a>b:merged_super_packets"] > 0


def test_the_guest_drivers_offloads_follow_the_device(run):
    """host_tso4=off: the device refuses the guest's super-packets, so the guest's driver
    has no TSO to offer (ethtool -k in the guest, as recorded)."""
    results = load(run)
    for case in results.cases:
        sample = results.samples[case.key][0]
        tso = sample.offloads["tx:eth0"]["tcp-segmentation-offload"]
        if case.topology["virtio"] == "host-tso-off":
            assert not tso.on
        elif case.profile.name == "all-on":
            assert tso.on


def test_the_report_says_tcg_rows_are_no_figures_and_advises_nothing(run):
    report = next(run.glob("*/report.md")).read_text()
    assert "QEMU guests" in report and "qemu-vm2vm-tap-host-tso-off" in report
    emulated = "TCG" in report
    if emulated:
        assert "not performance figures" in report
        assert "emulated CPUs" in report  # the reason each step is set apart
        assert "Keep " not in report and "turn " not in report.lower().replace("turning", "")


def test_nothing_is_left_behind(run):
    assert qemu_running() == []
    assert [n for n in our_namespaces()] == []
    assert not any(RUNTIME_ROOT.glob("run-*/vm-*"))
