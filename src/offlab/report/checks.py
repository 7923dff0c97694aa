"""Warnings derived from the data: noise, outliers, saturated CPU, offload state that
differs from the request, UDP loss, cases with missing repetitions. Pure."""

from __future__ import annotations

from typing import Iterator, Mapping

from ..analysis.adaptive import Adaptive, rule_of
from ..records import FeatureState
from ..analysis.stats import Summary, runs_needed
from ..store.store import RunResults
from ..measure.cpu import NOMINAL, refusals, windows_off
from ..warnings import (
    CascadedFeature,
    CpuRefused,
    CpuWindowOff,
    CpuSaturated,
    HighVariation,
    IncompleteCase,
    LabWarning,
    OffloadNotAsRequested,
    Outliers,
    UdpLossHigh,
)
from .model import CaseGroup, ProfileRow, Thresholds
from .states import changed_features
from .timeseries import stalls

MAX_SUGGESTED_RUNS = 100


def find_warnings(
    results: RunResults,
    rows: Mapping[str, ProfileRow],
    groups: tuple[CaseGroup, ...],
    thresholds: Thresholds,
) -> tuple[LabWarning, ...]:
    """Every warning, in plan order of the cases they concern."""
    found: list[LabWarning] = list(_incomplete(results))
    for key, row in rows.items():
        found.extend(_noise(key, row, thresholds))
        found.extend(_saturation(key, row, thresholds))
        found.extend(_windows(key, row))
        found.extend(_refused(key, row))
        found.extend(_offload_requests(key, row))
        if row.loss_percent is not None and row.case.traffic.protocol == "udp":
            if row.loss_percent.mean > thresholds.loss_percent:
                found.append(UdpLossHigh(key, row.loss_percent.mean, thresholds.loss_percent))
    found.extend(_cascades(groups))
    for key, row in rows.items():
        found.extend(stalls(key, row.samples))
    return tuple(found)


def _incomplete(results: RunResults) -> Iterator[IncompleteCase]:
    counts = {case.key: len(results.samples.get(case.key, ())) for case in results.cases}
    settings = results.info.settings
    rule = rule_of(settings) if settings is not None else None
    if rule is not None:
        yield from _incomplete_adaptive(results, counts, rule)
        return
    wanted = max(counts.values(), default=0)
    if settings is not None:
        wanted = max(wanted, settings.repetitions)
    for key, got in counts.items():
        if got < wanted:
            yield IncompleteCase(key, got, wanted)


def _incomplete_adaptive(results: RunResults, counts: Mapping[str, int], rule: Adaptive) -> Iterator[IncompleteCase]:
    """With adaptive repetitions each case stops when its CI is narrow enough, so cases
    differ in runs by design: a case is short only when it stopped before its rule
    decided (no outcome stored), or, for a capacity search (which runs the rule's
    minimum), below that minimum."""
    capacity = {case.key for case in results.cases
                if case.traffic.mode == "capacity" or case.traffic.service_demand}  # fixed runs
    for key, got in counts.items():
        if key in capacity:
            if got < rule.min_runs:
                yield IncompleteCase(key, got, rule.min_runs)
        elif key not in results.adaptive:
            if got < rule.min_runs:
                yield IncompleteCase(key, got, rule.min_runs)
            else:
                yield IncompleteCase(key, got, rule.max_runs, up_to=True)


def _noise(key: str, row: ProfileRow, thresholds: Thresholds) -> Iterator[LabWarning]:
    metrics: list[tuple[str, Summary | None, str]] = [
        ("throughput", row.throughput, "Gbit/s"),
        ("CPU % per Gbps", row.cpu_per_gbps, "%/Gbps"),
    ]
    for name, stat, unit in metrics:
        if stat is None:
            continue
        if stat.cv is not None and stat.std is not None and stat.cv > thresholds.noise_cv:
            needed = runs_needed(stat.std, stat.mean, thresholds.noise_cv, MAX_SUGGESTED_RUNS)
            yield HighVariation(key, name, stat.cv, thresholds.noise_cv, stat.n,
                                max(needed, stat.n + 1))
        material = _material_outliers(stat, thresholds.noise_cv)
        if material:
            reps = tuple(row.samples[i].repetition for i in material)
            vals = tuple(stat.values[i] for i in material)
            yield Outliers(key, name, reps, vals, unit)


def _material_outliers(stat: Summary, noise_cv: float) -> tuple[int, ...]:
    """Modified-Z outliers that also stray from the median by more than the noise
    threshold: with five runs the MAD can be tiny, and a run 0.5 % off is no problem."""
    return tuple(
        i for i in stat.outliers
        if stat.median and abs(stat.values[i] - stat.median) > noise_cv * abs(stat.median)
    )


def _windows(key: str, row: ProfileRow) -> Iterator[CpuWindowOff]:
    """Per machine, the samples whose CPU window was off its nominal length."""
    off: dict[str, list[tuple[float, float]]] = {}
    for sample in row.samples:
        for where, seconds in windows_off(sample.counters, sample.duration_s).items():
            off.setdefault(where, []).append((seconds, sample.counters[NOMINAL]))
    for where, found in off.items():
        seconds, nominal = max(found, key=lambda pair: abs(pair[0] - pair[1]))
        yield CpuWindowOff(key, where, seconds, nominal, len(found), len(row.samples))


def _refused(key: str, row: ProfileRow) -> Iterator[CpuRefused]:
    """Per role, the samples whose CPU was refused (cpu.refused_roles) and the worst."""
    used: dict[str, list[float]] = {}
    for sample in row.samples:
        for role, percent in refusals(sample.counters).items():
            used.setdefault(role, []).append(percent)
    for role, found in used.items():
        yield CpuRefused(key, role, max(found), len(found), len(row.samples))


def _saturation(key: str, row: ProfileRow, thresholds: Thresholds) -> Iterator[CpuSaturated]:
    for role in row.roles:
        if role.busy > thresholds.saturated_percent:
            yield CpuSaturated(key, role.role, role.core, role.busy)


def _offload_requests(key: str, row: ProfileRow) -> Iterator[OffloadNotAsRequested]:
    for iface, features in row.recorded_state.items():
        for name, state in features.items():
            if state.requested is not None and state.on != state.requested:
                yield OffloadNotAsRequested(key, iface, name, state.requested, state.on,
                                            state.fixed)


def _cascades(groups: tuple[CaseGroup, ...]) -> Iterator[CascadedFeature]:
    """Features a profile did not name whose state differs from the baseline's."""
    seen: set[tuple[str, str, str]] = set()
    for group in groups:
        if group.baseline is None:
            continue
        for row in group.rows:
            if row is group.baseline:
                continue
            for iface, name, got in _unrequested_changes(group.baseline.offload_state,
                                                         row.offload_state):
                if (row.case.key, iface, name) not in seen:
                    seen.add((row.case.key, iface, name))
                    yield CascadedFeature(row.case.key, iface, name, got)


def _unrequested_changes(
    before: Mapping[str, Mapping[str, FeatureState]],
    after: Mapping[str, Mapping[str, FeatureState]],
) -> Iterator[tuple[str, str, bool]]:
    for iface, features in after.items():
        changed = changed_features(before.get(iface, {}), features)
        for name in sorted(changed):
            if features[name].requested is None:
                yield iface, name, features[name].on
