"""Checks made before a run writes anything: privileges, tools, the plan's size against
a time ceiling — and the description `offlab run --dry-run` prints instead of running.

Each failure is one line with its fix; nothing here creates a file, a directory, a
namespace or a run record.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from typing import Iterable, Sequence

from ..measure import capacity
from ..records import CaseSpec, RunSettings

SAMPLE_OVERHEAD_S = 0.5
"""Per sample beyond its traffic: the tool's start and report, ethtool read-back, counters.
Measured: a quick run (20261128-073012, loaded 2-core VM) started each sample 0.46 s
(saturated TCP) and 0.52 s (paced) after the previous one's window plus its warm-up."""
PACED_OVERHEAD_S = 1.9
"""Per paced (service-demand) sample beyond its traffic: its sockperf request/response
probe's server and client start and stop around the window, and the pace is set.
Measured: the quick plan of 20261128-105914 (16 cases, shared 2-core VM) started each
paced sample a median 1.93 s (max 2.08 s) after the previous one's window plus its
warm-up, against 0.36 s for a saturated one; at 0.5 s the plan's estimate was 16 %
short (3 min 55 s against 4 min 24 s of measuring)."""
PROBE_OVERHEAD_S = 0.35
"""Per probe of a capacity search beyond its traffic (the same run: 8.7 s per capacity
sample, median 7.5 probes of 0.5 s and a 2 s trial)."""
BUILD_S = 1.0
"""Per topology: namespaces, links, steering, servers, teardown (the same run: a
topology's first sample came 0.2 s later than the others; room for a forwarder's start)."""
REPORT_S = 15.0
"""Per run: the report's tables and charts (12.5 s of CPU for that run's report)."""
GUEST_BUILD_S = 30.0
"""Per topology with QEMU guests: their boot (about 7 s each under TCG, more side by side)."""
GUEST_SCENARIO = "qemu"
DEFAULT_MAX_ETA_S = 2 * 3600.0
TOOLS = {"iperf3": "iperf3", "ethtool": "ethtool", "ip": "iproute2"}


class PreflightError(Exception):
    """Something to fix before a run can start; the message is one line with the fix."""


@dataclass(frozen=True)
class Estimate:
    samples: int
    """Samples at each case's expected repetitions."""
    topologies: int
    seconds: float
    """Expected wall time: every case at its minimum repetitions."""
    ceiling_s: float = 0.0
    """Wall time if every adaptive case needs its maximum repetitions."""

    @property
    def text(self) -> str:
        if self.ceiling_s > self.seconds + 0.5:
            return f"{duration_text(self.seconds)} (at most {duration_text(self.ceiling_s)})"
        return duration_text(self.seconds)


def duration_text(seconds: float) -> str:
    """"2 h 05 min", "3 min 10 s", "45 s"."""
    seconds = round(seconds)
    if seconds >= 3600:
        return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"
    if seconds >= 60:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds} s"


def sample_seconds(case: CaseSpec) -> float:
    """One sample's wall time: a capacity search's probes and its verification trial, or
    the warm-up and the measured window, plus the per-sample overhead."""
    if case.traffic.mode == "capacity":
        return capacity.expected_seconds(case.traffic) + capacity.MAX_PROBES * PROBE_OVERHEAD_S + SAMPLE_OVERHEAD_S
    overhead = PACED_OVERHEAD_S if case.traffic.service_demand else SAMPLE_OVERHEAD_S
    return case.traffic.warmup_s + case.traffic.duration_s + overhead


def repetitions(case: CaseSpec, settings: RunSettings) -> tuple[int, int]:
    """(expected, at most) repetitions of a case. With adaptive repetitions only the
    saturated runs chase their CI (runner.py): a capacity search and a paced
    (service-demand) run always take the minimum. The expected count is the minimum: most
    cases meet the CI target there, and the ceiling says what the others can add."""
    if settings.ci_target is None or not settings.max_runs:
        return settings.repetitions, settings.repetitions
    low = settings.min_runs or settings.repetitions
    if case.traffic.mode == "capacity" or case.traffic.service_demand:
        return low, low
    return low, max(low, settings.max_runs)


