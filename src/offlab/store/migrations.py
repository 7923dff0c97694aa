"""Upgrades of older results stores, one step per format version.

Format 1 kept a case's parameters in names and its run settings in prose:

* scenario names `middlebox-ab`, `middlebox-fwd-ab` (path and router) and
  `bare-dut-rcv` (DUT direction); profile names `chkY-tsoN-groY` (the middlebox
  combination);
* the userspace datapath as pseudo-features among the ethtool ones (`fwd.mode.gro`,
  `port.a.tso4`, `port.b.napi`, `veth.direct`), and its state in force recorded among
  the interfaces' offload states (`fwd`, `tap:ofl-ta`, `packet:ofl-hm`);
* `repetitions=3 steer_rx_softirq=true ci_target=0.05 min_runs=3 max_runs=10` in the
  run's notes.

This module is the only code that decodes those names: it turns them into format 2's
typed columns (case topology and params, datapath setting, label; sample_offload
layer; run settings) and leaves every key as it was, so samples, adaptive outcomes and
comparisons with older runs still match.
"""

from __future__ import annotations

import json
import re
import sqlite3
from typing import Callable

from . import codec
from ..records import DatapathSetting, Params, PortSetting, RunSettings

# --- format 1's vocabulary, frozen here as it was ---------------------------------------

_PATH_NODES = ("ab", "ba", "ar", "ra", "br", "rb")
_ROUTER_INFIX = {"": "kernel", "fwd-": "offlab-fwd"}
_SHORT_DIMENSIONS = {"chk": "checksum", "tso": "tso", "gro": "gro"}
_MODES = ("pass", "csum", "gso", "gro")
_PORT_OFFLOADS = ("csum", "tso4", "tso6", "ecn", "uso", "udptnl", "udptnl-csum")
_DATAPATH_PREFIXES = ("fwd.mode.", "port.", "veth.")
_DATAPATH_STATES = ("tap:", "packet:")
_SUPER_PACKETS = frozenset({"csum", "tso4", "tso6", "ecn"})



def _text(doc: object) -> str | None:
    """A document as the format-2 store's TEXT column holds it (None stays NULL)."""
    return None if doc is None else json.dumps(doc, sort_keys=True)

def _middlebox(scenario: str) -> tuple[Params, str] | None:
    """`middlebox-[fwd-]xy` → (path, router) topology parameters."""
    match = re.fullmatch(r"middlebox-(fwd-)?([abr]{2})", scenario)
    if match is None or match.group(2) not in _PATH_NODES:
        return None
    nodes = match.group(2)
    return Params(path=f"{nodes[0]}-{nodes[1]}", router=_ROUTER_INFIX[match.group(1) or ""]), "middlebox"


def _dut(scenario: str) -> tuple[Params, str] | None:
    base, sep, direction = scenario.rpartition("-dut-")
    if sep and base and direction in ("rcv", "snd"):
        return Params(dut=direction), base
    return None


def _combination(profile_name: str) -> Params:
    """`chkY-tsoN-groY` → checksum/tso/gro on-off; empty for any other name."""
    found = {}
    for part in profile_name.split("-"):
        dimension = _SHORT_DIMENSIONS.get(part[:-1])
        if dimension is None or part[-1:] not in ("Y", "N"):
            return Params()
        found[dimension] = part[-1] == "Y"
    return Params(found)


def _userspace(features: dict[str, bool]) -> DatapathSetting | None:
    """The pseudo-features of a format-1 userspace profile as its datapath setting."""
    if not any(name.startswith(_DATAPATH_PREFIXES) for name in features):
        return None
    if features.get("veth.direct", False):
        return DatapathSetting(forwarder=False)
    modes = [m for m in _MODES if features.get(f"fwd.mode.{m}", False)]
    ports = []
    for role in ("a", "b"):
        prefix = f"port.{role}."
        if any(name.startswith(prefix) for name in features):
            offloads = frozenset(o for o in _PORT_OFFLOADS if features.get(prefix + o, False))
        else:
            offloads = frozenset({"csum"})
        ports.append((role, PortSetting(offloads, features.get(prefix + "napi", False))))
    return DatapathSetting(True, modes[0] if modes else "pass", tuple(ports))


def _middlebox_forwarder(combo: Params) -> DatapathSetting:
    """What format 1's offlab-fwd router ran for a combination (all on when none)."""
    checksum, tso, gro = (combo.get(d, True) for d in ("checksum", "tso", "gro"))
    if not checksum:
        mode, offloads = "csum", frozenset()
    elif not tso:
        mode, offloads = "gso", frozenset({"csum"})
    else:
        mode, offloads = ("gro" if gro else "pass"), _SUPER_PACKETS
    port = PortSetting(offloads)
    return DatapathSetting(True, mode, (("a", port), ("b", port)))


