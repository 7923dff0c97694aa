"""One repetition of one case: traffic between the topology's endpoints, /proc/stat
snapshots bracketing exactly the measured window, and the `Sample` built from both.

Three traffic modes (TrafficSpec.mode):
* stream — iperf3 at the spec's rate; with `latency_probe`, a latency probe beside it
  (latency_probes.py: irtt beside a saturating stream, paced TCP request/response
  beside a paced one);
* capacity — a rate search of short UDP probes, then a full-length verification trial
  at the rate found (capacity.py); the sample is that trial, every probe kept;
* rr — sockperf ping-pong over TCP or UDP: transactions per second and their latency.

Every sample also records the foreign load over its window (foreign.py): CPU used by
processes that are not the run's own.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from pathlib import Path
from dataclasses import dataclass, replace
from typing import Iterator, Mapping

from . import capacity, cpu, foreign, latency, latency_probes, udpload
from .counters import WINDOW_DEVICE_PREFIX, delta as counters_delta, parse_dev
from ..hosts.proctimes import ProcessTimes, parse_pid_stat, process_percent, process_times, thread_times
from ..records import RR_MESSAGE, CaseSpec, CpuShare, FeatureState, Sample, TrafficSpec
from ..hosts import Host
from ..hosts.ports import DEFAULT_PORT
from ..topology import Topology
from .window import Window
from .traffic import IperfError, TrafficResult, client_args, parse_result, wait_for_data_connection

_HZ = float(cpu.kernel_hz())
"""This machine's tick rate: how finely the busy time's split (usr/sys/soft) is sampled."""
START_TIMEOUT_S = 2.0
"""How long to watch for the client's data connection before timing from its launch."""
CLIENT_GRACE_S = 10.0
"""How long past warm-up + duration the client may take to report before we give up."""


@dataclass(frozen=True)
class Context:
    """What a measurement needs beside the case: the server's port and pid, the NAPI
    threads pinned for the case (pid → core), the run's cgroup (foreign load)."""

    port: int = DEFAULT_PORT
    server_pid: int | None = None
    kernel_threads: Mapping[int, int] | None = None
    own_cgroup: str | None = None


def measure(topology: Topology, case: CaseSpec, repetition: int,
            offloads: Mapping[str, Mapping[str, FeatureState]],
            datapath: Mapping[str, Mapping[str, FeatureState]], context: Context) -> Sample:
    spec = case.traffic
    if spec.mode == "capacity":
        sample = _capacity(topology, case, repetition, context)
    elif spec.mode == "rr":
        sample = _request_response(topology, case, repetition, context)
    else:
        sample = _stream(topology, case, repetition, spec, context)
    return replace(sample, offloads={k: dict(v) for k, v in offloads.items()},
                   datapath={k: dict(v) for k, v in datapath.items()})


# --- one iperf3 test with its CPU window ------------------------------------------------


