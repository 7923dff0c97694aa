"""offlab-fwd as a process: a profile's datapath settings → its argument list, start and
stop with the ports ready, and its stats JSON → flat counters for a sample.

The forwarder writes one JSON object per line on stdout ("ready" once its ports are
open, "stats" on SIGUSR1, "exit" at the end) and the same stats objects to
`--stats-file`. Its stdout goes to a file, not a pipe: a pipe nobody drains would
block the forwarder once full.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from .. import binaries
from ..hosts.proctimes import ProcessTimes, process_percent, process_times
from ..proc import stop as stop_process
from ..runscope import RUNTIME_ROOT

BINARY_ENV = "OFFLAB_FWD"
"""Environment variable naming the offlab-fwd binary to use instead of the built one."""
MODES = ("pass", "csum", "gso", "gro")
TUNNEL_OFFLOADS = ("udptnl", "udptnl-csum")
"""UDP-tunnel segmentation on a TAP (the 24-byte vnet header, Linux >= 6.17): the VM
topologies add these on tunnelled paths wherever a TAP port takes TSO, so VXLAN
super-packets reach the forwarder whole instead of being cut in the sending namespace."""
PORT_KINDS = ("tap", "packet", "vhost-user")
VHOST_USER_FEATURES = ("csum", "guest_csum", "guest_tso4", "guest_tso6", "guest_ecn", "host_tso4", "host_tso6",
                       "host_ecn", "mrg_rxbuf", "indirect_desc", "version_1")
"""What offlab-fwd's vhost-user port offers a guest, by virtio-net name."""
PORT_OFFLOADS = ("csum", "tso4", "tso6", "ecn", "uso") + TUNNEL_OFFLOADS
"""What a port may negotiate (virtio-style feature bits), in offlab-fwd's spelling."""
READY_TIMEOUT_S = 10.0
STATS_TIMEOUT_S = 5.0
STOP_GRACE_S = 3.0
COUNTER_PREFIX = "fwd:"
NESTED = {"drops": "drop", "gro_refusals": "gro_refused"}
"""offlab-fwd's nested counter objects and the prefix of their flattened names; every
other number in a direction object is a counter under its own name. The names are
offlab-fwd's (crates/fwd/src/stats.rs), read from its output, never listed here."""


class FwdError(Exception):
    """offlab-fwd missing, refusing its arguments, or not answering."""


# --- the binary ------------------------------------------------------------------------


WORKSPACE_BINARY = binaries.WORKSPACE_RELEASE / "offlab-fwd"


def find_binary(workspace: Path = WORKSPACE_BINARY) -> Path:
    """$OFFLAB_FWD, else the workspace's release build, else `offlab-fwd` on PATH."""
    return binaries.find("offlab-fwd", BINARY_ENV, workspace, FwdError)


# --- configuration ---------------------------------------------------------------------


@dataclass(frozen=True)
class PortSpec:
    """One `--port`: a TAP the forwarder creates, AF_PACKET on an existing device, or a
    vhost-user socket the forwarder listens on for a guest (`ifname` is then the socket's
    path and `namespace` is unused: what a guest may be sent follows what it negotiates)."""

    kind: str
    """"tap", "packet" or "vhost-user"."""
    ifname: str
    namespace: str
    offloads: frozenset[str] = frozenset()
    napi: bool = False
    """TAP only: IFF_NAPI, so frames written to it pass through the kernel's GRO."""

    def __post_init__(self) -> None:
        if self.kind not in PORT_KINDS:
            raise ValueError(f"port kind {self.kind!r}: use one of {', '.join(PORT_KINDS)}")
        unknown = set(self.offloads) - set(PORT_OFFLOADS)
        if unknown:
            raise ValueError(f"unknown port offloads {sorted(unknown)}; known: {PORT_OFFLOADS}")
        if self.napi and self.kind != "tap":
            raise ValueError("napi is an option of tap ports only")

    @property
    def label(self) -> str:
        return f"{self.kind}:{self.ifname}"

    def argument(self) -> str:
        if self.kind == "vhost-user":
            return f"vhost-user:{self.ifname}"
        listed = "+".join(o for o in PORT_OFFLOADS if o in self.offloads) or "none"
        text = f"{self.kind}:{self.ifname}@{self.namespace},offloads={listed}"
        return text + (",napi" if self.napi else "")


