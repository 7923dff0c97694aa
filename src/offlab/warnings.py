"""Typed warnings about a run's measurements, each with advice on what to do.

Like hyperfine's warnings: a value that says what was seen (with the numbers) and
how to get a trustworthy result. They are produced by the report model from the
data and printed by whoever shows them (CLI, Markdown, HTML); nothing here prints.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union


@dataclass(frozen=True)
class HighVariation:
    """Coefficient of variation of a case over the noise threshold."""

    case_key: str
    metric: str
    cv: float
    threshold: float
    runs: int
    runs_suggested: int
    """Runs that would bring the 95 % CI half-width to the threshold at this spread."""

    @property
    def message(self) -> str:
        runs = f"≥{self.runs_suggested}" if self.runs_suggested >= 100 else str(self.runs_suggested)
        return (
            f"{self.case_key}: {self.metric} varies by CV {self.cv:.1%} over {self.runs} runs "
            f"(threshold {self.threshold:.0%}); ~{runs} runs for a ±{self.threshold:.0%} CI"
        )

    @property
    def advice(self) -> str:
        return (
            "rerun with the --runs suggested (or a longer --duration), close other programs, "
            "and keep roles pinned to their own cores; differences smaller than the spread "
            "are not reported as effects"
        )


@dataclass(frozen=True)
class Outliers:
    """Repetitions whose modified Z-score is over 3.5."""

    case_key: str
    metric: str
    repetitions: tuple[int, ...]
    values: tuple[float, ...]
    unit: str

    @property
    def message(self) -> str:
        shown = ", ".join(
            f"#{r} ({v:.3g} {self.unit})" for r, v in zip(self.repetitions, self.values)
        )
        return f"{self.case_key}: {self.metric} outlier repetition(s) {shown}"

    @property
    def advice(self) -> str:
        return (
            "something else ran during those repetitions (timer, cron, a build); "
            "check the machine is idle and rerun the case"
        )


@dataclass(frozen=True)
class CpuSaturated:
    """A role's core was nearly fully busy: the case measures CPU cost, not capacity."""

    case_key: str
    role: str
    core: int
    busy_percent: float

    @property
    def message(self) -> str:
        return (
            f"{self.case_key}: {self.role} core {self.core} busy {self.busy_percent:.1f}% "
            "— throughput is CPU-bound there"
        )

    @property
    def advice(self) -> str:
        return (
            "that role is the bottleneck, so throughput differences there are differences "
            "in its CPU cost per byte; compare CPU % per Gbps as well"
        )


@dataclass(frozen=True)
class OffloadNotAsRequested:
    """A feature in force differs from what the profile asked for."""

    case_key: str
    iface: str
    feature: str
    wanted: bool
    got: bool
    fixed: bool

    @property
    def message(self) -> str:
        return (
            f"{self.case_key}: {self.iface} {self.feature} is {_onoff(self.got)}, "
            f"profile asked {_onoff(self.wanted)}" + (" [fixed]" if self.fixed else "")
        )

    @property
    def advice(self) -> str:
        if self.fixed:
            return (
                "the driver does not allow changing this feature ([fixed]); the profile's "
                "effect does not include it"
            )
        return (
            "the kernel changed it because of a dependency (e.g. tx-checksumming off turns "
            "TSO/GSO off); the measured effect is of the state in force, listed in the appendix"
        )


@dataclass(frozen=True)
class CascadedFeature:
    """A feature the profile did not name changed state together with one it did."""

    case_key: str
    iface: str
    feature: str
    got: bool

    @property
    def message(self) -> str:
        return f"{self.case_key}: {self.iface} {self.feature} is {_onoff(self.got)} as a side effect"

    @property
    def advice(self) -> str:
        return (
            "a feature this profile turned off depends on or implies this one; effects "
            "attributed to the profile's features include this change"
        )


