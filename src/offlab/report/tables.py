"""The report's tables as plain data (header + rows of strings), in the seeds' shape.
Markdown and HTML render the same tables, so they always agree."""

from __future__ import annotations

from ..measure.cpu import SPLIT_ERROR_TARGET, TASKS_TOTAL, TICK_HZ, busy_split_error, refusals
from ..analysis.stats import RelativeChange, Summary, summary
from .cells import Table, decimals_for, mean_std
from .model import ALL_CORES, CaseGroup, ProfileRow, cpu_timed
from .phrases import format_change
from .states import display_name
from .drops import drops_cell, drops_where_none_belong, retrans_cell
from .validity import overloaded
from .wire_view import packet_cells, receive_path

RESULTS_NOTE = (
    "Throughput is the receiver's goodput; ± is the standard deviation over runs, the 95% CI "
    "is Student's t. One sign convention everywhere (tables, summary, chart, advice, claims): "
    "an effect is that of having the offloads on — “All on vs this” is the group's all-on "
    "profile relative to the row's, with its 95% CI in brackets (Fieller), * = p < 0.05 for "
    "that comparison alone (advice also needs the correction over all the report's tests, "
    "see Recommendations); +20% "
    "throughput or −20% CPU per Gbps means the offloads this row turns off help. CPU % is "
    "summed over cores (100 = one core). Retransmits are the sender's, with their share of "
    "the segments it sent (RFC 6349's TCP efficiency is 100% minus it); path drops are "
    "every drop counter of every host summed per sample (see “Drops and retransmits on "
    "the path”).")

CPU_TABLE_CLASSES = ("usr", "sys", "irq", "soft", "idle")
"""Always shown (seed-002's rows); other classes appear only when they are not ~0."""
_OPTIONAL_CLASSES = ("nice", "iowait", "steal")


def mean_std_cv(stat: Summary, scale: float = 1.0) -> str:
    """"19.75 ± 0.41 (2.1%)"."""
    mean = stat.mean * scale
    d = decimals_for(mean)
    if stat.std is None:
        return f"{mean:.{d}f} (1 run)"
    cv = f"{stat.cv:.1%}" if stat.cv is not None else "–"
    return f"{mean:.{d}f} ± {stat.std * scale:.{d}f} ({cv})"


def ci_range(stat: Summary | None, scale: float = 1.0) -> str:
    """The 95 % interval, never below zero (stats.Summary.interval)."""
    if stat is None or stat.interval is None:
        return "–"
    d = decimals_for(stat.mean * scale)
    low, high = stat.interval
    return f"[{low * scale:.{d}f}, {high * scale:.{d}f}]"


def versus(change: RelativeChange | None) -> str:
    """A relative change with its CI (in the case tables: all on relative to the row, the
    effect of having the offloads on); "*" marks significance (Welch p < 0.05)."""
    if change is None:
        return "—"
    text = format_change(change)
    return f"{text} *" if change.significant else f"{text} (n.s.)"


def _per_gbps_header(group: CaseGroup) -> str:
    """The headline CPU column: of every core, or of the cores the wire's work does not
    share (headline.WIRE_FREE_ROLES)."""
    return "CPU % per Gbps" if group.cpu_basis == ALL_CORES else f"CPU % per Gbps, {group.cpu_basis}"


def throughput_table(group: CaseGroup, imprecise: frozenset[str] = frozenset()) -> Table:
    """`imprecise`: keys of cases that missed their precision target (--ci-target),
    labelled in the profile cell; they advise nothing (precision.py)."""
    unit, scale = group.rate_unit
    udp = group.traffic.protocol == "udp"
    header = (
        "Profile", "Offloads off", "n", f"Throughput ({unit}) mean ± std (CV%)", "95% CI",
        "All on vs this", f"Sent ({unit})" if udp else "Retransmits (% of segments)",
        "Loss %" if udp else "CPU % (all cores)", _per_gbps_header(group), "CPU/Gbps: all on vs this",
        "Path drops / sample", "Packets/s sender · receiver", "Bytes/packet sender · receiver",
        "Receive path",
    )
    rows = []
    for row in group.rows:
        flagged = overloaded(row)
        lossy = drops_where_none_belong(row) is not None
        rows.append((
            row.profile.name + (" (baseline)" if row is group.baseline else "")
            + (" ⚠ overloaded" if flagged else "") + (" ⚠ drops on the path" if lossy else "")
            + (" ⚠ precision target missed" if row.case.key in imprecise else ""),
            _off_list(row),
            str(row.n),
            mean_std_cv(row.throughput, scale),
            ci_range(row.throughput, scale),
            "— (overloaded)" if flagged else versus(row.vs_baseline_throughput),
            mean_std(row.sender, scale) if udp else retrans_cell(row),
            mean_std(row.loss_percent) if udp else mean_std(row.cpu_total, decimals=1),
            "—" if flagged else mean_std(row.cpu_per_gbps),
            "—" if flagged else versus(row.vs_baseline_cpu),
            drops_cell(row),
            *packet_cells(row),
            receive_path(row),
        ))
    return Table(header, tuple(rows), align_left=2)


def _off_list(row: ProfileRow) -> str:
    """The ethtool features turned off, and the userspace datapath the case ran."""
    names = ", ".join(display_name(f) for f, on in row.profile.features.items() if not on) or "none"
    if row.case.datapath is None:
        return names
    return f"{names} · datapath {row.case.datapath.label}"