def _iperf(topology: Topology, spec: TrafficSpec, context: Context, label: str,
           beside: latency_probes.LatencyProbe | None = None) -> tuple[TrafficResult, Window]:
    """Run one iperf3 client; `beside` is a latency probe, started once the data
    connection is up, told when the window opens, and finished with the window."""
    sender, receiver = topology.sender, topology.receiver
    client = sender.host.spawn(client_args(spec, receiver.address, sender.core, context.port),
                               capture_stdout=True)
    started_at, window_s = time.time(), 0.0
    try:
        launched = time.monotonic()
        apps = {"sender_app": (client.pid, sender.host), "receiver_app": (context.server_pid, receiver.host)}
        apps.update({f"napi_core{core}": (pid, None) for pid, core in (context.kernel_threads or {}).items()})
        tasks = _task_groups(apps, context.kernel_threads or {}, topology)
        # iperf3 starts its clock once its data connection is up, some milliseconds
        # (more on a loaded machine) after launch: the CPU window is timed from then.
        machines, inner, threads = topology.cpu_machines(), topology.inner_cpu_hosts(), topology.window_threads()
        with _prompt():
            connected = wait_for_data_connection(sender.host, client.pid, context.port, START_TIMEOUT_S)
            start = connected if connected is not None else launched
            if beside is not None:
                beside.start()
            _sleep_until(start + spec.warmup_s)
            remote_threads = topology.remote_window_threads()
            before, started_at, opened = _cpu(machines), time.time(), time.monotonic()
            others_before = foreign.snapshot(context.own_cgroup)
            apps_before, threads_before, inner_before = _app_times(apps), _thread_times(threads), _cpu(inner)
            tasks_before, devices_before = _task_ns(tasks), _devices(topology)
            threads_before.update(_remote_thread_times(remote_threads))
            if beside is not None:
                beside.window_opened()
            _sleep_until(start + spec.warmup_s + spec.duration_s)
            after, closed = _cpu(machines), time.monotonic()
            window_s = closed - opened
            others_after = foreign.snapshot(context.own_cgroup)
            apps_after, threads_after, inner_after = _app_times(apps), _thread_times(threads), _cpu(inner)
            tasks_after, devices_after = _task_ns(tasks), _devices(topology)
            threads_after.update(_remote_thread_times(remote_threads))
        try:
            out, err = client.communicate(timeout=CLIENT_GRACE_S)
        except subprocess.TimeoutExpired:
            raise IperfError(f"{label}: iperf3 client still running {CLIENT_GRACE_S:g} s "
                             "after its test should have ended") from None
        finished = time.monotonic()
    except BaseException:
        if beside is not None:
            beside.stop()
        raise
    finally:
        sender.host.stop(client)
    # The probe's round trips count only inside the measured window.
    extra = beside.finish((started_at, started_at + window_s)) if beside is not None else {}
    try:
        result = parse_result(out, spec.warmup_s)
    except IperfError as failure:
        raise IperfError(f"{label}: {failure}; stderr: {err.strip()[-200:]}") from None
    shares = tuple(share for label in before for share in _labelled(label, before[label], after[label]))
    busy, top = foreign.busy_percent(others_before, others_after, closed - opened)
    counters = {
        "cpu_window_s": closed - opened,
        cpu.NOMINAL: spec.duration_s,
        cpu.TICK_HZ: _HZ,
        **({"offered_bps": spec.rate_bps} if spec.rate_bps else {}),
        **{f"{cpu.WINDOW_PREFIX}{label or 'local'}": cpu.window_seconds(before[label], after[label])
           for label in before},
        **cpu.parse_iperf3_cpu(out),
        "iperf3_start_lag_s": start - launched,
        "iperf3_overhead_s": finished - launched - spec.warmup_s - spec.duration_s,
        "other_busy_pct": busy,
        **{f"other_top_{n}_pct": pct for n, (_, pct) in enumerate(top[:1])},
        **_app_counters(apps_before, apps_after, closed - opened),
        **_task_counters(topology, tasks_before, tasks_after, closed - opened),
        **{f"{WINDOW_DEVICE_PREFIX}{name}": grown for name, grown in counters_delta(devices_before, devices_after).items()},
        **_app_counters(threads_before, threads_after, closed - opened),
        **_inner_cpu_counters(inner_before, inner_after),
        **result.counters,  # per-direction rates of a bidirectional test
        **extra,
    }
    return result, Window(started_at, closed - opened, shares, counters)


def _stream(topology: Topology, case: CaseSpec, repetition: int, spec: TrafficSpec,
            context: Context) -> Sample:
    label = f"{case.key} run {repetition}"
    if spec.generator == "udpload":
        result, window = udpload.trial(topology, spec, label)
        return _sample(case, repetition, result, window, topology)
    probe = latency_probes.for_stream(topology, spec) if spec.latency_probe else None
    result, window = _iperf(topology, spec, context, label, probe)
    return _sample(case, repetition, result, window, topology)


# --- capacity: a rate search, then a verification trial (capacity.py) -------------------


