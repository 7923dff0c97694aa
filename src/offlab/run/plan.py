"""Test plans: TOML files → an ordered list of `CaseSpec`s.

A plan names scenarios, MTUs and traffic; each study (studies/) reads its own keys
and adds profiles, replaces or multiplies scenarios, or multiplies workloads. The
cross product of scenario variants × MTUs × workloads × profiles, in that order, is
the list of cases. Every mistake is reported as one line naming the file, the key,
what is wrong and how to fix it.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from typing import Any

from ..measure.latency import RR_MIN_WINDOW_S
from ..records import CaseSpec, Params, RunSettings, TrafficSpec
from ..studies import registered
from ..studies.base import Profile, Study, Variant
from ..topology import MTU_RANGE, SCENARIOS
from ..measure.traffic import report_interval, whole_seconds

TRAFFIC = {
    "tcp": {"protocol": "tcp"},
    "udp1472": {"protocol": "udp", "udp_payload": 1472},
    "udp18": {"protocol": "udp", "udp_payload": 18},
    "tcp-rr": {"protocol": "tcp", "mode": "rr"},
    "udp-rr": {"protocol": "udp", "mode": "rr"},
    "udp1472-plain": {"protocol": "udp", "udp_payload": 1472, "generator": "udpload"},
    "udp1472-gso": {"protocol": "udp", "udp_payload": 1472, "generator": "udpload", "udp_gso": True},
}
"""Named workloads: TCP stream; UDP in 1500 B frames (1472 B payload); UDP in 60 B
frames (18 B payload, the Ethernet minimum); TCP and UDP request/response (sockperf
ping-pong, 64 B each way: netperf's TCP_RR and UDP_RR); UDP 1472 from offlab-udpload,
one datagram per send ("plain") or with UDP_SEGMENT at the sender and UDP_GRO at the
receiver ("gso"), the UDP counterparts of TSO and GRO (udpload.py)."""
RATE_UNITS = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9}
MAX_STREAMS = 128

MAX_RUNS = 1000
MAX_DURATION_S = 3600.0
MAX_WARMUP_S = 600.0
"""Bounds of a plan: beyond them a value is a typo, not a measurement."""
_KEYS = {"name", "description", "runs", "duration", "warmup", "scenarios", "mtus", "traffic",
         "steer_rx_softirq", "udp_rate", "loss_threshold", "streams", "latency_probe", "underlay", "vlan",
         "ci_target", "max_runs", "service_demand"}
"""The pipeline's own keys; each study adds its own (`Study.keys`)."""


class PlanError(ValueError):
    """A plan that cannot be run; the message is one line with the fix."""


@dataclass(frozen=True)
class Plan:
    name: str
    source: str
    runs: int
    cases: tuple[CaseSpec, ...]
    description: str = ""
    steer_rx_softirq: bool = True
    adaptive: tuple[float, int, int] | None = None
    """The plan's own adaptive rule: (CI target as a fraction, min runs, max runs)."""

    def with_overrides(self, runs: int | None = None, duration: float | None = None,
                       warmup: float | None = None) -> "Plan":
        """The same plan with command-line overrides applied (validated like the file)."""
        where = f"{self.source}: command line"
        if runs is not None and not 1 <= runs <= MAX_RUNS:
            raise PlanError(f"{where}: --runs {runs} must be from 1 to {MAX_RUNS}")
        if duration is not None and not 0 < duration <= MAX_DURATION_S:  # also refuses nan
            raise PlanError(f"{where}: --duration {duration:g} must be more than 0 and at most "
                            f"{MAX_DURATION_S:g} seconds")
        if warmup is not None:
            if not 0 <= warmup <= MAX_WARMUP_S:
                raise PlanError(f"{where}: --warmup {warmup:g} must be from 0 to {MAX_WARMUP_S:g} seconds")
            _check_warmup(warmup, f"{where}: --warmup")
        for case in self.cases[:1]:
            _check_total(case.traffic.warmup_s if warmup is None else warmup,
                         case.traffic.duration_s if duration is None else duration,
                         f"{where}: warm-up + --duration")
        cases = tuple(
            c if c.traffic.service_demand else  # paced runs keep their own window
            replace(c, traffic=replace(
                c.traffic,
                duration_s=c.traffic.duration_s if duration is None else duration,
                warmup_s=c.traffic.warmup_s if warmup is None else warmup,
            ))
            for c in self.cases
        )
        # --runs asks for a fixed count: it replaces the plan's adaptive rule.
        return replace(self, runs=self.runs if runs is None else runs, cases=cases,
                       adaptive=self.adaptive if runs is None else None)

    def settings(self, ci_target: float | None = None, min_runs: int | None = None,
                 max_runs: int | None = None) -> RunSettings:
        """The run settings of this plan: adaptive repetitions as given on the command
        line, else the plan's own rule, else a fixed count."""
        if ci_target is None and self.adaptive is not None:
            ci_target, min_runs, max_runs = self.adaptive
        return RunSettings(repetitions=self.runs, steer_rx_softirq=self.steer_rx_softirq,
                           ci_target=ci_target, min_runs=min_runs, max_runs=max_runs)


def builtin_names() -> list[str]:
    folder = resources.files("offlab") / "plans"
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".toml"))


