"""W5's tables: throughput and verdicts, per-side loss and CPU, seed 004's comparison.

Reads the raw lines `fwd_w5.run_one` makes; pure functions, Python standard library only.
"""

from __future__ import annotations

import statistics

import fwd_w5
import w5_instructions
from fwd_w5 import ROWS, SEED004

# A side "loses" when more than this share of the payload its source offered in the
# window did not reach the sink (frames in flight at the window's edges are ~0.1 %).
LOSS_TOLERANCE = 0.005
SIDES = (("testpmd", "testpmd"), ("fwd", "offlab-fwd"))


def _median(values: list[float]) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def _by(lines: list[dict]) -> dict[tuple[str, str], list[dict]]:
    groups: dict[tuple[str, str], list[dict]] = {}
    for line in lines:
        groups.setdefault((line["side"], line["workload"]), []).append(line)
    return groups


def refusal(dpdk: list[dict], fwd: list[dict]) -> str | None:
    """Why a row cannot be judged: different input frames, or frames that failed the
    sink's checks, on either side."""
    if {l["digest"] for l in dpdk} != {l["digest"] for l in fwd}:
        return "input digests differ"
    for side in (dpdk, fwd):
        bad = {k: v for l in side for k, v in l["mismatches"].items()}
        if bad:
            return f"{side[0]['side']}: sink found {bad}"
        if not all(l["verified"] for l in side):
            return f"{side[0]['side']}: nothing verified"
    return None


def pairs(dpdk: list[dict], fwd: list[dict]) -> list[tuple[dict, dict]]:
    """(testpmd's run, offlab-fwd's run) of each pair whose testpmd run delivered."""
    by_pair = {l["pair"]: l for l in dpdk}
    return [(by_pair[l["pair"]], l) for l in fwd if l["pair"] in by_pair and by_pair[l["pair"]]["value"]]


def ratio_cells(dpdk: list[dict], fwd: list[dict]) -> list[float]:
    return [run["value"] / peer["value"] for peer, run in pairs(dpdk, fwd)]


def spread(lines: list[dict], key: str) -> float:
    """max/min of a row's per-pair ratios (1.0 when it has none)."""
    groups = _by(lines)
    ratios = ratio_cells(groups.get(("testpmd", key), []), groups.get(("fwd", key), []))
    return max(ratios) / min(ratios) if ratios and min(ratios) > 0 else 1.0


NEAR_RTT_NS = 200
"""The host moves this VM's two vCPUs: the CPU 0 <-> CPU 1 cache-line round trip
(`offlab-vcpu-rtt`, before and after each run) reads 63-103 ns at the near placements
and 325-345 ns at the far one, and both backends' cost per segment follows it."""


def placement(line: dict) -> str | None:
    """"near" or "far" when both readings of a run agree, "mixed" when the host moved the
    vCPUs across the line during it; None for a run without readings."""
    readings = line.get("vcpu_rtt_ns") or []
    if len(readings) != 2 or None in readings:
        return None
    near = [value < NEAR_RTT_NS for value in readings]
    return "near" if all(near) else "far" if not any(near) else "mixed"


def placement_rows(lines: list[dict]) -> list[list[str]]:
    """Per row: the median ratio (and count) of the pairs whose two runs were both near,
    both far, or neither; rows without readings are left out."""
    groups, out = _by(lines), []
    for row in ROWS:
        cells: dict[str, list[float]] = {"near": [], "far": [], "mixed": []}
        for peer, run in pairs(groups.get(("testpmd", row.key), []), groups.get(("fwd", row.key), [])):
            both = placement(peer), placement(run)
            if None in both:
                continue
            kind = both[0] if both[0] == both[1] else "mixed"
            cells[kind].append(run["value"] / peer["value"])
        if any(cells.values()):
            out.append([row.label, *(f"{statistics.median(v):.2f}× ({len(v)})" if v else "–"
                                     for v in cells.values())])
    return out


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value * 100:.1f} %"


def verdict(row: fwd_w5.Row, dpdk: list[dict], fwd: list[dict]) -> str:
    ratios = ratio_cells(dpdk, fwd)
    why = refusal(dpdk, fwd)
    if why or not ratios:
        return f"**refused** ({why or 'no pair'})"
    fwd_depth, dpdk_depth = _median([l["depth"] for l in fwd]), _median([l["depth"] for l in dpdk])
    if fwd_depth + 0.05 < dpdk_depth:
        return "**no** (merges less)"
    if fwd_depth > dpdk_depth + 0.05:
        # Issue 41's goals hold at equal depth: deeper super-packets mean fewer frames
        # for offlab-fwd to send and the sink to take, so the ratio is not the same work.
        return "**no** (merges more: not at equal depth)"
    loss = _median([l["loss"] for l in fwd])
    if loss is not None and loss > LOSS_TOLERANCE:
        return f"**no** (loses {_pct(loss)})"
    return "yes" if row.goal is None or statistics.median(ratios) >= row.goal else "**no**"


