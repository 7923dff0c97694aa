"""Exporters of a stored run: JSON (a versioned document with everything) and CSV (one
flat row per sample). One interface, ``export(results, fmt, dest)``; Markdown and
HTML are the report's job (``offlab.report``).
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
from pathlib import Path
from typing import Any, Callable, Mapping, TextIO

from . import codec
from ..records import RESULTS_FORMAT_VERSION, CaseSpec, FeatureState, Sample
from .store import RunResults

JSON_DOCUMENT = "offlab-results"
_BASE_COLUMNS = (
    "run_id", "case_key", "scenario", "mtu", "profile", "side", "profile_features",
    "traffic", "protocol", "repetition", "started_at", "duration_s", "throughput_bps",
    "sender_bps", "retransmits", "lost_packets", "total_packets", "loss_percent",
    "cpu_total_percent", "cpu_percent_per_gbps",
)


def export(results: RunResults, fmt: str, dest: Path | str | TextIO) -> None:
    """Write ``results`` as ``fmt`` ("json" or "csv") to a path or an open text stream."""
    writer = EXPORTERS.get(fmt)
    if writer is None:
        raise ValueError(f"unknown export format {fmt!r} (known: {', '.join(EXPORTERS)})")
    if isinstance(dest, (str, Path)):
        path = Path(dest)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", encoding="utf-8", newline="") as stream:
            writer(results, stream)
    else:
        writer(results, dest)


def export_text(results: RunResults, fmt: str) -> str:
    buffer = io.StringIO()
    export(results, fmt, buffer)
    return buffer.getvalue()


# --- JSON ------------------------------------------------------------------------


def _write_json(results: RunResults, stream: TextIO) -> None:
    json.dump(json_document(results), stream, indent=1, sort_keys=False)
    stream.write("\n")


def json_document(results: RunResults) -> dict[str, Any]:
    """The whole run as plain data: environment, cases in plan order, every sample."""
    info = dataclasses.asdict(results.info)
    info["tool_versions"] = dict(results.info.tool_versions)
    return {
        "document": JSON_DOCUMENT,
        "format_version": RESULTS_FORMAT_VERSION,
        "run": {**info, "status": results.status, "finished_at": results.finished_at},
        "cases": [
            {**_case_dict(case), "samples": [_sample_dict(s) for s in results.samples[case.key]]}
            for case in results.cases
        ],
    }


def _case_dict(case: CaseSpec) -> dict[str, Any]:
    return {
        "key": case.key,
        "scenario": case.scenario,
        "mtu": case.mtu,
        "profile": {
            "name": case.profile.name,
            "side": case.profile.side,
            "features": dict(case.profile.features),
        },
        "traffic": {**dataclasses.asdict(case.traffic), "label": case.traffic.label},
        "label": case.scenario_label,
        "topology": dict(case.topology),
        "params": dict(case.params),
        "datapath": codec.datapath_to_doc(case.datapath),
    }


def _sample_dict(sample: Sample) -> dict[str, Any]:
    return {
        "repetition": sample.repetition,
        "started_at": sample.started_at,
        "duration_s": sample.duration_s,
        "throughput_bps": sample.throughput_bps,
        "sender_bps": sample.sender_bps,
        "retransmits": sample.retransmits,
        "lost_packets": sample.lost_packets,
        "total_packets": sample.total_packets,
        "loss_percent": sample.loss_percent,
        "cpu_total_percent": sample.cpu_total_percent,
        "cpu_percent_per_gbps": sample.cpu_percent_per_gbps,
        "roles": dict(sample.roles),
        "cpu": [{"core": c.core, "percent": dict(c.percent)} for c in sample.cpu],
        "offloads": _states(sample.offloads),
        "datapath": _states(sample.datapath),
        "counters": dict(sample.counters),
    }


def _states(states: Mapping[str, Mapping[str, FeatureState]]) -> dict[str, Any]:
    return {iface: {name: dataclasses.asdict(state) for name, state in features.items()}
            for iface, features in states.items()}


# --- CSV -------------------------------------------------------------------------


def _write_csv(results: RunResults, stream: TextIO) -> None:
    rows = [
        _csv_row(results.info.run_id, case, sample)
        for case in results.cases
        for sample in results.samples[case.key]
    ]
    extra = sorted({col for row in rows for col in row} - set(_BASE_COLUMNS))
    writer = csv.DictWriter(stream, fieldnames=[*_BASE_COLUMNS, *extra], restval="")
    writer.writeheader()
    writer.writerows(rows)


def _csv_row(run_id: str, case: CaseSpec, sample: Sample) -> dict[str, Any]:
    row: dict[str, Any] = {
        "run_id": run_id,
        "case_key": case.key,
        "scenario": case.scenario,
        "mtu": case.mtu,
        "profile": case.profile.name,
        "side": case.profile.side,
        "profile_features": " ".join(
            f"{name}={'on' if on else 'off'}" for name, on in case.profile.features.items()
        ),
        "traffic": case.traffic.label,
        "protocol": case.traffic.protocol,
    }
    for name in _BASE_COLUMNS[9:]:
        value = getattr(sample, name)
        row[name] = "" if value is None else value
    for share in sample.cpu:
        for cls, pct in share.percent.items():
            row[f"cpu{share.core}_{cls}"] = pct
    for role, core in sample.roles.items():
        row[f"role_{role}_core"] = core
    for iface, features in sample.offloads.items():
        for feature, state in features.items():
            row[f"offload_{iface}_{feature}"] = ("on" if state.on else "off") + (
                " [fixed]" if state.fixed else ""
            )
    for name, value in sample.counters.items():
        row[f"counter_{name}"] = value
    return row


EXPORTERS: dict[str, Callable[[RunResults, TextIO], None]] = {
    "json": _write_json,
    "csv": _write_csv,
}