def load(plan: str) -> Plan:
    """A built-in plan by name, or a TOML file by path."""
    if plan in builtin_names():
        text = (resources.files("offlab") / "plans" / f"{plan}.toml").read_text()
        return parse(text, source=f"{plan} (built-in)")
    path = Path(plan)
    if not path.is_file():
        raise PlanError(
            f"{plan}: no such plan file; use one of {', '.join(builtin_names())} or a .toml path"
        )
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise PlanError(f"{plan}: not UTF-8 text (byte {err.start}); save the plan as UTF-8 TOML") from None
    except OSError as err:
        raise PlanError(f"{plan}: cannot read it ({err.strerror})") from None
    return parse(text, source=str(path))


def parse(text: str, source: str, studies: tuple[Study, ...] | None = None) -> Plan:
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise PlanError(f"{source}: not valid TOML: {err}") from None
    studies = registered() if studies is None else studies
    check = _Checker(source, doc)
    check.no_unknown_keys(doc, _KEYS.union(*(s.keys for s in studies)), "")
    runs = check.integer("runs", minimum=1, maximum=MAX_RUNS)
    duration = check.number("duration", above=0, at_most=MAX_DURATION_S)
    warmup = check.number("warmup", at_least=0, at_most=MAX_WARMUP_S, default=1.0)
    _check_warmup(warmup, f"{source}: key 'warmup'")
    _check_total(warmup, duration, f"{source}: keys 'warmup' + 'duration'")
    variants = [Variant(s, _link_params(check, s)) for s in check.choices("scenarios", sorted(SCENARIOS))]
    mtus = check.mtus("mtus")
    traffic = [
        TrafficSpec(duration_s=duration, warmup_s=warmup, **TRAFFIC[t], **_traffic_options(check, t))  # type: ignore[arg-type]
        for t in check.choices("traffic", list(TRAFFIC))
    ]
    for study in studies:
        variants = study.scenarios(check, variants)
    for study in studies:
        traffic = study.traffic(check, traffic)
    traffic += _service_demand(check, traffic)
    cases = []
    for variant in variants:
        profiles = [p for study in studies for p in study.profiles(check, variant)]
        if not profiles:
            raise PlanError(f"{source}: key 'sequences': no offload profiles; set sequences to "
                            "some of tx, rx, tx-single, rx-single, all-on or add [[profiles]]")
        for mtu in mtus:
            for spec in traffic:
                made = (_finished(studies, _case(variant, mtu, spec, p)) for p in profiles
                        if p.protocols is None or spec.protocol in p.protocols)
                cases.extend(c for c in made if all(study.keeps(c) for study in studies))
    return Plan(
        name=check.string("name"),
        source=source,
        runs=runs,
        cases=tuple(cases),
        description=check.string("description", default=""),
        steer_rx_softirq=check.boolean("steer_rx_softirq", default=True),
        adaptive=_adaptive_rule(check, runs),
    )


def _adaptive_rule(check: "_Checker", runs: int) -> tuple[float, int, int] | None:
    """`ci_target = 10` (percent) with `max_runs`: repeat each case from `runs` runs up
    to `max_runs` until its 95 % CI is within the target (capacity searches excepted)."""
    if "ci_target" not in check.doc:
        if "max_runs" in check.doc:
            raise check.fail("max_runs", "bounds adaptive repetitions; add ci_target (percent)")
        return None
    target = check.number("ci_target", above=0.0, at_most=99.0, unit="percent")
    highest = check.integer("max_runs", minimum=max(runs, 2), maximum=MAX_RUNS)
    if runs < 2:
        raise check.fail("runs", "an adaptive rule needs at least 2 runs before its first check")
    return target / 100.0, runs, highest


LINKED = ("bare", "vxlan", "geneve", "gre", "gretap", "ipip", "sit")
"""Scenarios over one veth link, which take an underlay family and a VLAN."""