def _capacity(topology: Topology, case: CaseSpec, repetition: int, context: Context) -> Sample:
    def trial(spec: TrafficSpec, label: str) -> tuple[TrafficResult, Window]:
        if spec.generator == "udpload":
            return udpload.trial(topology, spec, label)
        return _iperf(topology, spec, context, label)

    return capacity.measure_capacity(topology, case, repetition, trial, _sample)


# --- request/response -------------------------------------------------------------------


def _request_response(topology: Topology, case: CaseSpec, repetition: int, context: Context) -> Sample:
    """sockperf ping-pong (TCP or UDP, the spec's protocol): a server on the receiver, the
    client on the sender; every round trip is read back from the client's full log."""
    spec = case.traffic
    sender, receiver = topology.sender, topology.receiver
    server = receiver.host.spawn(latency.sockperf_server_args(receiver.address, receiver.core,
                                                              protocol=spec.protocol))
    log = f"{sender.host.scratch_dir()}/offlab-sockperf-{sender.host.name}-{time.monotonic_ns()}.csv"
    try:
        time.sleep(0.3)  # sockperf has no readiness signal; its bind is immediate
        machines = topology.cpu_machines()
        before, started_at, opened = _cpu(machines), time.time(), time.monotonic()
        done = sender.host.run(latency.sockperf_client_args(receiver.address, sender.core,
                                                            spec.warmup_s + spec.duration_s,
                                                            protocol=spec.protocol, full_log=log),
                               timeout=spec.warmup_s + spec.duration_s + CLIENT_GRACE_S)
        after, closed = _cpu(machines), time.monotonic()
        found = latency.parse_sockperf(done.stdout + done.stderr)
        found = replace(found, histogram=latency.parse_sockperf_log(sender.host.read_file(log)))
    finally:
        receiver.host.stop(server)
        sender.host.run(["rm", "-f", log], check=False)
    # Transactions over sockperf's own measured span (it excludes its warm-up itself).
    transactions = found.samples / max(found.seconds or spec.duration_s, 1e-9)
    result = TrafficResult(transactions * RR_MESSAGE * 2 * 8, transactions * RR_MESSAGE * 2 * 8,
                           closed - opened, None, None, None)
    shares = tuple(share for label in before for share in _labelled(label, before[label], after[label]))
    window = Window(started_at, closed - opened, shares,
                    {"transactions_per_s": transactions, **found.counters("rr")})
    return _sample(case, repetition, result, window, topology)


# --- helpers ----------------------------------------------------------------------------


def _cpu(machines: Mapping[str, Host]) -> dict[str, cpu.CpuTimes]:
    return {label: cpu.snapshot(host) for label, host in machines.items()}


def _thread_times(groups: Mapping[str, tuple[tuple[int, int], ...]]) -> dict[str, ProcessTimes | None]:
    """Each group's threads' times summed (vCPU threads of one guest, …), read on this
    machine; threads that ended meanwhile count for nothing."""
    summed: dict[str, ProcessTimes | None] = {}
    for label, threads in groups.items():
        found = [t for t in (thread_times(pid, tid) for pid, tid in threads) if t is not None]
        summed[label] = ProcessTimes(sum(t.usr for t in found), sum(t.sys for t in found)) if found else None
    return summed


def _remote_thread_times(groups: Mapping[str, tuple[Host, tuple[tuple[int, int], ...]]]
                         ) -> dict[str, ProcessTimes | None]:
    """As `_thread_times` for threads of another machine (a server's QEMU), each host's
    read in one command there."""
    by_host: dict[int, tuple[Host, list[tuple[int, int]]]] = {}
    for host, threads in groups.values():
        by_host.setdefault(id(host), (host, []))[1].extend(threads)
    times: dict[int, ProcessTimes] = {}
    for host, threads in by_host.values():
        paths = " ".join(f"/proc/{pid}/task/{tid}/stat" for pid, tid in threads)
        # The shell only reads (a thread's stat is world-readable): as the SSH user.
        said = host.run(["sh", "-c", f"cat {paths} 2>/dev/null; true"], check=False, timeout=15,
                        root=False).stdout
        for line in said.splitlines():
            if line.split(" ", 1)[0].isdigit():
                times[int(line.split(" ", 1)[0])] = parse_pid_stat(line)
    summed: dict[str, ProcessTimes | None] = {}
    for label, (_, threads) in groups.items():
        found = [times[tid] for _, tid in threads if tid in times]
        summed[label] = ProcessTimes(sum(t.usr for t in found), sum(t.sys for t in found)) if found else None
    return summed