@dataclass(frozen=True)
class FwdConfig:
    mode: str
    ports: tuple[PortSpec, PortSpec]
    cpu: int | None = None

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"fwd mode {self.mode!r}: use one of {', '.join(MODES)}")


def fwd_args(binary: Path | str, config: FwdConfig, stats_file: Path | str) -> list[str]:
    args = [str(binary)]
    for port in config.ports:
        args += ["--port", port.argument()]
    args += ["--mode", config.mode, "--stats-file", str(stats_file)]
    if config.cpu is not None:
        args += ["--cpu", str(config.cpu)]
    return args


# --- stats -----------------------------------------------------------------------------


@dataclass(frozen=True)
class FwdStats:
    """One stats object: elapsed time and flat counters per direction."""

    event: str
    mode: str
    elapsed_s: float
    directions: Mapping[str, Mapping[str, float]]
    """"<port> -> <port>" → counter name → value; drops as "drop.<category>.<reason>",
    GRO refusals as "gro_refused.<reason>"."""
    port_states: Mapping[str, Any] = field(default_factory=dict)
    """port label → its own state where it has one (vhost-user: "connected",
    "connections", "negotiated" feature names)."""


def parse_stats(text: str) -> FwdStats:
    """Parse one stats JSON object (the stats file, or one stdout line)."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        raise FwdError(f"offlab-fwd stats are not JSON: {err}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("directions"), dict):
        raise FwdError("offlab-fwd stats lack 'directions'")
    directions = {name: _flat_direction(name, d) for name, d in doc["directions"].items()}
    states = {name: state for name, state in (doc.get("port_states") or {}).items() if isinstance(state, dict)}
    return FwdStats(str(doc.get("event", "")), str(doc.get("mode", "")),
                    float(doc.get("elapsed_s", 0.0)), directions, states)


def _flat_direction(name: str, doc: Any) -> dict[str, float]:
    """Every counter of one direction: numbers as they are, nested objects flattened
    ("drops": {"egress": {"ENOBUFS": 3}} → "drop.egress.ENOBUFS")."""
    if not isinstance(doc, dict):
        raise FwdError(f"offlab-fwd stats: direction {name!r} is not an object")
    flat: dict[str, float] = {}
    for key, value in doc.items():
        if isinstance(value, bool):
            continue
        if isinstance(value, (int, float)):
            flat[key] = float(value)
        elif isinstance(value, dict):
            _flatten(NESTED.get(key, key), value, flat)
    return flat


def _flatten(prefix: str, doc: dict[str, Any], into: dict[str, float]) -> None:
    for key, value in doc.items():
        if isinstance(value, dict):
            _flatten(f"{prefix}.{key}", value, into)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            into[f"{prefix}.{key}"] = float(value)


def counters(stats: FwdStats, ports: Mapping[str, str]) -> dict[str, float]:
    """Flat sample counters: "fwd:<from>><to>:<counter>" with ports named by their
    role ("a", "b") through `ports` (port label as offlab-fwd prints it → role)."""
    out = {}
    for direction, values in stats.directions.items():
        source, _, target = direction.partition(" -> ")
        name = f"{ports.get(source, source)}>{ports.get(target, target)}"
        for key, value in values.items():
            out[f"{COUNTER_PREFIX}{name}:{key}"] = value
    return out


def delta(before: Mapping[str, float], after: Mapping[str, float]) -> dict[str, float]:
    """Counters that grew from `before` to `after` (a counter absent before was 0)."""
    grown = {}
    for key, value in after.items():
        change = value - before.get(key, 0.0)
        if change:
            grown[key] = change
    return grown


# --- the process -----------------------------------------------------------------------


class Forwarder:
    """A running offlab-fwd; `start()` returns once its ports are open."""

    def __init__(self, config: FwdConfig, binary: Path | None = None):
        self.config = config
        self.binary = binary or find_binary()
        # Under the run's runtime directory when there is one (runscope.py): a killed
        # run's files are then removed by the next run, not left in /tmp.
        runtime = RUNTIME_ROOT / f"run-{os.getpid()}"
        self._dir = Path(tempfile.mkdtemp(prefix="offlab-fwd-", dir=runtime if runtime.is_dir() else None))
        self.stats_file = self._dir / "stats.json"
        self._stdout = self._dir / "stdout.jsonl"
        self._stderr = self._dir / "stderr.txt"
        self._proc: subprocess.Popen[bytes] | None = None
        self.ready: dict[str, Any] = {}
        self._times: tuple[float, ProcessTimes | None] | None = None

    @property
    def args(self) -> list[str]:
        return fwd_args(self.binary, self.config, self.stats_file)

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def start(self) -> "Forwarder":
        with open(self._stdout, "wb") as out, open(self._stderr, "wb") as err:
            # Own session: a terminal's Ctrl-C reaches offlab, which stops us in order.
            self._proc = subprocess.Popen(self.args, stdin=subprocess.DEVNULL, stdout=out,
                                          stderr=err, start_new_session=True)
        try:
            self.ready = self._wait_ready()
        except BaseException:
            self.stop()
            raise
        self._times = (time.monotonic(), process_times(self._proc.pid))
        return self

    def _wait_ready(self) -> dict[str, Any]:
        assert self._proc is not None
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            for line in self._stdout.read_text().splitlines():
                doc = json.loads(line)
                if doc.get("event") == "ready":
                    return doc
            if self._proc.poll() is not None:
                raise FwdError(f"offlab-fwd exited with status {self._proc.returncode} at start: "
                               f"{self._stderr.read_text().strip() or 'no output'}")
            time.sleep(0.01)
        raise FwdError(f"offlab-fwd not ready after {READY_TIMEOUT_S:g} s: {' '.join(self.args)}")

    def snapshot(self) -> FwdStats:
        """Current stats (SIGUSR1; the forwarder rewrites the stats file). A newer file is
        told by its `elapsed_s`, not its mtime: two snapshots in a row can be written
        within one timestamp tick."""
        if self._proc is None or self._proc.poll() is not None:
            raise FwdError("offlab-fwd is not running: " + self._stderr.read_text().strip())
        previous = self._elapsed()
        os.kill(self._proc.pid, signal.SIGUSR1)
        deadline = time.monotonic() + STATS_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._elapsed() > previous:
                return parse_stats(self.stats_file.read_text())
            time.sleep(0.005)
        raise FwdError(f"offlab-fwd wrote no stats within {STATS_TIMEOUT_S:g} s of SIGUSR1")

    def _elapsed(self) -> float:
        """`elapsed_s` of the stats file as it stands (-1 before the first one)."""
        try:
            return parse_stats(self.stats_file.read_text()).elapsed_s
        except (FileNotFoundError, FwdError):
            return -1.0

    def cpu_since_last(self) -> dict[str, float]:
        """The forwarder's own usr/sys, % of one core, since start or the previous call."""
        if self._times is None or self._proc is None:
            return {}
        now, times = time.monotonic(), process_times(self._proc.pid)
        then, before = self._times
        self._times = (now, times)
        percent = process_percent(before, times, now - then)
        return {} if percent is None else {"usr_pct": percent["usr"], "sys_pct": percent["sys"]}

    def stop(self) -> FwdStats | None:
        """SIGTERM (SIGKILL after a grace period); the final stats if it wrote them."""
        proc, self._proc = self._proc, None
        final = None
        if proc is not None:
            stop_process(proc, grace_s=STOP_GRACE_S)
            if proc.returncode == 0 and self.stats_file.exists():
                final = parse_stats(self.stats_file.read_text())
        shutil.rmtree(self._dir, ignore_errors=True)
        return final


def port_roles(ready: Mapping[str, Any], roles: Iterable[str] = ("a", "b")) -> dict[str, str]:
    """offlab-fwd's port labels (from its ready line, in --port order) → our roles."""
    labels = [p.get("port", "") for p in ready.get("ports", [])]
    return dict(zip(labels, roles))
