"""Campaigns: one plan over several server pairs (`offlab run --hosts fleet.toml`).

A fleet file is a hosts file (docs/real-hosts.md) with one `[[pair]]` table per pair,
each with its own `[pair.sender]` and `[pair.receiver]` (the keys of the hosts file's
role tables, checked by the same code, hosts/hostsfile.py):

    ssh_config = "~/.ssh/lab_config"      # optional, for every pair

    [[pair]]
    name = "ice-6.12"
    [pair.sender]
    ssh = "lab@server1"
    …
    [pair.receiver]
    …

Each pair is its own run in the store, tagged with the campaign's id and the pair's
name (run_campaign table). Pairs that share no host run at the same time: they are
grouped into waves, each pair of a wave an `offlab run … --pair NAME` child process
with its own runtime directory (OFFLAB_RUNTIME_DIR) so that each holds its own lock,
cgroup and files; the campaign itself holds this machine's lock for its whole life
and restores what killed runs left on any host once, before the first wave (children
never restore: another pair's host changes are live). Pairs sharing a host wait for
the next wave: two runs on one host would measure each other.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ..hosts import hostsfile
from ..hosts.hostsfile import HostsFile, HostsFileError

PAIR_KEYS = {"name", "sender", "receiver"}
OFFLAB = [sys.executable, "-c", "from offlab.entry import main; main()"]


@dataclass(frozen=True)
class Pair:
    name: str
    hosts: HostsFile

    @property
    def destinations(self) -> frozenset[str]:
        """The hosts this pair uses, as ssh reaches them."""
        return frozenset(spec.ssh for spec in self.hosts.hosts.values())


@dataclass(frozen=True)
class Fleet:
    source: str
    pairs: tuple[Pair, ...]

    def pair(self, name: str) -> Pair:
        for pair in self.pairs:
            if pair.name == name:
                return pair
        raise HostsFileError(f"{self.source}: no pair named {name!r}; its pairs: "
                             f"{', '.join(p.name for p in self.pairs)}")

    def waves(self) -> list[list[Pair]]:
        """Pairs in file order, each in the first wave where it shares no host."""
        waves: list[list[Pair]] = []
        for pair in self.pairs:
            for wave in waves:
                if not any(pair.destinations & other.destinations for other in wave):
                    wave.append(pair)
                    break
            else:
                waves.append([pair])
        return waves


def load_hosts(path: str | Path) -> HostsFile | Fleet:
    """A hosts file (one pair) or a fleet file (`[[pair]]` tables)."""
    doc = hostsfile.read_document(path)
    if "pair" not in doc:
        return hostsfile.checked(hostsfile.parse(doc, str(path)), str(path))
    fleet = parse_fleet(doc, str(path))
    for pair in fleet.pairs:
        hostsfile.checked(pair.hosts, str(path))
    return fleet


def parse_fleet(doc: dict[str, Any], source: str) -> Fleet:
    """`[[pair]]` tables; every other key of the file (ssh_config, watchdog_s, baseline,
    [test_network], …) is a setting of every pair, checked by hostsfile.parse as in a
    hosts file of one pair."""
    shared = {key: value for key, value in doc.items() if key != "pair"}
    roles = sorted(set(shared) & {"sender", "receiver", "router"})
    if roles:
        raise HostsFileError(f"{source}: [{roles[0]}] beside [[pair]] tables; put each pair's "
                             "[pair.sender] and [pair.receiver] in its [[pair]] (docs/team-store.md)")
    tables = doc["pair"]
    if not isinstance(tables, list) or not tables:
        raise HostsFileError(f"{source}: pair must be [[pair]] tables, one per sender/receiver pair")
    pairs, names = [], set()
    for number, table in enumerate(tables, 1):
        name = table.get("name")
        if not isinstance(name, str) or not name or not name.replace("-", "").replace("_", "").replace(".", "").isalnum():
            raise HostsFileError(f"{source}: pair {number} needs name = \"…\" (letters, digits, - _ .)")
        if name in names:
            raise HostsFileError(f"{source}: two pairs are named {name!r}; name each pair once")
        unknown = set(table) - PAIR_KEYS
        if unknown:
            raise HostsFileError(f"{source}: pair {name}: unknown key {sorted(unknown)[0]!r}; a pair has "
                                 "name, [pair.sender] and [pair.receiver]")
        single = {**shared, **{role: table.get(role) for role in ("sender", "receiver")}}
        pairs.append(Pair(name, hostsfile.parse(single, f"{source}: pair {name}")))
        names.add(name)
    return Fleet(source, tuple(pairs))


def new_campaign_id() -> str:
    return "campaign-" + time.strftime("%Y%m%d-%H%M%S") + f"-{secrets.token_hex(2)}"


@dataclass(frozen=True)
class PairOutcome:
    pair: str
    exit_code: int
    stderr_tail: str


def run_waves(fleet: Fleet, campaign_id: str, argv: list[str], runtime_root: Path,
              say: Callable[[str], None]) -> list[PairOutcome]:
    """Run every wave's pairs as child `offlab run`s at once; the next wave when all of
    this one have ended. `argv`: the campaign's own arguments, which each child repeats
    with its pair (so every pair runs the same plan with the same settings)."""
    outcomes = []
    for number, wave in enumerate(fleet.waves(), 1):
        say(f"wave {number}: {', '.join(p.name for p in wave)}")
        children, roots = {}, []
        for pair in wave:
            # Short: ssh's control sockets live under it, and a socket path has 108 bytes.
            roots.append(runtime_root.parent / f"{runtime_root.name}-{os.getpid()}-{fleet.pairs.index(pair)}")
            env = dict(os.environ, OFFLAB_RUNTIME_DIR=str(roots[-1]))
            children[pair.name] = subprocess.Popen(
                [*OFFLAB, *argv, "--pair", pair.name, "--campaign", campaign_id],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        for name, child in children.items():
            stdout, stderr = child.communicate()
            for line in stdout.splitlines():
                say(f"[{name}] {line}")
            tail = " | ".join(stderr.strip().splitlines()[-2:])
            outcomes.append(PairOutcome(name, child.returncode, tail))
        for root in roots:  # the children's locks; their runs' files are gone with them
            shutil.rmtree(root, ignore_errors=True)
    return outcomes