def table_rows(lines: list[dict], instr: list[dict] | None = None) -> list[list[str]]:
    """Per row: both sides' delivered Gbit/s and loss, the ratio (median, min-max, pairs),
    merge depths, instructions per delivered segment of both sides (callgrind lines
    `instr`, "–" where not counted or refused), goal, verdict."""
    groups, out = _by(lines), []
    counted = instructions(lines, instr or [])
    for row in ROWS:
        dpdk, fwd = groups.get(("testpmd", row.key)), groups.get(("fwd", row.key))
        if not dpdk or not fwd:
            continue
        ratios = ratio_cells(dpdk, fwd)
        out.append([row.label,
                    f"{_median([l['value'] for l in dpdk]):.2f} Gbit/s",
                    f"{_median([l['value'] for l in fwd]):.2f} Gbit/s",
                    f"{statistics.median(ratios):.2f}×" if ratios else "–",
                    f"{min(ratios):.2f}–{max(ratios):.2f}" if ratios else "–",
                    str(len(ratios)),
                    _pct(_median([l["loss"] for l in dpdk])),
                    _pct(_median([l["loss"] for l in fwd])),
                    f"{_median([l['depth'] for l in dpdk]):.2f}",
                    f"{_median([l['depth'] for l in fwd]):.2f}",
                    *(_ir(counted.get((side, row.key))) for side in ("testpmd", "fwd")),
                    "–" if row.goal is None else f"≥ {row.goal}×",
                    verdict(row, dpdk, fwd)])
    return out