def _settings(notes: str) -> tuple[RunSettings | None, str]:
    """Run settings out of format 1's notes, and what is left of the notes."""
    found = dict(re.findall(r"\b(repetitions|steer_rx_softirq|ci_target|min_runs|max_runs)=(\S+)", notes))
    rest = re.sub(r"\b(repetitions|steer_rx_softirq|ci_target|min_runs|max_runs)=\S+", "", notes)
    rest = " ".join(rest.split())
    if "repetitions" not in found:
        return None, rest
    target = float(found["ci_target"]) if "ci_target" in found else None
    return RunSettings(
        repetitions=int(found["repetitions"]),
        steer_rx_softirq=found.get("steer_rx_softirq", "true") != "false",
        ci_target=target,
        # Format 1's resume read a missing bound as 2; such runs always wrote both.
        min_runs=int(found.get("min_runs", 2)) if target is not None else None,
        max_runs=int(found.get("max_runs", 2)) if target is not None else None,
    ), rest


# --- the step ---------------------------------------------------------------------------


def _case_columns(scenario: str, profile_name: str, features: dict[str, bool]) -> tuple:
    """(scenario, topology, params, datapath, label, ethtool features) of a format-1 case."""
    topology, params, label = Params(), Params(), ""
    decoded = _middlebox(scenario) or _dut(scenario)
    if decoded is not None:
        topology, label, scenario = decoded[0], scenario, decoded[1]
    datapath = _userspace(features)
    ethtool = {k: v for k, v in features.items() if not k.startswith(_DATAPATH_PREFIXES)}
    if "router" in topology:
        params = _combination(profile_name)
        if topology["router"] == "offlab-fwd":
            datapath = _middlebox_forwarder(params)
    return scenario, topology, params, datapath, label, ethtool


def _v1_to_v2(conn: sqlite3.Connection) -> None:
    conn.execute("ALTER TABLE run ADD COLUMN settings TEXT NOT NULL DEFAULT '{}'")
    conn.execute("ALTER TABLE run ADD COLUMN host_facts TEXT NOT NULL DEFAULT '{}'")
    for column in ("topology TEXT NOT NULL DEFAULT '{}'", "params TEXT NOT NULL DEFAULT '{}'",
                   "datapath TEXT", "label TEXT NOT NULL DEFAULT ''"):
        conn.execute(f'ALTER TABLE "case" ADD COLUMN {column}')
    for run_id, notes in conn.execute("SELECT id, notes FROM run").fetchall():
        settings, rest = _settings(notes)
        conn.execute("UPDATE run SET settings = ?, notes = ? WHERE id = ?",
                     (json.dumps(codec.settings_to_doc(settings), sort_keys=True), rest, run_id))
    cases = conn.execute('SELECT run_id, key, scenario, profile_name, profile_features FROM "case"').fetchall()
    for run_id, key, scenario, name, features in cases:
        new = _case_columns(scenario, name, json.loads(features))
        conn.execute(
            'UPDATE "case" SET scenario = ?, topology = ?, params = ?, datapath = ?, label = ?,'
            " profile_features = ? WHERE run_id = ? AND key = ?",
            (new[0], _text(codec.params_to_doc(new[1])), _text(codec.params_to_doc(new[2])),
             _text(codec.datapath_to_doc(new[3])), new[4], json.dumps(new[5]), run_id, key))
    # sample_offload gains a layer and a primary key that includes it: rebuilt.
    conn.execute("ALTER TABLE sample_offload RENAME TO sample_offload_v1")
    conn.execute(
        "CREATE TABLE sample_offload (sample_id INTEGER NOT NULL REFERENCES sample(id),"
        " iface TEXT NOT NULL, feature TEXT NOT NULL, is_on INTEGER NOT NULL,"
        " is_fixed INTEGER NOT NULL, requested INTEGER, layer TEXT NOT NULL DEFAULT 'ethtool',"
        " PRIMARY KEY (sample_id, layer, iface, feature))")
    datapath_iface = " OR ".join(["iface = 'fwd'"] + [f"iface LIKE '{p}%'" for p in _DATAPATH_STATES])
    conn.execute(
        "INSERT INTO sample_offload (sample_id, iface, feature, is_on, is_fixed, requested, layer)"
        f" SELECT sample_id, iface, feature, is_on, is_fixed, requested,"
        f" CASE WHEN {datapath_iface} THEN 'datapath' ELSE 'ethtool' END"
        " FROM sample_offload_v1 ORDER BY rowid")
    conn.execute("DROP TABLE sample_offload_v1")
    # Samples gain the host of each role, and CPU shares their host (separate machines).
    conn.execute("ALTER TABLE sample ADD COLUMN role_hosts TEXT NOT NULL DEFAULT '{}'")
    conn.execute("ALTER TABLE sample_cpu RENAME TO sample_cpu_v1")
    conn.execute(
        "CREATE TABLE sample_cpu (sample_id INTEGER NOT NULL REFERENCES sample(id),"
        " ordinal INTEGER NOT NULL, core INTEGER NOT NULL, class TEXT NOT NULL,"
        " percent REAL NOT NULL, host TEXT NOT NULL DEFAULT '',"
        " PRIMARY KEY (sample_id, ordinal, class))")
    conn.execute("INSERT INTO sample_cpu (sample_id, ordinal, core, class, percent)"
                 " SELECT sample_id, ordinal, core, class, percent FROM sample_cpu_v1 ORDER BY rowid")
    conn.execute("DROP TABLE sample_cpu_v1")


MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {1: _v1_to_v2}
"""format version v → function upgrading a v database to v + 1, run in one transaction."""
