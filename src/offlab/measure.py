"""One repetition of one case: iperf3 between the topology's hosts, /proc/stat
snapshots bracketing exactly the measured window, and the `Sample` built from both."""

from __future__ import annotations

import subprocess
import time
from typing import Mapping

from . import cpu
from .proc import in_netns, spawn, stop
from .records import CaseSpec, CpuShare, FeatureState, Sample
from .topology import Topology
from .traffic import (DEFAULT_PORT, IperfError, TrafficResult, client_args, parse_result,
                      wait_for_data_connection)

START_TIMEOUT_S = 2.0
"""How long to watch for the client's data connection before timing from its launch."""
CLIENT_GRACE_S = 10.0
"""How long past warm-up + duration the client may take to report before we give up."""


def measure(
    topology: Topology,
    case: CaseSpec,
    repetition: int,
    offloads: Mapping[str, Mapping[str, FeatureState]],
    port: int = DEFAULT_PORT,
    server_pid: int | None = None,
    kernel_threads: Mapping[int, int] | None = None,
) -> Sample:
    """`kernel_threads`: pid → core of the NAPI threads pinned for this case; their time
    is kept apart so that `other_busy_pct` counts only work that is not ours."""
    spec = case.traffic
    sender, receiver = topology.sender, topology.receiver
    args = in_netns(sender.namespace, client_args(spec, receiver.address, sender.core, port))
    client = spawn(args, capture_stdout=True)
    try:
        launched = time.monotonic()
        apps = {"sender_app": client.pid, "receiver_app": server_pid}
        apps.update({f"napi_core{core}": pid for pid, core in (kernel_threads or {}).items()})
        # iperf3 starts its clock once its data connection is up, some milliseconds
        # (more on a loaded machine) after launch: the CPU window is timed from then.
        connected = wait_for_data_connection(client.pid, port, START_TIMEOUT_S)
        start = connected if connected is not None else launched
        _sleep_until(start + spec.warmup_s)
        before, started_at, opened = cpu.snapshot(), time.time(), time.monotonic()
        apps_before = _app_times(apps)
        _sleep_until(start + spec.warmup_s + spec.duration_s)
        after, closed = cpu.snapshot(), time.monotonic()
        apps_after = _app_times(apps)
        try:
            out, err = client.communicate(timeout=CLIENT_GRACE_S)
        except subprocess.TimeoutExpired:
            raise IperfError(f"{case.key} run {repetition}: iperf3 client still running "
                             f"{CLIENT_GRACE_S:g} s after its test should have ended") from None
        finished = time.monotonic()
    finally:
        stop(client)
    try:
        result = parse_result(out, spec.warmup_s)
    except IperfError as failure:
        raise IperfError(f"{case.key} run {repetition}: {failure}; stderr: {err.strip()[-200:]}") from None
    shares = cpu.shares_between(before, after)
    counters = {
        "cpu_window_s": closed - opened,
        "iperf3_start_lag_s": start - launched,
        "iperf3_overhead_s": finished - launched - spec.warmup_s - spec.duration_s,
        **_app_counters(apps_before, apps_after, closed - opened, shares),
        **result.counters,  # per-direction rates of a bidirectional test
    }
    return _sample(case, repetition, started_at, result, shares, topology.roles, offloads, counters)


def _app_times(apps: Mapping[str, int | None]) -> dict[str, cpu.ProcessTimes | None]:
    return {role: cpu.process_times(pid) if pid else None for role, pid in apps.items()}


def _app_counters(before: Mapping[str, cpu.ProcessTimes | None],
                  after: Mapping[str, cpu.ProcessTimes | None], window_s: float,
                  shares: tuple[CpuShare, ...]) -> dict[str, float]:
    """Our processes' own usr/sys (iperf3 client and server, NAPI threads; % of one
    core), and what the cores spent on anything else: busy − ours − softirq − irq. On
    a quiet machine that is ~0; on a shared one it is the foreign load that
    contaminates the per-core figures."""
    counters: dict[str, float] = {}
    ours = 0.0
    for label in before:
        percent = cpu.process_percent(before[label], after.get(label), window_s)
        if percent is None:
            continue
        counters[f"{label}_usr_pct"] = percent["usr"]
        counters[f"{label}_sys_pct"] = percent["sys"]
        ours += percent["usr"] + percent["sys"]
    if "sender_app_sys_pct" in counters and "receiver_app_sys_pct" in counters:
        interrupts = sum(s.percent.get("soft", 0.0) + s.percent.get("irq", 0.0) for s in shares)
        busy = sum(s.busy for s in shares)
        counters["other_busy_pct"] = max(0.0, busy - ours - interrupts)
    return counters


def _sample(case: CaseSpec, repetition: int, started_at: float, result: TrafficResult,
            shares: tuple[CpuShare, ...], roles: Mapping[str, int],
            offloads: Mapping[str, Mapping[str, FeatureState]],
            counters: Mapping[str, float]) -> Sample:
    return Sample(
        case_key=case.key,
        repetition=repetition,
        started_at=started_at,
        duration_s=result.window_s,
        throughput_bps=result.throughput_bps,
        sender_bps=result.sender_bps,
        retransmits=result.retransmits,
        lost_packets=result.lost_packets,
        total_packets=result.total_packets,
        cpu=shares,
        roles=dict(roles),
        offloads={label: dict(states) for label, states in offloads.items()},
        counters=dict(counters),
    )


def _sleep_until(deadline: float) -> None:
    remaining = deadline - time.monotonic()
    if remaining > 0:
        time.sleep(remaining)