def _inner_cpu_counters(before: Mapping[str, cpu.CpuTimes], after: Mapping[str, cpu.CpuTimes]) -> dict[str, float]:
    """A guest's own cores over the window, per class ("a:cpu0_soft_pct"): kept as
    counters, not as the sample's CPU shares, because a guest's busy time is already the
    host's (its vCPU threads), and adding it again would count it twice."""
    counters: dict[str, float] = {}
    for label in before:
        for share in cpu.shares_between(before[label], after[label]):
            for name, percent in share.percent.items():
                counters[f"{label}:cpu{share.core}_{name}_pct"] = percent
    return counters


def _labelled(label: str, before: cpu.CpuTimes, after: cpu.CpuTimes) -> list[CpuShare]:
    return [replace(share, host=label) for share in cpu.shares_between(before, after)]


def _app_times(apps: Mapping[str, tuple[int | None, Host | None]]) -> dict[str, ProcessTimes | None]:
    """The processes' times, each read on its own host (NAPI threads: on this machine)."""
    return {role: process_times(pid, host) if pid else None for role, (pid, host) in apps.items()}


DEVICE_COLUMNS = ("rx_bytes", "rx_packets", "tx_bytes", "tx_packets")


def _devices(topology: Topology) -> dict[str, int]:
    """Packets and bytes of every device of the two endpoints' hosts (/proc/net/dev)."""
    found: dict[str, int] = {}
    for host in {e.host.name: e.host for e in (topology.sender, topology.receiver)}.values():
        text = host.run(["cat", "/proc/net/dev"], timeout=10.0).stdout
        found.update({f"{host.name}:{name}": value for name, value in parse_dev(text.splitlines()).items()
                      if name.endswith(DEVICE_COLUMNS)})
    return found


TaskGroups = Mapping[str, tuple[tuple[int | None, Host | None], ...]]


def _task_groups(apps: Mapping[str, tuple[int | None, Host | None]], kernel_threads: Mapping[int, int],
                 topology: Topology | None = None) -> TaskGroups:
    """label → every process under it: the applications one each, "napi_core<N>" every
    NAPI thread pinned to core N (a core can have several: one per steered device), and
    "ksoftirqd_core<N>" the softirq thread of each local role's core (receive work the
    kernel deferred from interrupt exit runs there, and is timed there)."""
    groups: dict[str, tuple[tuple[int | None, Host | None], ...]] = {
        label: (app,) for label, app in apps.items() if not label.startswith("napi_core")}
    for pid, core in kernel_threads.items():
        groups[f"napi_core{core}"] = groups.get(f"napi_core{core}", ()) + ((pid, None),)
    if topology is not None and not topology.role_hosts:  # the roles' cores are this machine's
        for core in sorted(set(topology.roles.values())):
            pid = _ksoftirqd(core)
            if pid is not None:
                groups[f"ksoftirqd_core{core}"] = ((pid, None),)
    return groups


def _ksoftirqd(core: int) -> int | None:
    """The pid of `ksoftirqd/<core>` on this machine."""
    wanted = f"ksoftirqd/{core}"
    for comm in Path("/proc").glob("[0-9]*/comm"):
        try:
            if comm.read_text().strip() == wanted:
                return int(comm.parent.name)
        except OSError:
            continue
    return None


def _task_ns(groups: TaskGroups) -> dict[str, int | None]:
    """Each group's time on CPU by the scheduler's nanosecond clock, every thread of
    every process in it; None when none of them could be read."""
    found: dict[str, int | None] = {}
    for label, members in groups.items():
        times = [t for t in (cpu.task_ns(pid, host) for pid, host in members if pid) if t is not None]
        found[label] = sum(times) if times else None
    return found


