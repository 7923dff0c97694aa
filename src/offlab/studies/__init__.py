"""The studies wing: each of the seed reports' test plans, in one folder that owns its
plan keys and its expansion into cases; its tables and charts are in the report wing
under the same name (report/studies/<name>.py), which reads these folders' plan
constants. The pipeline (plan, runner, store, stats) knows no study by name: it walks
`registered()` in order and asks each the same questions.

May import: topology, vm and hosts (a study's topologies and offload names) and the
ground floor (records). Never report, store or run: the report reads studies, and
studies know nothing of reports.

A plan is expanded in three steps, each study taking its turn in every step:

1. scenarios — the plan's `scenarios` as `Variant`s (scenario + topology parameters
   + a label); a study may replace or multiply them (middlebox paths, DUT directions);
2. profiles — per variant, each study adds its offload profiles (`Profile`: an
   ethtool profile, the study's parameters, a datapath setting);
3. traffic — the workloads, which a study may multiply (message sizes, directions);

then every variant × MTU × workload × profile becomes a `CaseSpec`, which each study
may `finish` (e.g. derive the forwarder's setting from a router and a combination).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from ..records import CaseSpec, DatapathSetting, OffloadProfile, Params, TrafficSpec


class PlanCheck(Protocol):
    """Typed access to a plan document with one-line errors (plan._Checker)."""

    doc: dict[str, Any]

    def choices(self, key: str, allowed: list[Any], default: list[Any] | None = None) -> list[Any]: ...

    def fail(self, key: str, problem: str) -> Exception: ...

    def error(self, problem: str) -> Exception:
        """A plan error that already names its key: "key 'dut': …"."""
        ...


@dataclass(frozen=True)
class Variant:
    """One topology a plan builds: a scenario with its topology parameters."""

    scenario: str
    topology: Params = field(default_factory=Params)
    label: str = ""
    """For people ("middlebox-fwd-ab"); empty: the scenario's name."""

    @property
    def name(self) -> str:
        if self.label:
            return self.label
        extra = [f"{self.topology['underlay']}" if "underlay" in self.topology else "",
                 f"vlan{self.topology['vlan']}" if "vlan" in self.topology else ""]
        return "-".join([self.scenario, *(e for e in extra if e)])


@dataclass(frozen=True)
class Profile:
    """An offload profile as a study adds it: ethtool features, the study's own
    parameters, and the userspace datapath's setting if it has one."""

    offloads: OffloadProfile
    params: Params = field(default_factory=Params)
    datapath: DatapathSetting | None = None
    protocols: frozenset[str] | None = None
    """The traffic protocols this profile is measured with (None: every one the plan has)."""


class Study:
    """Base of every study: each step leaves the plan as it is unless overridden."""

    name: str = ""
    keys: frozenset[str] = frozenset()
    """Plan keys this study reads (the pipeline refuses keys nobody reads)."""

    def scenarios(self, check: PlanCheck, variants: list[Variant]) -> list[Variant]:
        return variants

    def profiles(self, check: PlanCheck, variant: Variant) -> list[Profile]:
        return []

    def traffic(self, check: PlanCheck, workloads: list[TrafficSpec]) -> list[TrafficSpec]:
        return workloads

    def finish(self, case: CaseSpec) -> CaseSpec:
        return case

    def keeps(self, case: CaseSpec) -> bool:
        """Whether a case of the cross product is worth measuring at all."""
        return True


def registered() -> tuple[Study, ...]:
    """Every study, in the order it takes its turn (the plan's case order follows)."""
    from .dut import DutLayoutStudy
    from .guests import GuestsStudy
    from .middlebox import MiddleboxStudy
    from .msgsize import MessageSizeStudy
    from .offloads import OffloadsStudy
    from .userspace import UserspaceStudy
    return (OffloadsStudy(), MessageSizeStudy(), DutLayoutStudy(), MiddleboxStudy(), UserspaceStudy(),
            GuestsStudy())