def estimate(cases: Sequence[CaseSpec], settings: RunSettings, done: dict[str, int] | None = None) -> Estimate:
    """Expected wall time, phase by phase: each topology's build and teardown (a guest
    topology's boot), each sample (sample_seconds) times its case's repetitions, and the
    report; the ceiling counts adaptive cases at their maximum (what --max-eta is checked
    against)."""
    done = done or {}
    samples, seconds, ceiling = 0, 0.0, 0.0
    topologies = set()
    for case in cases:
        expected, most = repetitions(case, settings)
        left, left_most = max(0, expected - done.get(case.key, 0)), max(0, most - done.get(case.key, 0))
        if not left_most:
            continue
        samples += left
        seconds += left * sample_seconds(case)
        ceiling += left_most * sample_seconds(case)
        topologies.add((case.scenario, case.mtu, case.topology))
    fixed = sum(GUEST_BUILD_S if scenario == GUEST_SCENARIO else BUILD_S for scenario, _, _ in topologies)
    fixed += REPORT_S if topologies else 0.0
    return Estimate(samples, len(topologies), seconds + fixed, ceiling + fixed)


def check_eta(eta: Estimate, max_eta_s: float, confirmed: bool) -> None:
    if max(eta.seconds, eta.ceiling_s) > max_eta_s and not confirmed:
        raise PreflightError(f"this run would take about {eta.text} ({eta.samples} samples), more "
                             f"than --max-eta {duration_text(max_eta_s)}; lower --runs or --duration, "
                             "or pass --yes to run it anyway")


def check_privileges() -> None:
    if os.geteuid() != 0:
        raise PreflightError("offlab run needs root: network namespaces, ethtool and cgroups need "
                             "CAP_NET_ADMIN and CAP_SYS_ADMIN; run it as root (sudo .venv/bin/offlab run …)")


def needs(cases: Iterable[CaseSpec]) -> set[str]:
    """What of the project's own builds the cases run: "offlab-fwd" (a userspace datapath,
    or guests on vhost-user), "offlab-udpload" (its UDP load), "guest" (QEMU guests'
    image). `make demo` builds only these (scripts/plan-needs.py)."""
    cases = list(cases)
    found = set()
    guests = [c for c in cases if c.scenario == GUEST_SCENARIO]
    if any(c.datapath is not None and c.datapath.forwarder for c in cases) \
            or any(str(c.topology.get("backend", "tap")) == "vhost-user" for c in guests):
        found.add("offlab-fwd")
    if any(c.traffic.generator == "udpload" for c in cases):
        found.add("offlab-udpload")
    if guests:
        found.add("guest")
    return found


def probe_tools(cases: Iterable[CaseSpec]) -> set[str]:
    """The latency probes' tools (latency_probes.py): irtt beside a saturating stream,
    sockperf beside a paced one and for request/response cases."""
    cases = list(cases)
    probed = [c.traffic for c in cases if c.traffic.latency_probe]
    found = {"irtt"} if any(not t.service_demand for t in probed) else set()
    if any(t.service_demand for t in probed) or any(c.traffic.mode == "rr" for c in cases):
        found.add("sockperf")
    return found


def check_tools(cases: Iterable[CaseSpec], datapath: frozenset[str] = frozenset()) -> None:
    """The tools the plan's cases need; offlab-fwd when a case has a userspace datapath."""
    missing = [f"{tool} (apt-get install {package})" for tool, package in TOOLS.items()
               if shutil.which(tool) is None]
    cases = list(cases)
    missing += [f"{tool} (apt-get install {tool})" for tool in sorted(probe_tools(cases))
                if shutil.which(tool) is None]
    if missing:
        raise PreflightError(f"missing {', '.join(missing)}; or run: make setup-demo")
    if any(c.datapath is not None and c.datapath.forwarder for c in cases):
        from ..topology.fwd import FwdError, find_binary  # the forwarder only matters for such plans
        try:
            find_binary()
        except FwdError as err:
            raise PreflightError(str(err)) from None
    if any(c.traffic.generator == "udpload" for c in cases):
        from ..measure.udpload import UdpLoadError
        from ..measure.udpload import find_binary as find_udpload
        try:
            find_udpload()
        except UdpLoadError as err:
            raise PreflightError(str(err)) from None


