"""What every study is made of: the plan document's typed access (`PlanCheck`), a
scenario variant, an offload profile as a study adds it, and the `Study` base class.
studies/__init__.py registers the studies; each study's folder builds on these."""

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
