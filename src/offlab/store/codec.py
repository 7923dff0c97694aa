"""Document forms of the records the store keeps as JSON columns: case parameters,
datapath settings, run settings, traffic, and the plain mappings (offload features,
tool versions, host facts, CPU roles).

A document is a JSON object. PostgreSQL keeps it as JSONB, which does not keep key
order (it orders keys by length, then bytes), SQLite as text, which does: so decoding
never depends on the order the keys come back in. Records are rebuilt by field name,
lists keep their order (JSON arrays do on both), and a plain mapping is read back in
sorted key order on both engines — the same record from either store. Decoding
ignores fields a newer offlab may have added, so a store stays readable when records
gain optional fields."""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping

from ..records import DatapathSetting, Params, PortSetting, RunSettings, TrafficSpec

Document = dict[str, Any]


def mapping_to_doc(mapping: Mapping[str, Any]) -> Document:
    return {key: mapping[key] for key in sorted(mapping)}


def mapping_from_doc(doc: Mapping[str, Any] | None) -> dict[str, Any]:
    """A plain mapping in sorted key order, whatever order the engine returned."""
    return {key: doc[key] for key in sorted(doc)} if doc else {}


def nested_from_doc(doc: Mapping[str, Mapping[str, Any]] | None) -> dict[str, dict[str, Any]]:
    """A mapping of mappings (host facts per role), each level in sorted key order."""
    return {key: mapping_from_doc(value) for key, value in mapping_from_doc(doc).items()}


def params_to_doc(params: Params) -> Document:
    return mapping_to_doc(params)


def params_from_doc(doc: Mapping[str, Any] | None) -> Params:
    return Params(doc) if doc else Params()


def datapath_to_doc(setting: DatapathSetting | None) -> Document | None:
    if setting is None:
        return None
    return {
        "forwarder": setting.forwarder,
        "mode": setting.mode,
        "ports": [{"role": role, "offloads": sorted(port.offloads), "napi": port.napi}
                  for role, port in setting.ports],
    }


def datapath_from_doc(doc: Mapping[str, Any] | None) -> DatapathSetting | None:
    if not doc:
        return None
    ports = tuple((p["role"], PortSetting(frozenset(p.get("offloads", ())), bool(p.get("napi", False))))
                  for p in doc.get("ports", ()))
    return DatapathSetting(bool(doc.get("forwarder", True)), str(doc.get("mode", "pass")), ports)


def settings_to_doc(settings: RunSettings | None) -> Document:
    return dataclasses.asdict(settings) if settings else {}


def settings_from_doc(doc: Mapping[str, Any] | None) -> RunSettings | None:
    if not doc or "repetitions" not in doc:
        return None
    return RunSettings(**_known(RunSettings, doc))


def traffic_to_doc(traffic: TrafficSpec) -> Document:
    return dataclasses.asdict(traffic)


def traffic_from_doc(doc: Mapping[str, Any]) -> TrafficSpec:
    return TrafficSpec(**_known(TrafficSpec, doc))


def _known(cls: Any, doc: Mapping[str, Any]) -> dict[str, Any]:
    names = {f.name for f in dataclasses.fields(cls)}
    return {k: v for k, v in doc.items() if k in names}