@dataclass(frozen=True)
class UdpLossHigh:
    """UDP receiver lost more than the threshold: sender outpaces the receiver."""

    case_key: str
    loss_percent: float
    threshold_percent: float

    @property
    def message(self) -> str:
        return (
            f"{self.case_key}: UDP loss {self.loss_percent:.1f}% "
            f"(threshold {self.threshold_percent:.1f}%)"
        )

    @property
    def advice(self) -> str:
        return (
            "the sender generated more than the receiver took: the case is shown but used for no "
            "effect, recommendation or CPU per Gbps — a stream: measure UDP with "
            "udp_rate = \"capacity\" (highest rate at bounded loss) or a lower udp_rate; a "
            "capacity case: its verification trials failed at every step down (the capacity "
            "table gives the loss's cause)"
        )


@dataclass(frozen=True)
class Stall:
    """Report intervals far below the case's median rate: the flow stopped for a while."""

    case_key: str
    repetition: int
    intervals: int
    seconds: float
    median_bps: float

    @property
    def message(self) -> str:
        return (f"{self.case_key} #{self.repetition}: {self.intervals} interval(s), {self.seconds:.1f} s "
                f"in all, below 10% of the case's median {self.median_bps / 1e9:.3g} Gbit/s")

    @property
    def advice(self) -> str:
        return ("a stall (retransmission timeout, a blocked receiver, another process taking the "
                "core) lowers that repetition's mean; see the time series, and rerun if it is rare")


@dataclass(frozen=True)
class IncompleteCase:
    """A case has fewer samples than the plan asked for (interrupted or failed run)."""

    case_key: str
    got: int
    wanted: int
    up_to: bool = False
    """`wanted` is the adaptive rule's ceiling: the case stopped before its rule decided."""

    @property
    def message(self) -> str:
        if self.up_to:
            return (f"{self.case_key}: {self.got} repetitions stored, of up to {self.wanted}; "
                    "stopped before its CI target was reached or ruled out")
        return f"{self.case_key}: {self.got} of {self.wanted} repetitions stored"

    @property
    def advice(self) -> str:
        return "resume or rerun the plan; statistics of this case rest on fewer runs"


@dataclass(frozen=True)
class CpuWindowOff:
    """Samples whose CPU window on some host did not match the measured window."""

    case_key: str
    where: str
    """The machine ("local", "tx", "rx") or "iperf3" (the test's own measured window)."""
    seconds: float
    """The farthest-off window seen there."""
    nominal: float
    samples: int
    of: int

    @property
    def message(self) -> str:
        return (f"{self.case_key}: CPU window on {self.where} {self.seconds:.2f} s against "
                f"{self.nominal:.2f} s nominal in {self.samples} of {self.of} samples; those "
                "samples are left out of CPU figures")

    @property
    def advice(self) -> str:
        return ("the CPU snapshots did not bracket the measured window (iperf3 started late, "
                "or a host answered slowly): look at iperf3_start_lag_s in the store, give "
                "the run a longer --duration, or run with fewer other programs on the hosts")


@dataclass(frozen=True)
class CpuRefused:
    """Samples whose role's pinned tasks used more CPU than the role's core had."""

    case_key: str
    role: str
    percent: float
    """The most any refused sample's tasks of this role used, % of one core."""
    samples: int
    of: int

    @property
    def message(self) -> str:
        return (f"{self.case_key}: the {self.role}'s pinned tasks used {self.percent:.0f} % of its one "
                f"core in {self.samples} of {self.of} samples (more than the core had); those "
                "samples' CPU is refused")

    @property
    def advice(self) -> str:
        return ("a task ran off the core it was pinned to, or a clock cannot be trusted: check the "
                "role's pinning (taskset -p on the iperf3 processes) before reading its CPU")


LabWarning = Union[
    CpuWindowOff,
    CpuRefused,
    HighVariation,
    Outliers,
    CpuSaturated,
    OffloadNotAsRequested,
    CascadedFeature,
    UdpLossHigh,
    Stall,
    IncompleteCase,
]


def _onoff(state: bool) -> str:
    return "on" if state else "off"
