"""One repetition of a UDP capacity case: the rate search (ratesearch.py) over short
probes, then RFC 2544's verification — the rate found offered once more, paced and
never above the highest passing probe, for the plan's full warm-up + duration — and the loss of every trial attributed to its cause
(losscause.py) from kernel counters read just before and after that trial.

The sample is the verification trial (its throughput, loss, CPU window); every trial,
search probes first, is kept in `Sample.probes`. Counters added to the sample:

* `capacity_probes` (search probes; the rest of `probes` are verification trials),
  `capacity_bracket_low_bps`/`_high_bps`, `capacity_resolution`,
  `capacity_sender_bound`, `capacity_verified`, `capacity_steps_down`,
  `capacity_ceiling_bps` (the highest rate a passing probe offered: no verification
  trial offers more), `capacity_offered_bps` (what the last verification trial
  offered, paced), `capacity_monotone` (0 when a probe passed above a failing one);
* `loss_*`: the verification trial's loss by cause; `limit_loss_*`: the loss of the
  last verification trial that failed, else of the failing probe nearest above the
  capacity, else (sender-bound) of the unlimited probe — what bounds it — and
  `limit_receiver_app_pct`, the receiving application's CPU during that probe, and
  `limit_{sender,receiver}_core_pct` / `_core_soft_pct`, how busy the two endpoints'
  cores were then (all of it, and softirq alone).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Callable, Sequence

from . import counters, losscause, ratesearch
from ..records import CaseSpec, CpuShare, RateProbe, Sample, TrafficSpec
from .window import Window

if TYPE_CHECKING:
    from ..hosts import Host
    from ..topology import Topology
    from .traffic import TrafficResult

PROBE_SECONDS = 1.0
"""Each iperf3 search probe: 0.3 s warm-up, 0.7 s measured (iperf3 runs whole seconds)."""
PROBE_WARMUP_S = 0.3
UDPLOAD_PROBE_SECONDS = 0.5
"""Each offlab-udpload probe: 0.15 s warm-up, 0.35 s measured (it times fractions of a
second, and has no control connection to set up)."""
UDPLOAD_PROBE_WARMUP_S = 0.15
RESOLUTION = 0.05
MAX_PROBES = 8
"""The search's stop: the knee within 5 %, or eight probes. A coarser grid put the
found rate one grid step apart in different runs (a 15 % grid gave the same case
1.9 and 2.3 Gbit/s): the search's resolution, not the path, was the spread."""
VERIFICATION_TRIALS = 3
VERIFICATION_STEP_RESOLUTIONS = 2
"""At most two steps down, of two resolution steps (~10 %) each, when the full-length
trial at the found rate loses too much. A probe is short (0.35 s measured with udpload)
and the verification trial long (the plan's duration): on a quiet 2-core machine a rate
that passed its probe lost 0.1-0.5 % over 1.5 s in most runs (the receive softirq's core
near saturation drops a burst now and then), and one 5 % step was rarely enough."""


def probe_timing(spec: TrafficSpec) -> tuple[float, float]:
    """(warm-up, measured) seconds of one search probe with this traffic's tool."""
    if spec.generator == "udpload":
        return UDPLOAD_PROBE_WARMUP_S, UDPLOAD_PROBE_SECONDS - UDPLOAD_PROBE_WARMUP_S
    return PROBE_WARMUP_S, PROBE_SECONDS - PROBE_WARMUP_S


def expected_seconds(spec: TrafficSpec) -> float:
    """Traffic time of one capacity sample when its first verification trial passes:
    every probe and that trial (each failed verification adds one more)."""
    return MAX_PROBES * sum(probe_timing(spec)) + spec.warmup_s + spec.duration_s


RunIperf = Callable[[TrafficSpec, str], "tuple[TrafficResult, Window]"]
MakeSample = Callable[[CaseSpec, int, "TrafficResult", "Window", "Topology"], Sample]


@dataclass(frozen=True)
class Trial:
    """One iperf3 test at an offered rate (0: unlimited), with its loss by cause."""

    offered_bps: float
    result: "TrafficResult"
    window: "Window"
    causes: losscause.LossCauses

    @property
    def probe(self) -> RateProbe:
        return RateProbe(self.offered_bps, self.result.sender_bps, self.result.throughput_bps,
                         self.result.loss_percent or 0.0)


def rule_of(spec: TrafficSpec) -> ratesearch.SearchRule:
    return ratesearch.SearchRule(loss_percent=spec.loss_percent, resolution=RESOLUTION, max_probes=MAX_PROBES)