def _link_params(check: "_Checker", scenario: str) -> Params:
    """The plan's `underlay` ("ipv4"/"ipv6") and `vlan` (an 802.1Q id) for the two-host
    scenarios; the defaults (IPv4, untagged) are left out so case keys stay as they were."""
    found: dict[str, Any] = {}
    underlay = check.doc.get("underlay", "ipv4")
    if underlay not in ("ipv4", "ipv6"):
        raise check.fail("underlay", f"{underlay!r} is not known; use \"ipv4\" or \"ipv6\"")
    vlan = check.doc.get("vlan")
    if vlan is not None and (isinstance(vlan, bool) or not isinstance(vlan, int) or not 1 <= vlan <= 4094):
        raise check.fail("vlan", f"{vlan!r} must be an 802.1Q id from 1 to 4094")
    if (underlay != "ipv4" or vlan is not None) and scenario not in LINKED:
        raise check.fail("underlay" if underlay != "ipv4" else "vlan",
                         f"scenario {scenario!r} has no underlay link to set; use {', '.join(LINKED)}")
    if underlay != "ipv4":
        found["underlay"] = underlay
    if vlan is not None:
        found["vlan"] = vlan
    return Params(found)


def _traffic_options(check: "_Checker", name: str) -> dict[str, Any]:
    """The plan's rate, loss bound, streams and latency probe, for the workloads they
    apply to: UDP takes a rate or the capacity search, TCP streams the probe."""
    options: dict[str, Any] = {}
    protocol, mode = TRAFFIC[name]["protocol"], TRAFFIC[name].get("mode", "stream")
    loss = check.number("loss_threshold", at_least=0.0, at_most=50.0, default=0.1, unit="percent")
    options["loss_percent"] = loss
    if protocol == "udp" and mode == "stream":
        rate = check.doc.get("udp_rate", "unlimited")
        if rate == "capacity":
            options["mode"] = "capacity"
        elif rate != "unlimited":
            options["rate_bps"] = _rate(check, rate)
    streams = check.doc.get("streams", 1)
    if isinstance(streams, bool) or not isinstance(streams, int) or not 1 <= streams <= MAX_STREAMS:
        raise check.fail("streams", f"{streams!r} must be a whole number from 1 to {MAX_STREAMS}")
    if mode == "stream":
        options["streams"] = streams
    if protocol == "tcp" and mode == "stream":
        options["latency_probe"] = check.boolean("latency_probe", default=False)
    return options


SERVICE_DEMAND_KEYS = {"percent", "duration", "warmup"}


MIN_PACED_S = 5.0
"""A paced run's shortest window: its CPU per Gbit/s is the figure it exists for, and the
tick-sampled part of CPU time (softirq, irq) needs seconds to be worth stating."""


def _service_demand(check: "_Checker", traffic: list[TrafficSpec]) -> list[TrafficSpec]:
    """`[service_demand]` (percent, duration, warmup): each TCP stream also paced at
    `percent` of the slowest saturated profile's throughput in its topology (the runner
    sets the rate), measured over its own window (at least MIN_PACED_S); with `latency_probe`, with a
    paced TCP request/response beside it."""
    table = check.doc.get("service_demand")
    if table is None:
        return []
    where = "service_demand"
    if not isinstance(table, dict):
        raise check.fail(where, "must be a table: [service_demand] with percent, duration, warmup")
    check.no_unknown_keys(table, SERVICE_DEMAND_KEYS, where + ".")
    sub = _Checker(check.source, {f"{where}.{k}": v for k, v in table.items()})
    percent = sub.number(f"{where}.percent", above=0.0, at_most=95.0, unit="percent")
    paced = [spec for spec in traffic if spec.protocol == "tcp" and spec.mode == "stream"]
    if not paced:
        raise check.fail(where, "paces TCP streams; add \"tcp\" to traffic or remove it")
    duration = sub.number(f"{where}.duration", at_least=MIN_PACED_S, at_most=MAX_DURATION_S,
                          default=max(MIN_PACED_S, paced[0].duration_s))
    warmup = sub.number(f"{where}.warmup", at_least=0, at_most=MAX_WARMUP_S, default=paced[0].warmup_s)
    _check_warmup(warmup, f"{check.source}: key '{where}.warmup'")
    _check_total(warmup, duration, f"{check.source}: keys '{where}.warmup' + '{where}.duration'")
    # A plan with latency_probe measures latency at this fixed paced load too (paced TCP
    # request/response, latency_probes.py); MIN_PACED_S holds sockperf's whole seconds.
    assert MIN_PACED_S >= RR_MIN_WINDOW_S
    return [replace(spec, service_demand=percent / 100.0, latency_probe=spec.latency_probe,
                    duration_s=duration, warmup_s=warmup) for spec in paced]


def _rate(check: "_Checker", value: Any) -> float:
    """"2.5G", "500M", 1e9 → bits per second."""
    text = str(value).strip().upper()
    number, unit = (text[:-1], text[-1]) if text[-1:] in RATE_UNITS and text[-1:] else (text, "")
    try:
        bps = float(number) * RATE_UNITS[unit]
    except ValueError:
        bps = -1.0
    if isinstance(value, bool) or not 1e3 <= bps <= 1e12:
        raise check.fail("udp_rate", f"{value!r} must be \"capacity\", \"unlimited\" or a rate from "
                                     "1K to 1000G bit/s, e.g. \"2.5G\"")
    return bps


