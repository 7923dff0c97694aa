"""Latency under load: command lines and pure parsers for the two latency tools.

* irtt (Debian's `irtt`): an isochronous UDP probe, a packet every few milliseconds,
  run beside a TCP stream; its JSON (`-o FILE`) holds every round trip, from which we
  take the percentiles ourselves (irtt's own stats give only the median).
* sockperf (Debian's `sockperf`) ping-pong over TCP: back-to-back request/response
  transactions, a workload of its own; `--full-rtt` makes it print round-trip times.

Offloads trade latency for throughput (a 64 KiB super-packet delays what queues behind
it, GRO holds packets until a flush), so both are reported per offload profile.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Sequence

IRTT_PORT = 2112
SOCKPERF_PORT = 11111
PROBE_INTERVAL_MS = 10
"""One probe every 10 ms: 100 packets/s of 60 B, nothing next to a stream."""
RR_MESSAGE = 64
"""Request and response size of the ping-pong workload, bytes."""
PERCENTILES = (50.0, 99.0, 99.9)


class LatencyError(ValueError):
    """Output of irtt or sockperf that lacks what a sample needs."""


@dataclass(frozen=True)
class Latency:
    """Round-trip times of one repetition, microseconds."""

    p50_us: float
    p99_us: float
    p999_us: float
    samples: int
    lost: int = 0

    def counters(self, prefix: str) -> dict[str, float]:
        """As sample counters: "<prefix>_p50_us" … and the probes lost."""
        return {f"{prefix}_p50_us": self.p50_us, f"{prefix}_p99_us": self.p99_us,
                f"{prefix}_p999_us": self.p999_us, f"{prefix}_samples": float(self.samples),
                f"{prefix}_lost": float(self.lost)}


# --- command lines ----------------------------------------------------------------------


def irtt_server_args(bind: str, port: int = IRTT_PORT) -> list[str]:
    return ["irtt", "server", "-b", f"{bind}:{port}", "--timeout=1m"]


def irtt_client_args(server: str, duration_s: float, output: str, port: int = IRTT_PORT,
                     interval_ms: int = PROBE_INTERVAL_MS) -> list[str]:
    return ["irtt", "client", "-Q", "-i", f"{interval_ms}ms", "-d", f"{duration_s:g}s",
            "-o", output, f"{server}:{port}"]


def sockperf_server_args(bind: str, core: int, port: int = SOCKPERF_PORT) -> list[str]:
    return ["taskset", "-c", str(core), "sockperf", "server", "--tcp", "-i", bind, "-p", str(port)]


def sockperf_client_args(server: str, core: int, duration_s: float, port: int = SOCKPERF_PORT,
                         message: int = RR_MESSAGE) -> list[str]:
    return ["taskset", "-c", str(core), "sockperf", "ping-pong", "--tcp", "-i", server,
            "-p", str(port), "-t", str(max(1, round(duration_s))), "-m", str(message), "--full-rtt"]


# --- parsing ----------------------------------------------------------------------------


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """The q-th percentile (0 < q ≤ 100) by the nearest-rank method, as sockperf and
    most latency tools report it: the smallest value with at least q % at or below it."""
    if not sorted_values:
        raise LatencyError("no round trips to take a percentile of")
    rank = max(1, math.ceil(q / 100.0 * len(sorted_values)))
    return float(sorted_values[rank - 1])


def parse_irtt(text: str) -> Latency:
    """irtt client JSON → percentiles of the round trips that came back."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        raise LatencyError(f"irtt output is not JSON ({err.msg} at {err.pos})") from None
    trips = doc.get("round_trips") if isinstance(doc, dict) else None
    if not isinstance(trips, list):
        raise LatencyError("irtt JSON has no round_trips")
    rtts = sorted(t["delay"]["rtt"] / 1000.0 for t in trips
                  if t.get("lost") == "false" and "rtt" in t.get("delay", {}))
    lost = sum(1 for t in trips if t.get("lost") != "false")
    if not rtts:
        raise LatencyError(f"irtt: none of {len(trips)} probes came back")
    p50, p99, p999 = (percentile(rtts, q) for q in PERCENTILES)
    return Latency(p50, p99, p999, len(rtts), lost)


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_PERCENTILE = re.compile(r"percentile\s+([\d.]+)\s*=\s*([\d.]+)")
_OBSERVATIONS = re.compile(r"Total\s+(\d+)\s+observations")
_DROPPED = re.compile(r"#\s*dropped messages\s*=\s*(\d+)")


def parse_sockperf(text: str) -> Latency:
    """sockperf ping-pong output (with --full-rtt) → round-trip percentiles."""
    plain = _ANSI.sub("", text)
    if "avg-rtt" not in plain:
        raise LatencyError("sockperf output has no avg-rtt line: run ping-pong with --full-rtt")
    found = {float(q): float(v) for q, v in _PERCENTILE.findall(plain)}
    missing = [q for q in PERCENTILES if q not in found]
    if missing:
        raise LatencyError(f"sockperf output lacks percentiles {missing}")
    observations = _OBSERVATIONS.search(plain)
    dropped = _DROPPED.search(plain)
    return Latency(found[50.0], found[99.0], found[99.9],
                   int(observations.group(1)) if observations else 0,
                   int(dropped.group(1)) if dropped else 0)