def measure_capacity(topology: "Topology", case: CaseSpec, repetition: int, run_iperf: RunIperf,
                     make_sample: MakeSample) -> Sample:
    spec = case.traffic
    label = f"{case.key} run {repetition}"
    search_trials: list[Trial] = []
    verify_trials: list[Trial] = []

    probe_warmup, probe_measured = probe_timing(spec)

    def probe(rate: float) -> RateProbe:
        search_trials.append(_trial(topology, spec, rate, probe_warmup, probe_measured,
                                    run_iperf, f"{label} probe"))
        return search_trials[-1].probe

    def full_length(rate: float) -> RateProbe:
        verify_trials.append(_trial(topology, spec, rate, spec.warmup_s, spec.duration_s, run_iperf,
                                    f"{label} verification"))
        return verify_trials[-1].probe

    rule = rule_of(spec)
    found = ratesearch.search(probe, rule)
    checked = ratesearch.verify(full_length, found, rule, VERIFICATION_TRIALS,
                                VERIFICATION_STEP_RESOLUTIONS)
    final = verify_trials[-1]
    # What bounds the capacity: a full-length trial that failed says it best; else the
    # failing search probe nearest above the rate found; a sender-bound search has none,
    # and its unlimited probe shows the sender's core at its maximum.
    failed = [t for t in verify_trials if not ratesearch.passed(t.probe, rule.loss_percent)]
    limit = search_trials[0].probe if found.sender_bound else ratesearch.limiting_probe(found, rule)
    limit_trial = failed[-1] if failed else \
        next((t for t in search_trials if t.probe == limit), None) if limit else None
    added = {
        "capacity_probes": float(len(found.probes)),
        "capacity_bracket_low_bps": found.bracket[0],
        "capacity_bracket_high_bps": found.bracket[1] if found.bracket[1] != float("inf") else 0.0,
        "capacity_resolution": RESOLUTION,
        "capacity_sender_bound": float(found.sender_bound),
        "capacity_verified": float(checked.passed),
        "capacity_steps_down": float(checked.steps_down),
        "capacity_ceiling_bps": ratesearch.ceiling(found, rule),
        "capacity_offered_bps": final.offered_bps,
        "capacity_monotone": float(ratesearch.monotone(found.probes + checked.tried, rule)),
        **final.causes.counters("loss"),
        **(_limit_counters(limit_trial, topology) if limit_trial else {}),
    }
    window = replace(final.window, counters={**final.window.counters, **added})
    sample = make_sample(case, repetition, final.result, window, topology)
    return replace(sample, probes=found.probes + checked.tried)


def verified(samples: Sequence[Sample]) -> tuple[Sample, ...]:
    """The samples whose verification trial passed: a capacity is their mean. A sample
    without the counter (stored before verification existed) counts as it was reported."""
    return tuple(s for s in samples if s.counters.get("capacity_verified", 1.0) == 1.0)


def _limit_counters(trial: Trial, topology: "Topology") -> dict[str, float]:
    """The limiting probe's loss by cause, how busy the receiving application was then,
    and how busy the sender's and the receiver's cores were (the receive softirq shares
    the receiver's core): a buffer that overflows under a saturated receiver is the
    receiver's limit, one that overflows under an idle receiver is a scheduling hiccup
    (losscause.py, report/capacity_limits.py)."""
    found = trial.causes.counters("limit_loss")
    app = [trial.window.counters.get(f"receiver_app_{k}_pct") for k in ("usr", "sys")]
    if all(v is not None for v in app):
        found["limit_receiver_app_pct"] = float(sum(app))  # type: ignore[arg-type]
    for role, end in (("sender", topology.sender), ("receiver", topology.receiver)):
        share = _core_share(trial.window, topology, end.host, end.core)
        if share is not None:
            found[f"limit_{role}_core_pct"] = _own_busy(share)
            found[f"limit_{role}_core_soft_pct"] = share.percent.get("soft", 0.0)
    return found


def _core_share(window: "Window", topology: "Topology", host: "Host", core: int) -> CpuShare | None:
    """The CPU share of one endpoint's core in a trial's window: shares are labelled ""
    when both endpoints share this machine's cores, else by the host's name."""
    label = "" if "" in topology.cpu_machines() else host.name
    return next((share for share in window.shares if share.host == label and share.core == core), None)


def _own_busy(share: CpuShare) -> float:
    """A core's busy share without niced work: the lab's processes run at nice 0, so
    `nice` time is someone else's background work the lab's load pre-empted."""
    return max(0.0, share.busy - share.percent.get("nice", 0.0))


def _trial(topology: "Topology", spec: TrafficSpec, rate: float, warmup_s: float, duration_s: float,
           run_iperf: RunIperf, label: str) -> Trial:
    trial_spec = replace(spec, mode="stream", rate_bps=rate or None, warmup_s=warmup_s, duration_s=duration_s)
    before = snapshot(topology)
    result, window = run_iperf(trial_spec, label)
    grown = counters.delta(before, snapshot(topology))
    causes = losscause.attribute(result.lost_packets or 0, grown, topology.sender.host.name,
                                 topology.receiver.host.name)
    return Trial(rate, result, window, causes)


def snapshot(topology: "Topology") -> dict[str, int]:
    """Every counter a drop can show in: the kernel's /proc/net files and NIC counters of
    every host, each host's qdisc drops, and the receiving machine's backlog drops."""
    hosts = topology.counter_hosts()
    found = counters.snapshot_many(hosts, topology.nic_interfaces())
    for name, host in hosts.items():
        done = host.run(["tc", "-s", "-j", "qdisc", "show"], timeout=10.0, check=False)
        if done.returncode == 0:
            found.update({f"{name}:{k}": int(v) for k, v in losscause.parse_qdisc(done.stdout).items()})
    try:
        found["softnet.dropped"] = int(losscause.parse_softnet(
            topology.receiver.host.read_file("/proc/net/softnet_stat")))
    except FileNotFoundError:
        pass
    return found
