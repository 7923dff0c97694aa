"""Rebuilding a stored run's records from its rows (both engines, one set of queries).

A run's child rows are read table by table for the whole run (not per sample), so a
run of thousands of samples costs a handful of queries against a remote database; a
command that prints a few cases (history) reads only those cases' rows (`only`).
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any, Collection

from sqlalchemy import select
from sqlalchemy.engine import Connection

from .. import codec
from ..adaptive import AdaptiveOutcome
from ..records import CaseSpec, CpuShare, FeatureState, Interval, OffloadProfile, RateProbe, RunInfo, Sample
from .masking import mask_command_line
from .results import RunResults
from .tables import (case, case_adaptive, run, run_campaign, run_stack, sample, sample_counter, sample_cpu,
                     sample_interval, sample_offload, sample_probe)


def load_run(conn: Connection, run_id: str, only: Collection[str] | None = None) -> RunResults | None:
    """Everything stored for a run; with `only`, just those cases and their samples."""
    row = conn.execute(select(run).where(run.c.id == run_id)).first()
    if row is None:
        return None
    info = RunInfo(
        run_id=row.id, plan=row.plan, started_at=row.started_at, command_line=mask_command_line(row.command_line),
        kernel=row.kernel, cpu_model=row.cpu_model, cores=row.cores,
        tool_versions=json.loads(row.tool_versions), host=row.host, notes=row.notes,
        settings=codec.settings_from_json(row.settings), host_facts=json.loads(row.host_facts),
    )
    cases = _cases(conn, run_id, only)
    samples: dict[str, tuple[Sample, ...]] = {c.key: () for c in cases}
    for s in _samples(conn, run_id, only):
        samples[s.case_key] = samples.get(s.case_key, ()) + (s,)
    tag = conn.execute(select(run_campaign.c.campaign, run_campaign.c.pair)
                       .where(run_campaign.c.run_id == run_id)).first()
    return RunResults(info, row.status, tuple(cases), samples, row.finished_at,
                      _adaptive(conn, run_id), tuple(tag) if tag else None, _stack(conn, run_id))


def _stack(conn: Connection, run_id: str) -> dict[str, dict[str, dict[str, str]]]:
    rows = conn.execute(select(run_stack).where(run_stack.c.run_id == run_id)
                        .order_by(run_stack.c.seq)).all()
    found: dict[str, dict[str, dict[str, str]]] = {}
    for r in rows:
        found.setdefault(r.place, {}).setdefault(r.host, {})[r.key] = r.value
    return found


def _adaptive(conn: Connection, run_id: str) -> dict[str, AdaptiveOutcome]:
    rows = conn.execute(
        select(case_adaptive).join(case, (case.c.run_id == case_adaptive.c.run_id)
                                   & (case.c.key == case_adaptive.c.case_key))
        .where(case_adaptive.c.run_id == run_id).order_by(case.c.position)).all()
    return {r.case_key: AdaptiveOutcome(r.case_key, r.target, r.min_runs, r.max_runs, r.runs,
                                        r.half_width, bool(r.reached)) for r in rows}


def _cases(conn: Connection, run_id: str, only: Collection[str] | None) -> list[CaseSpec]:
    query = select(case).where(case.c.run_id == run_id).order_by(case.c.position)
    if only is not None:
        query = query.where(case.c.key.in_(list(only)))
    rows = conn.execute(query).all()
    return [
        CaseSpec(
            scenario=r.scenario, mtu=r.mtu,
            profile=OffloadProfile(r.profile_name, r.profile_side, json.loads(r.profile_features)),
            traffic=codec.traffic_from_json(r.traffic), topology=codec.params_from_json(r.topology),
            params=codec.params_from_json(r.params), datapath=codec.datapath_from_json(r.datapath),
            label=r.label,
        )
        for r in rows
    ]


def _of_run(run_id: str, only: Collection[str] | None):
    where = sample.c.run_id == run_id
    return where if only is None else where & sample.c.case_key.in_(list(only))


def _children(conn: Connection, table, run_id: str, only: Collection[str] | None, *order) -> dict[int, list[Any]]:
    """sample id → the table's rows of that sample, for every sample of the run."""
    query = (select(table).join(sample, sample.c.id == table.c.sample_id)
             .where(_of_run(run_id, only)).order_by(table.c.sample_id, *order))
    found: dict[int, list[Any]] = defaultdict(list)
    for row in conn.execute(query).all():
        found[row.sample_id].append(row)
    return found


def _samples(conn: Connection, run_id: str, only: Collection[str] | None) -> list[Sample]:
    rows = conn.execute(select(sample).where(_of_run(run_id, only))
                        .order_by(sample.c.case_key, sample.c.repetition)).all()
    cpu = _children(conn, sample_cpu, run_id, only, sample_cpu.c.ordinal, sample_cpu.c.seq)
    offloads = _children(conn, sample_offload, run_id, only, sample_offload.c.seq)
    counters = _children(conn, sample_counter, run_id, only, sample_counter.c.seq)
    intervals = _children(conn, sample_interval, run_id, only, sample_interval.c.ordinal)
    probes = _children(conn, sample_probe, run_id, only, sample_probe.c.ordinal)
    return [
        Sample(
            case_key=r.case_key, repetition=r.repetition, started_at=r.started_at,
            duration_s=r.duration_s, throughput_bps=r.throughput_bps, sender_bps=r.sender_bps,
            retransmits=r.retransmits, lost_packets=r.lost_packets, total_packets=r.total_packets,
            cpu=_cpu(cpu[r.id]), roles=json.loads(r.roles), role_hosts=json.loads(r.role_hosts),
            offloads=_offloads(offloads[r.id], "ethtool"), datapath=_offloads(offloads[r.id], "datapath"),
            intervals=tuple(Interval(i.start_s, i.end_s, i.bps, bool(i.warmup)) for i in intervals[r.id]),
            probes=tuple(RateProbe(p.offered_bps, p.sent_bps, p.received_bps, p.loss_percent)
                         for p in probes[r.id]),
            counters={c.name: c.value for c in counters[r.id]},
        )
        for r in rows
    ]


def _cpu(rows: list[Any]) -> tuple[CpuShare, ...]:
    shares: dict[int, tuple[int, str, dict[str, float]]] = {}
    for r in rows:
        shares.setdefault(r.ordinal, (r.core, r.host, {}))[2][r._mapping["class"]] = r.percent
    return tuple(CpuShare(core, pct, host) for core, host, pct in shares.values())


def _offloads(rows: list[Any], layer: str) -> dict[str, dict[str, FeatureState]]:
    found: dict[str, dict[str, FeatureState]] = {}
    for r in rows:
        if r.layer == layer:
            found.setdefault(r.iface, {})[r.feature] = FeatureState(
                bool(r.is_on), bool(r.is_fixed), None if r.requested is None else bool(r.requested))
    return found
