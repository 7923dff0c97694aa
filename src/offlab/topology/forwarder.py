"""offlab-fwd inside a topology, one component for every scenario that has it (the VM
paths, the middlebox with R as offlab-fwd): started per case from its datapath setting
with ports by role, its state in force recorded as offlab-fwd reports it, its counters
as deltas since the previous sample, stopped before its namespaces go."""

from __future__ import annotations

from typing import Any, Callable, Mapping

from .fwd import (MODES, PORT_OFFLOADS, VHOST_USER_FEATURES, Forwarder, FwdConfig, FwdError, PortSpec,
                  counters, delta, port_roles)
from ..records import DatapathSetting, FeatureState
from .base import TopologyError

LABEL = "fwd"
"""Datapath-state entry of the forwarder's mode (each port has an entry of its own)."""


class ForwarderComponent:
    def __init__(self, scenario: str, core: int, make: Callable[[FwdConfig], Any] | None = None):
        """`make`: how a forwarder is made from its config (default: a local process;
        remote_fwd.py's runs it on a server)."""
        self.scenario = scenario
        self.core = core
        self.make = make or Forwarder
        self.process: Any = None
        self._ports: dict[str, str] = {}
        self._last: dict[str, float] = {}

    @property
    def running(self) -> bool:
        return self.process is not None

    def start(self, setting: DatapathSetting, ports: Mapping[str, PortSpec]) -> None:
        """(Re)start offlab-fwd in the setting's mode with these ports (role → port)."""
        self.stop()
        try:
            self.process = self.make(FwdConfig(setting.mode, tuple(ports.values()), self.core)).start()  # type: ignore[arg-type]
        except FwdError as err:  # missing binary, refused arguments: one line for the CLI
            raise TopologyError(f"{self.scenario}: {err}") from err
        self._ports = port_roles(self.process.ready, tuple(ports))
        self._last = {}

    def state(self, setting: DatapathSetting) -> dict[str, dict[str, FeatureState]]:
        """"fwd": mode.<m> per mode; each port ("tap:ofl-ta"): every offload as offlab-fwd
        reports it in force, with what its port asked for."""
        assert self.process is not None
        mode = self.process.ready.get("mode")
        state = {LABEL: {f"mode.{m}": FeatureState(m == mode, requested=m == setting.mode) for m in MODES}}
        reported = {str(p.get("port", "")).split("@")[0]: p for p in self.process.ready.get("ports", [])}
        negotiated = {}
        if any(port.kind == "vhost-user" for port in self.process.config.ports):
            try:
                negotiated = self.process.snapshot().port_states
            except FwdError as err:
                raise TopologyError(f"{self.scenario}: {err}") from err
        for role, port in zip(self._ports.values(), self.process.config.ports):
            if port.kind == "vhost-user":
                # What the guest negotiated with the forwarder, as the forwarder saw it.
                names = set(negotiated.get(port.label, {}).get("negotiated", []))
                # Keyed by role, not by the socket's path (which names this run's pid).
                state[f"vhost-user:{role}"] = {name: FeatureState(name in names) for name in VHOST_USER_FEATURES}
                continue
            in_force = set(str(reported.get(port.label, {}).get("offloads", "")).split("+"))
            entry = {o: FeatureState(o in in_force, requested=o in port.offloads) for o in PORT_OFFLOADS}
            if port.kind == "tap":
                entry["napi"] = FeatureState(port.napi, requested=setting.port(role).napi)
            state[port.label] = entry
        return state

    def counters(self) -> dict[str, float]:
        """Counters that grew since the previous call ("fwd:a>b:segments" …) and the
        forwarder's own CPU over the same span ("fwd:usr_pct", "fwd:sys_pct")."""
        if self.process is None:
            return {}
        try:
            now = counters(self.process.snapshot(), self._ports)
        except FwdError as err:
            raise TopologyError(f"{self.scenario}: {err}") from err
        grown = delta(self._last, now)
        self._last = now
        grown.update({f"fwd:{k}": v for k, v in self.process.cpu_since_last().items()})
        return grown

    def stop(self) -> None:
        if self.process is not None:
            process, self.process = self.process, None
            process.stop()