def check_guests(cases: Iterable[CaseSpec]) -> None:
    """A plan with QEMU guests: QEMU, the guest image, and every backend it names."""
    wanted = {str(c.topology.get("backend", "tap")) for c in cases if c.scenario == GUEST_SCENARIO}
    if not wanted:
        return
    from ..vm import GuestImageMissing, find_image
    from ..vm.profile import VHOST_NET
    if shutil.which("qemu-system-x86_64") is None:
        raise PreflightError("missing qemu-system-x86_64 (apt-get install qemu-system-x86); or run: make setup")
    try:
        find_image()
    except GuestImageMissing as missing:
        raise PreflightError(str(missing)) from None
    if "tap-vhost" in wanted and not os.path.exists(VHOST_NET):
        raise PreflightError(f"backend tap-vhost needs the kernel's vhost-net, but {VHOST_NET} does not exist "
                             "here (CONFIG_VHOST_NET); remove \"tap-vhost\" from the plan's backends")
    if "vhost-user" in wanted:
        from ..topology.fwd import FwdError, find_binary
        try:
            find_binary()
        except FwdError as err:
            raise PreflightError(str(err)) from None


def check_devices(cases: Iterable[CaseSpec]) -> None:
    """Every tunnel kind and VLAN the plan uses can be made by this kernel: tried once in
    a throw-away namespace, so a run does not fail half-way on a missing module."""
    from ..hosts import LocalNamespace
    from ..topology import SCENARIOS
    from ..topology.base import deferred_signals
    from ..topology.tunnel import Tunnel
    wanted = {(c.scenario, str(c.topology.get("underlay", "ipv4")), c.topology.get("vlan") is not None)
              for c in cases if c.scenario in SCENARIOS}
    wanted = {w for w in wanted if issubclass(SCENARIOS[w[0]], Tunnel) or w[2]}
    if not wanted:
        return
    probe = LocalNamespace("preflight")
    try:  # a Ctrl-C waits for the namespace to be made whole, and for it to be removed
        with deferred_signals():
            probe.create()
        for scenario, underlay, vlan in sorted(wanted):
            if vlan:
                done = probe.ip("link", "add", "link", "lo", "name", "ofl-pfq", "type", "vlan", "id", "1",
                                check=False)
                if done.returncode != 0:
                    raise PreflightError("this kernel cannot make VLAN devices (CONFIG_VLAN_8021Q); "
                                         "remove the plan's vlan key or use a kernel with 802.1Q")
            builder = SCENARIOS[scenario]
            if not issubclass(builder, Tunnel):
                continue
            kind = builder.kind
            local, remote = ("fd00::1", "fd00::2") if underlay == "ipv6" else ("10.0.0.1", "10.0.0.2")
            done = probe.ip(*kind.link_args("ofl-pft", underlay, local, remote, "lo"), check=False)
            if done.returncode != 0:
                raise PreflightError(f"this kernel cannot make {scenario} over {underlay} "
                                     f"({done.stderr.strip()}); it needs {kind.config}, or use vxlan")
            probe.ip("link", "del", "ofl-pft")
    finally:
        with deferred_signals():
            probe.remove()


REMOTE_PACKAGES = {"qemu-system-x86_64": "qemu-system-x86", "sha256sum": "coreutils", "timeout": "coreutils",
                   "taskset": "util-linux"}
"""The Debian package of a tool a server lacks, where its name is not the tool's."""


def check_remote(cases: Iterable[CaseSpec], hosts) -> None:
    """A plan on real hosts: scenarios that need local namespaces cannot run there, and
    the local machine needs the OpenSSH client."""
    from ..topology.remote import REMOTE_SCENARIOS
    if shutil.which("ssh") is None:
        raise PreflightError("missing ssh (apt-get install openssh-client)")
    cases = list(cases)
    local = sorted({c.scenario for c in cases if c.scenario not in REMOTE_SCENARIOS
                    and not (c.scenario == "middlebox" and hosts.router is not None)})
    if local:
        raise PreflightError(f"scenarios {local} need local namespaces; on real hosts use "
                             f"{', '.join(REMOTE_SCENARIOS)} (from {hosts.source})")
    from ..hosts.remote_doctor import missing_tools
    wanted = {"iperf3", "ethtool", "ip"}
    if any(c.traffic.generator == "udpload" for c in cases):
        _check_remote_udpload(cases, hosts)
        wanted |= {"sha256sum", "taskset"}  # its copy by hash (hosts/files.py), its pinning
    guests = [c for c in cases if c.scenario == GUEST_SCENARIO]
    if guests:
        _check_remote_guests(guests)
        wanted |= {"qemu-system-x86_64", "sha256sum", "taskset", "timeout"}
    # Latency probes (latency_probes.py): irtt beside a saturating stream, sockperf beside
    # a paced one, both pinned.
    probes = probe_tools(cases)
    wanted |= probes | ({"taskset"} if "irtt" in probes else set())
    for role, spec in hosts.hosts.items():
        missing = missing_tools(hosts, role, wanted)
        if missing:
            raise PreflightError(f"{role} ({spec.ssh}): {', '.join(missing)} not found there; install it on "
                                 f"{spec.ssh} (apt-get install {' '.join(REMOTE_PACKAGES.get(m, m) for m in missing)}), or check with "
                                 f"offlab doctor --hosts {hosts.source}")