def cpu_table(group: CaseGroup) -> Table:
    """Rows "CPU <role> %<class>", one column per profile, cells "mean±std"."""
    header = ("", *(row.profile.name for row in group.rows))
    roles = list(dict.fromkeys(role.role for row in group.rows for role in row.roles))
    classes = CPU_TABLE_CLASSES + tuple(
        cls for cls in _OPTIONAL_CLASSES
        if any(r.classes[cls].mean >= 0.05 for row in group.rows for r in row.roles)
    )
    body = []
    for role_name in roles:
        for cls in classes:
            cells = []
            for row in group.rows:
                role = next((r for r in row.roles if r.role == role_name), None)
                cells.append(_class_cell(row, role, cls) if role else "–")
            body.append((f"CPU {role_name} %{cls}", *cells))
    for role_name in roles:
        tasks = [_tasks(row, role_name) for row in group.rows]
        if any(tasks):  # runs from before the task clock have none
            body.append((f"CPU {role_name} tasks % (ns clock)", *(mean_std(t, decimals=1) for t in tasks)))
    body.append(("CPU total % (all cores)",
                 *(mean_std(row.cpu_total, decimals=1) for row in group.rows)))
    basis = group.cpu_basis
    if basis == ALL_CORES:
        body.append(("CPU % per Gbps", *(mean_std(row.cpu_per_gbps) for row in group.rows)))
    else:  # the headline, then every core's, which has the wire's work in it
        body.append((f"CPU % per Gbps, {basis} (headline)", *(mean_std(row.cpu_per_gbps) for row in group.rows)))
        body.append(("CPU % per Gbps, all cores (with the wire's bridging and segmenting)",
                     *(mean_std(_all_cores_per_gbps(row)) for row in group.rows)))
    per_gbps = [_tasks_per_gbps(row) for row in group.rows]
    if any(per_gbps):
        body.append(("CPU % per Gbps, role tasks (ns clock)", *(mean_std(p) for p in per_gbps)))
    return Table(header, tuple(body), align_left=1)


def _class_cell(row: ProfileRow, role, cls: str) -> str:
    """mean±std; for the tick-sampled softirq and irq, the sampling error beside it
    ("±e tick", one standard error over one window) when it is 2 % of the figure or more."""
    cell = mean_std(role.classes[cls], decimals=1)
    hz = next((s.counters[TICK_HZ] for s in row.samples if TICK_HZ in s.counters), None)
    share = role.classes[cls].mean
    if cls not in ("soft", "irq") or hz is None or share <= 0:
        return cell
    window = summary([s.counters.get("cpu_window_s", s.duration_s) for s in row.samples]).mean
    error = busy_split_error(share, role.busy, window, int(hz))
    return cell + (f" (±{error:.1f} tick)" if error >= SPLIT_ERROR_TARGET * share else "")


def _tasks(row: ProfileRow, role: str) -> Summary | None:
    """The role's pinned tasks (its application, its NAPI thread) by the scheduler's
    nanosecond clock, over the CPU-timed samples."""
    values = [s.counters[f"role_tasks_pct.{role}"] for s in row.samples if f"role_tasks_pct.{role}" in s.counters]
    return summary(values) if values else None


def _all_cores_per_gbps(row: ProfileRow) -> Summary | None:
    """Busy CPU of every core per Gbit/s over the CPU-timed samples."""
    values = [s.cpu_percent_per_gbps for s in row.samples if s.cpu_percent_per_gbps is not None and cpu_timed(s)]
    return summary(values) if values else None


def _tasks_per_gbps(row: ProfileRow) -> Summary | None:
    """Every role's pinned tasks (applications, NAPI and softirq threads; ns clock) per
    Gbit/s: the run's own CPU, which a foreign load on the same cores does not inflate
    (softirq work that ran in a foreign task's context is missing from it: no IRQ-time
    accounting here)."""
    values = [s.counters[TASKS_TOTAL] / (s.throughput_bps / 1e9) for s in row.samples
              if TASKS_TOTAL in s.counters and s.throughput_bps > 0 and not refusals(s.counters)]
    return summary(values) if values else None


def offload_matrix(rows: list[ProfileRow]) -> Table:
    """State in force per profile (columns) of every interface × feature (rows); rows
    should share a scenario and MTU. A profile measured under several workloads shows
    its first read-back (the state does not depend on the traffic)."""
    profiles: dict[str, ProfileRow] = {}
    for row in rows:
        profiles.setdefault(f"{row.profile.side}:{row.profile.name}", row)
    lines: dict[tuple[str, str], None] = {}
    for row in profiles.values():
        for iface, features in row.recorded_state.items():
            for feature in features:
                lines[(iface, feature)] = None
    body = []
    for iface, feature in lines:
        cells = [_state_cell(row, iface, feature) for row in profiles.values()]
        body.append((iface, feature, *cells))
    names = tuple(row.profile.name for row in profiles.values())
    return Table(("interface", "feature", *names), tuple(body), align_left=2 + len(names))


def _state_cell(row: ProfileRow, iface: str, feature: str) -> str:
    state = row.recorded_state.get(iface, {}).get(feature)
    if state is None:
        return "–"
    text = "on" if state.on else "off"
    if state.fixed:
        text += " [fixed]"
    if state.requested is not None and state.requested != state.on:
        text += f" (asked {'on' if state.requested else 'off'})"
    return text
