"""The `qemu` scenario's view: per guest topology, what each guest negotiated with its
virtio-net device (read inside the guest), what the backend saw, and where the CPU went
(the guests' vCPU threads, QEMU's other threads, vhost, offlab-fwd), beside the
throughput. On emulated CPUs (TCG) the section says the rates are the emulator's and
the report's recommendations leave these rows out (report/validity.py).

Pure: rows in, tables out.
"""

from __future__ import annotations

from statistics import median
from typing import Any, Sequence

from ..model import ProfileRow
from ..cells import Table
from ..validity import emulated
from ..section import Section
from .userspace import mean_ci
from ...vm.profile import VIRTIO_PROFILES
from ...studies.guests.plan import SCENARIO

FEATURES_SHOWN = ("csum", "guest_csum", "host_tso4", "host_tso6", "guest_tso4", "guest_tso6",
                  "host_ufo", "guest_ufo", "mrg_rxbuf")
INTRO = (
    "QEMU guests on virtio-net: guest A sends to guest B (vm2vm) or to its node's stack "
    "(vm2host), through the backend named, on one node or on two nodes joined by VXLAN. "
    "Each topology booted its guests once with the virtio profile named (QEMU fixes a "
    "device's features at start); the features are those the guest's driver negotiated, "
    "read from /sys/bus/virtio inside it. CPU columns are medians over the runs, in % of "
    "one core over the measured window."
)
TCG_NOTE = (
    "These guests ran on QEMU's TCG (KVM was not usable here): every guest instruction "
    "is translated in software, so the rates are the emulator's, not the path's. They "
    "show that each setup works and what it negotiates; they are not performance figures "
    "and no recommendation is drawn from them."
)


def guest_sections(rows: Sequence[ProfileRow]) -> list[tuple[str, str, tuple[tuple[str, Table], ...]]]:
    mine = [r for r in rows if r.case.scenario == SCENARIO]
    if not mine:
        return []
    intro = INTRO + (" " + TCG_NOTE if any(emulated(r) for r in mine) else "")
    return [("QEMU guests (seed 000 VM rows, seed 004 vhost backend)", intro,
             (("Throughput and CPU by thread class", throughput_table(mine)),
              ("Negotiated virtio-net features (guest A · guest B)", features_table(mine))))]


def throughput_table(rows: Sequence[ProfileRow]) -> Table:
    header = ("Topology", "Accel", "Profile", "Traffic", "n", "Throughput (Gbit/s) ± 95% CI",
              "vCPU A", "vCPU B", "QEMU other", "vhost", "offlab-fwd", "Super-packets from A")
    body = []
    for row in rows:
        body.append((
            row.case.scenario_label, _accel(row), row.profile.name, row.case.traffic.label,
            str(row.n), mean_ci(row),
            _median_pct(row, ("qemu-a:vcpu",)), _median_pct(row, ("qemu-b:vcpu",)),
            _median_pct(row, ("qemu-a:other", "qemu-b:other")),
            _median_pct(row, ("qemu-a:vhost", "qemu-b:vhost")),
            _median_pct(row, ("fwd@",)),
            _super_packets(row),
        ))
    return Table(header, tuple(body), align_left=4)


def features_table(rows: Sequence[ProfileRow]) -> Table:
    header = ("Topology", "Virtio profile (QEMU options)", *FEATURES_SHOWN)
    seen: dict[str, ProfileRow] = {}
    for row in rows:
        seen.setdefault(row.case.scenario_label, row)
    body = []
    for label, row in seen.items():
        profile = str(row.case.topology.get("virtio", "all-on"))
        options = ", ".join(f"{k}={'on' if v else 'off'}" for k, v in VIRTIO_PROFILES.get(profile, {}).items())
        body.append((label, f"{profile} ({options or 'defaults'})",
                     *(_feature(row, name) for name in FEATURES_SHOWN)))
    return Table(header, tuple(body), align_left=2)


def _accel(row: ProfileRow) -> str:
    entry = row.datapath_state.get("qemu", {})
    return next((name.split(".", 1)[1] for name, state in entry.items()
                 if name.startswith("accel.") and state.on), "?")


def _feature(row: ProfileRow, name: str) -> str:
    marks = []
    for role in ("a", "b"):
        state = row.datapath_state.get(f"virtio:{role}", {}).get(name)
        if state is not None:
            marks.append("on" if state.on else "off")
    return " · ".join(marks) or "—"


def _median_pct(row: ProfileRow, owners: tuple[str, ...]) -> str:
    """Median over the runs of the usr+sys (% of one core) of the thread groups whose
    counter names start with one of `owners` ("qemu-a:vcpu", "fwd@")."""
    per_run = []
    for sample in row.samples:
        found = [value for key, value in sample.counters.items()
                 if key.endswith(("usr_pct", "sys_pct")) and key.startswith(owners)
                 and not key.startswith(("sender_app", "receiver_app"))]
        if found:
            per_run.append(sum(found))
    return f"{median(per_run):.0f}%" if per_run else "—"


def _super_packets(row: ProfileRow) -> str:
    """Of the frames guest A's forwarder received from A, the share that were
    super-packets (vhost-user paths: "fwd@ab:a>b:…" or "fwd@a:a>b:…")."""
    def summed(counter: str) -> float:
        return sum(v for s in row.samples for k, v in s.counters.items()
                   if k.startswith(("fwd@ab:a>b:", "fwd@a:a>b:")) and k.endswith(counter))
    frames = summed(":rx_packets")
    return f"{100.0 * summed(':rx_super_packets') / frames:.0f}%" if frames else "—"


def sections(rows: Sequence[Any], report: Any) -> list[Section]:
    """This study's views in the run report, from the report's profile rows."""
    return [Section(*parts) for parts in guest_sections(rows)]


def charts(rows: Sequence[Any]) -> dict[str, bytes]:
    """slug → PNG of this study's views that have a chart (none)."""
    return {}
