"""JSON forms of the records the store keeps as structured columns: case parameters,
datapath settings and run settings. Decoding ignores fields a newer offlab may have
added, so a store stays readable when records gain optional fields."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from .records import DatapathSetting, Params, PortSetting, RunSettings, TrafficSpec


def params_to_json(params: Params) -> str:
    return json.dumps(dict(params), sort_keys=True)


def params_from_json(text: str | None) -> Params:
    return Params(json.loads(text)) if text else Params()


def datapath_to_json(setting: DatapathSetting | None) -> str | None:
    if setting is None:
        return None
    return json.dumps({
        "forwarder": setting.forwarder,
        "mode": setting.mode,
        "ports": [{"role": role, "offloads": sorted(port.offloads), "napi": port.napi}
                  for role, port in setting.ports],
    }, sort_keys=True)


def datapath_from_json(text: str | None) -> DatapathSetting | None:
    if not text:
        return None
    doc = json.loads(text)
    ports = tuple((p["role"], PortSetting(frozenset(p.get("offloads", ())), bool(p.get("napi", False))))
                  for p in doc.get("ports", ()))
    return DatapathSetting(bool(doc.get("forwarder", True)), str(doc.get("mode", "pass")), ports)


def settings_to_json(settings: RunSettings | None) -> str:
    return json.dumps(dataclasses.asdict(settings) if settings else {}, sort_keys=True)


def settings_from_json(text: str | None) -> RunSettings | None:
    doc = json.loads(text) if text else {}
    if "repetitions" not in doc:
        return None
    return RunSettings(**_known(RunSettings, doc))


def traffic_to_json(traffic: TrafficSpec) -> str:
    return json.dumps(dataclasses.asdict(traffic), sort_keys=True)


def traffic_from_json(text: str) -> TrafficSpec:
    return TrafficSpec(**_known(TrafficSpec, json.loads(text)))


def _known(cls: Any, doc: dict[str, Any]) -> dict[str, Any]:
    names = {f.name for f in dataclasses.fields(cls)}
    return {k: v for k, v in doc.items() if k in names}