def _task_counters(topology: Topology, before: Mapping[str, int | None], after: Mapping[str, int | None],
                   window_s: float) -> dict[str, float]:
    """Per process "<label>_ns_pct" (% of one core, ns clock); per role the sum over the
    tasks pinned to its core ("role_tasks_pct.<role>"); and "cpu_refused.<role>" when
    that sum exceeds what the core had over the window (the sample's CPU is then refused)."""
    sender, receiver = topology.sender, topology.receiver
    where = {"sender_app": (sender.host.machine, sender.core), "receiver_app": (receiver.host.machine, receiver.core)}
    counters: dict[str, float] = {}
    on_core: dict[tuple[str, int], float] = {}
    for label, start in before.items():
        percent = cpu.task_percent(start, after.get(label), window_s)
        if percent is None:
            continue
        counters[f"{label}_ns_pct"] = percent
        # NAPI and softirq threads ("napi_core<N>", "ksoftirqd_core<N>") are this
        # machine's kernel threads of core N.
        home = where.get(label) or ("local", int(label.rsplit("_core", 1)[1]))
        on_core[home] = on_core.get(home, 0.0) + percent
    located = {"sender": where["sender_app"], "receiver": where["receiver_app"]}
    role_tasks = {}
    for role, core in topology.roles.items():
        home = located.get(role, (sender.host.machine, core))
        if home in on_core:
            role_tasks[role] = on_core[home]
    counters.update({f"{cpu.ROLE_TASKS_PREFIX}{role}": used for role, used in role_tasks.items()})
    if on_core:  # every core once, however many roles share it
        counters[cpu.TASKS_TOTAL] = sum(on_core.values())
    refused = cpu.refused_roles(role_tasks, {role: 1 for role in role_tasks})
    counters.update({f"{cpu.REFUSED_PREFIX}{role}": used for role, used in refused.items()})
    return counters


def _app_counters(before: Mapping[str, ProcessTimes | None],
                  after: Mapping[str, ProcessTimes | None], window_s: float) -> dict[str, float]:
    """Our processes' own usr/sys (iperf3 client and server, NAPI threads; % of one core)."""
    counters: dict[str, float] = {}
    for label in before:
        percent = process_percent(before[label], after.get(label), window_s)
        if percent is not None:
            counters[f"{label}_usr_pct"] = percent["usr"]
            counters[f"{label}_sys_pct"] = percent["sys"]
    return counters


def _sample(case: CaseSpec, repetition: int, result: TrafficResult, window: Window,
            topology: Topology) -> Sample:
    roles, role_hosts = topology.roles, topology.role_hosts
    return Sample(
        case_key=case.key,
        repetition=repetition,
        started_at=window.started_at,
        duration_s=result.window_s,
        throughput_bps=result.throughput_bps,
        sender_bps=result.sender_bps,
        retransmits=result.retransmits,
        lost_packets=result.lost_packets,
        total_packets=result.total_packets,
        cpu=window.shares,
        roles=dict(roles),
        role_hosts=dict(role_hosts),
        counters=dict(window.counters),
        intervals=result.intervals,
    )


@contextlib.contextmanager
def _prompt() -> Iterator[None]:
    """The lab's own process in the lowest real-time class while it times a window: the
    test saturates the cores, and at normal priority the lab woke tens of milliseconds
    late for its snapshots (CPU windows 20 % off a 0.7 s window on this 2-core machine).
    It only sleeps and reads a few files meanwhile; what it starts meanwhile (a latency
    probe, an SSH read) is reset to the normal class on fork. Without the right to (not
    root) it keeps its class."""
    try:
        previous = os.sched_getscheduler(0), os.sched_getparam(0)
        os.sched_setscheduler(0, os.SCHED_FIFO | os.SCHED_RESET_ON_FORK, os.sched_param(1))
    except PermissionError:
        yield
        return
    try:
        yield
    finally:
        os.sched_setscheduler(0, previous[0], previous[1])


def _sleep_until(deadline: float) -> None:
    remaining = deadline - time.monotonic()
    if remaining > 0:
        time.sleep(remaining)