def _depth(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def _ir(value: float | None) -> str:
    return "–" if value is None else f"{value:,.0f}"


def instruction_refusal(timed: list[dict], counted: list[dict]) -> str | None:
    """Why a side's callgrind runs of a row cannot stand beside its timed runs: other
    frames than the timed runs', a run that delivered nothing, frames that failed the
    sink's checks, or no frame verified."""
    if timed and {l["digest"] for l in counted} - {l["digest"] for l in timed}:
        return "input digest differs from the timed runs'"
    if not all(l["payload_bytes"] for l in counted):
        return "a run delivered nothing (the vhost links came up after its load ended)"
    bad = {k: v for l in counted for k, v in l["mismatches"].items()}
    if bad:
        return f"sink found {bad}"
    if not all(l["verified"] for l in counted):
        return "nothing verified"
    return None


def instructions(lines: list[dict], instr: list[dict]) -> dict[tuple[str, str], float]:
    """Instructions per delivered segment by (side, row), from the callgrind lines of
    every side and row that passed `instruction_refusal`."""
    timed, counted = _by(lines), _by(instr)
    return {key: value for key, runs in counted.items()
            if instruction_refusal(timed.get(key, []), runs) is None
            and (value := w5_instructions.per_segment(runs)) is not None}


def instruction_rows(lines: list[dict], instr: list[dict]) -> list[list[str]]:
    """Per row and side counted: instructions per delivered segment (or why it was
    refused), the load lengths, segments and counts behind it, merge depth, testpmd's
    configuration, when it was counted."""
    timed, counted, out = _by(lines), _by(instr), []
    for row in ROWS:
        for side, name in SIDES:
            runs = sorted(counted.get((side, row.key), []), key=lambda l: l["load_seconds"])
            if not runs:
                continue
            why = instruction_refusal(timed.get((side, row.key), []), runs)
            value = None if why else w5_instructions.per_segment(runs)
            out.append([row.key, name, "**refused** (" + why + ")" if why else _ir(value),
                        " / ".join(f"{l['load_seconds']:g}" for l in runs),
                        " / ".join(f"{w5_instructions.segments(l):,.0f}" for l in runs),
                        " / ".join(f"{l['instructions'] / 1e9:.2f}" for l in runs),
                        " / ".join(f"{l.get('busy_wait', 0) / 1e9:.2f}" for l in runs),
                        _depth(_median([l["depth"] for l in runs])),
                        runs[-1]["config"], runs[-1].get("run_at", "unrecorded")])
    return out


def _ns(value: float | None) -> str:
    return "–" if value is None else f"{value:.0f}"


def detail_rows(lines: list[dict]) -> list[list[str]]:
    """Per row and side: offered and delivered payload, loss, CPU per delivered segment
    (backend; source and sink), copies per byte, what the sink got marked, drops."""
    groups, out = _by(lines), []
    for row in ROWS:
        for side, name in SIDES:
            runs = groups.get((side, row.key))
            if not runs:
                continue
            copies = _median([l["copies_per_byte"] for l in runs])
            gso = runs[-1]["gso_types"]
            out.append([row.key, name,
                        f"{_median([l['offered_gbps'] for l in runs]):.2f}",
                        f"{_median([l['value'] for l in runs]):.2f}",
                        _pct(_median([l["loss"] for l in runs])),
                        _ns(_median([l["backend_ns_per_segment"] for l in runs])),
                        _ns(_median([load_ns_per_segment(l, "source") for l in runs])),
                        _ns(_median([load_ns_per_segment(l, "sink") for l in runs])),
                        "–" if copies is None else f"{copies:.2f}",
                        ", ".join(f"{'none' if k == '0' else 'tcpv4' if k == '1' else k}: {v}"
                                  for k, v in gso.items()),
                        str(runs[-1]["over_mtu_without_gso"]),
                        str(sum(l["verified"] for l in runs)),
                        str(_median([l["backend_dropped"] for l in runs]))])
    return out


def load_ns_per_segment(line: dict, who: str) -> float | None:
    """The source's or sink's busy time per delivered MSS segment, in ns."""
    segments_per_s = line["value"] * 1e9 / 8 / line["mss"] if line.get("mss") else 0
    share = line[f"{who}_busy_share"]
    return share * 1e9 / segments_per_s if segments_per_s else None


def per_gbps(lines: list[dict], who: str) -> float | None:
    """Share of a core the source or sink was busy, per Gbit/s delivered (median)."""
    return _median([l[f"{who}_busy_share"] / l["value"] for l in lines if l["value"]])


def seed004_rows(lines: list[dict]) -> list[list[str]]:
    """Seed 004's figures: Gbit/s with and without backend offload, and what the two
    guests spent for it (busy share of a core per Gbit/s delivered)."""
    groups, out = _by(lines), []
    for label, offload, baseline in SEED004:
        for side, name in SIDES:
            on, off = groups.get((side, offload)), groups.get((side, baseline))
            if not on or not off:
                continue
            a, b = _median([l["value"] for l in on]), _median([l["value"] for l in off])
            cells = [label, name, f"{a:.2f}", f"{b:.2f}", f"{(a / b - 1) * 100:+.0f} %"]
            for who in ("source", "sink"):
                cells += [_pct(per_gbps(on, who)), _pct(per_gbps(off, who))]
            out.append(cells)
    return out


def runs(lines: list[dict]) -> str:
    """When and by which command each row's lines were measured (rows merged from
    several runs each keep their own)."""
    seen: dict[tuple[str, str], list[str]] = {}
    for row in ROWS:
        row_lines = [l for l in lines if l["workload"] == row.key]
        for at, command in sorted({(l.get("run_at", "unrecorded"),
                                    l.get("command", "unrecorded")) for l in row_lines}):
            seen.setdefault((at, command), []).append(row.key)
    return "\n".join(f"- {', '.join(keys)}: {at}, `{command}`"
                     for (at, command), keys in sorted(seen.items()))


def commands(huge: bool) -> str:
    """testpmd's command line and prompt input, once per distinct configuration."""
    seen: dict[tuple[str, str], list[str]] = {}
    for row in ROWS:
        setup = fwd_w5.testpmd_setup(row, "HUGETLBFS" if huge else None)
        typed = setup.commands(row.gro, row.gso).strip().replace("\n", "; ")
        seen.setdefault((setup.shown(), typed), []).append(row.key)
    return "\n".join(f"- {', '.join(keys)}: `{line}` fed `{typed}`"
                     for (line, typed), keys in seen.items())


def instruction_text() -> str:
    low, high = w5_instructions.SECONDS
    return (
        "Instructions per delivered segment (instr/seg): each backend under `valgrind "
        "--tool=callgrind --fair-sched=yes` in the same harness, row settings and frames "
        "(testpmd on 4 KiB pages), counters zeroed (`callgrind_control -z`) when the "
        "ports can carry frames (offlab-fwd: before the load; testpmd: when both vhost "
        "links are up) and dumped (`callgrind_control -d`) when the load exits; two runs "
        f"with {low:g} s and {high:g} s of load (no warm-up), instr/seg = the difference "
        "of the two counts / the difference of the MSS-size segments the sink received. "
        "Under valgrind the backend is the slow end, so it nearly always finds a full "
        "ring; what does not grow with the load (frames moved before the zeroing, last "
        "polls, frames in flight at the end) cancels. After the timed runs; "
        "deterministic per path, not a timing (the VM has no PMU, so no cycles). "
        f"testpmd's transmit retry waits in `{w5_instructions.BUSY_WAIT}`, a busy loop "
        "whose instructions grow with time, not packets: they are listed apart and left "
        "out of instr/seg:")


def section(lines: list[dict], pairs: int, seconds: float, markdown_table,
            huge: bool = False, instr: list[dict] | None = None) -> str:
    instr = instr or []
    return "\n".join([
        f"W5: offlab-fwd vs DPDK testpmd (tuned, see above) as the vhost-user backend, "
        f"{pairs} pairs per row in ABBA order (testpmd first in even pairs, offlab-fwd in odd "
        f"ones; up to {fwd_w5.EXTRA_PAIRS} more pairs for rows whose ratios spread over "
        f"{fwd_w5.WIDE_SPREAD}×), {seconds} s measured after {fwd_w5.WARMUP} s per run; "
        f"backend on CPU {fwd_w5.FWD_CPU}, source/sink (`offlab-vhostload`) on CPU "
        f"{fwd_w5.LOAD_CPU}; figure = TCP payload delivered to the sink; medians; ratio = "
        "offlab-fwd/testpmd of the same pair. Loss = payload the source handed over in the "
        "window that the sink did not get. Merge depth = MSS segments per frame the sink "
        f"received. testpmd's memory: {'2 MiB hugepages' if huge else 'no hugepages'}.",
        "",
        markdown_table(["workload", "DPDK testpmd", "offlab-fwd", "ratio (median)",
                        "ratio min–max", "pairs", "loss DPDK", "loss offlab", "depth DPDK",
                        "depth offlab", "instr/seg DPDK", "instr/seg offlab", "goal",
                        "met?"], table_rows(lines, instr)),
        "",
        "The same ratios by where the host had put the two vCPUs for both runs of a pair: "
        "the CPU 0 ↔ CPU 1 cache-line round trip read before and after each run "
        f"(`offlab-vcpu-rtt`), near below {NEAR_RTT_NS} ns, far above; a pair is mixed when "
        "its four readings are not all on one side. Median ratio (pairs); rows measured "
        "before the readings existed are not listed:",
        "",
        markdown_table(["workload", "both near", "both far", "mixed"], placement_rows(lines)),
        "",
        instruction_text(),
        "",
        markdown_table(["row", "backend", "instr/seg", "load s (runs)", "segments delivered",
                        "instructions (10⁹)", "of them busy wait", "depth", "config",
                        "counted"],
                       instruction_rows(lines, instr)) if instr
        else "(instructions not counted in this run)",
        "",
        "Per side: payload offered by the source and delivered to the sink (Gbit/s, "
        "medians), loss; CPU per delivered MSS-size segment in ns — the backend's (its "
        "process's CPU time from /proc/PID/task/*/schedstat over the window; both backends "
        "poll, so this is its whole core divided by what it delivered), the source's and "
        "the sink's (time in rounds that moved a frame); bytes copied per byte delivered; "
        "GSO types the sink saw and frames over the MTU without one (last run); frames "
        "verified (all runs); frames the backend dropped (median):",
        "",
        markdown_table(["row", "backend", "offered", "delivered", "loss", "backend ns/seg",
                        "source ns/seg", "sink ns/seg", "copies/byte", "sink saw",
                        "over MTU, no GSO", "verified", "dropped"], detail_rows(lines)),
        "",
        "Seed 004's comparison: Gbit/s with and without backend offload, and the guests' "
        "CPU for it — the share of a core the source and the sink were busy, per Gbit/s "
        "delivered (medians):",
        "",
        markdown_table(["offload", "backend", "Gbit/s with", "without", "gain",
                        "source CPU/Gbit/s with", "without", "sink CPU/Gbit/s with",
                        "without"], seed004_rows(lines)),
        "",
        "When each row was measured (a run of some rows replaces only those rows' lines):",
        "",
        runs(lines),
        "",
        "testpmd command lines (per row group; sockets A and B):",
        "",
        commands(huge),
        "",
        f"offlab-fwd: `offlab-fwd --port vhost-user:A --port vhost-user:B --mode M --cpu "
        f"{fwd_w5.FWD_CPU}`; load: `taskset -c {fwd_w5.LOAD_CPU} offlab-vhostload --source A "
        "--sink B …` (arguments per row in benches/fwd_w5.py).",
    ])