def _check_remote_udpload(cases: list[CaseSpec], hosts) -> None:
    """offlab-udpload runs on the servers themselves (copied there by hash): this
    machine's build must exist, and it cannot run inside a guest."""
    from ..measure.udpload import UdpLoadError, find_binary
    in_guests = sorted({c.traffic.label for c in cases if c.traffic.generator == "udpload"
                        and c.scenario == GUEST_SCENARIO})
    if in_guests:
        raise PreflightError(f"traffic {', '.join(in_guests)} (offlab-udpload) runs on the servers, not inside "
                             f"the {GUEST_SCENARIO} scenario's guests; drop it from those cases ({hosts.source})")
    try:
        find_binary()
    except UdpLoadError as err:
        raise PreflightError(str(err)) from None


def _check_remote_guests(cases: list[CaseSpec]) -> None:
    """Guests on real hosts: the guest image here (it is copied to the servers) and
    only the backends built there."""
    from ..topology.remote_guests import BACKENDS
    from ..vm import GuestImageMissing, find_image
    try:
        find_image()
    except GuestImageMissing as missing:
        raise PreflightError(str(missing)) from None
    backends = {str(c.topology.get("backend", "tap")) for c in cases}
    other = sorted(backends - set(BACKENDS))
    if other:
        raise PreflightError(f"backend {', '.join(other)} is not one of {', '.join(BACKENDS)} on real hosts")
    if "vhost-user" in backends:
        from ..topology.fwd import FwdError, find_binary
        try:
            find_binary()  # copied to the servers by hash
        except FwdError as err:
            raise PreflightError(str(err)) from None


def foreign_load(seconds: float = 1.0) -> tuple[float, list[tuple[str, float]]]:
    """CPU used by other processes over `seconds` before the run (percent of one core)
    and the busiest of them: the idle-machine check."""
    import time

    from ..measure import foreign
    before, start = foreign.snapshot(None), time.monotonic()
    time.sleep(seconds)
    return foreign.busy_percent(before, foreign.snapshot(None), time.monotonic() - start)


def describe(cases: Sequence[CaseSpec], settings: RunSettings, eta: Estimate, local: bool = True) -> list[str]:
    """What `--dry-run` prints: the cases in order, the time it would take, and (`local`)
    what the run would change on this machine — on real hosts hosts/dryrun.py says what
    it would change on each server instead."""
    lines = [f"{len(cases)} cases × {settings.repetitions if settings.ci_target is None else f'{settings.min_runs}–{settings.max_runs}'} "
             f"runs = {eta.samples} samples in {eta.topologies} topologies, about {eta.text}"]
    for number, case in enumerate(cases, start=1):
        extra = [f"{k}={v}" for k, v in {**case.topology, **case.params}.items()]
        if case.datapath is not None:
            extra.append(f"datapath: {case.datapath.label}")
        lines.append(f"{number:4d}  {case.key}" + (f"  ({'; '.join(extra)})" if extra else ""))
    if not local:
        return lines
    features = sorted({f"{f} {'on' if on else 'off'}" for c in cases for f, on in c.profile.features.items()})
    wire = " (a wire namespace with a bridge where a case has wire=nic)" if any(
        c.topology.get("wire") == "nic" for c in cases) else ""
    lines.append(f"would change: network namespaces ofl-<pid>-* with veth/VXLAN devices and TAPs{wire} "
                 "(all removed at the end), and in them the ethtool features "
                 f"{', '.join(features) or '(none switched)'}; nothing outside those namespaces")
    return lines