def _case(variant: Variant, mtu: int, traffic: TrafficSpec, profile: Profile) -> CaseSpec:
    return CaseSpec(variant.scenario, mtu, profile.offloads, traffic, variant.topology,
                    profile.params, profile.datapath,
                    variant.name if variant.name != variant.scenario else "")


def _finished(studies: tuple[Study, ...], case: CaseSpec) -> CaseSpec:
    for study in studies:
        case = study.finish(case)
    return case


def _check_warmup(warmup: float, where: str) -> None:
    try:
        report_interval(warmup)
    except ValueError:
        raise PlanError(f"{where}: {warmup} s is not a multiple of 0.1 s; use e.g. 0.5 or 1") from None


def _check_total(warmup: float, duration: float, where: str) -> None:
    """iperf3 runs whole seconds: warm-up + duration must be one; the advice names
    durations that fit the warm-up as it is."""
    total = warmup + duration
    try:
        whole_seconds(total)
    except ValueError:
        fits = sorted({t - warmup for t in (math.floor(total), math.ceil(total)) if t - warmup > 0})
        advice = " or ".join(f"{d:g}" for d in fits) or f"{math.ceil(warmup) + 1 - warmup:g}"
        raise PlanError(f"{where}: warm-up {warmup:g} s + duration {duration:g} s = {total:g} s, "
                        f"but iperf3 runs whole seconds; use a duration of {advice} s") from None


class _Checker:
    """Typed access to a plan document with one-line errors."""

    def __init__(self, source: str, doc: dict[str, Any]):
        self.source = source
        self.doc = doc

    def fail(self, key: str, problem: str) -> PlanError:
        return PlanError(f"{self.source}: key '{key}': {problem}")

    def get(self, key: str, default: Any) -> Any:
        if key in self.doc:
            return self.doc[key]
        if default is None:
            raise self.fail(key, "missing; add it to the plan")
        return default

    def no_unknown_keys(self, table: dict[str, Any], allowed: set[str], prefix: str) -> None:
        for key in table:
            if key not in allowed:
                raise self.fail(prefix + key, f"unknown key; allowed: {', '.join(sorted(allowed))}")

    def string(self, key: str, default: str | None = None) -> str:
        value = self.get(key, default)
        if not isinstance(value, str) or (default is None and not value):
            raise self.fail(key, f"{value!r} must be a non-empty string")
        return value

    def boolean(self, key: str, default: bool) -> bool:
        value = self.get(key, default)
        if not isinstance(value, bool):
            raise self.fail(key, f"{value!r} must be true or false")
        return value

    def integer(self, key: str, minimum: int, maximum: int) -> int:
        value = self.get(key, None)
        if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
            raise self.fail(key, f"{value!r} must be a whole number from {minimum} to {maximum}")
        return value

    def number(self, key: str, above: float | None = None, at_least: float | None = None,
               at_most: float | None = None, default: float | None = None, unit: str = "seconds") -> float:
        value = self.get(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
            raise self.fail(key, f"{value!r} must be a number of {unit}")
        if at_most is not None and value > at_most:
            raise self.fail(key, f"{value:g} must be at most {at_most:g} {unit}")
        if above is not None and value <= above:
            raise self.fail(key, f"{value} must be more than {above:g}")
        if at_least is not None and value < at_least:
            raise self.fail(key, f"{value} must be at least {at_least:g}")
        return float(value)

    def mtus(self, key: str) -> list[int]:
        """A non-empty list of MTUs within MTU_RANGE, each once (a device may still
        refuse one: the topology then names the range it accepts)."""
        value = self.get(key, None)
        low, high = MTU_RANGE
        if not isinstance(value, list) or not value or any(
                isinstance(m, bool) or not isinstance(m, int) or not low <= m <= high for m in value):
            raise self.fail(key, f"{value!r} must be a list of MTUs from {low} to {high}, e.g. [1500, 9000]")
        if len(set(value)) != len(value):
            raise self.fail(key, f"{value!r} lists an MTU twice; list each once")
        return value

    def choices(self, key: str, allowed: list[Any], default: list[Any] | None = None) -> list[Any]:
        value = self.get(key, default)
        if not isinstance(value, list) or (default is None and not value):
            raise self.fail(key, f"{value!r} must be a non-empty list of {_listing(allowed)}")
        for item in value:
            if item not in allowed:
                raise self.fail(key, f"{item!r} is not known; use {_listing(allowed)}")
        if len(set(map(str, value))) != len(value):
            raise self.fail(key, f"{value!r} lists an entry twice; list each once")
        return value

    def error(self, problem: str) -> PlanError:
        return PlanError(f"{self.source}: {problem}")


def _listing(items: Any) -> str:
    return ", ".join(repr(i) for i in items)
