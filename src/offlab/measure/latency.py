"""Latency under load: command lines and pure parsers for the two latency tools.

* irtt (Debian's `irtt`): an isochronous UDP probe, a packet every 2 ms, run beside a
  TCP stream; its JSON (`-o FILE`) holds every round trip, from which we take the
  percentiles ourselves (irtt's own stats give only the median).
* sockperf (Debian's `sockperf`) ping-pong over TCP or UDP (TCP_RR / UDP_RR-style):
  back-to-back request/response transactions, a workload of its own; `--full-rtt`
  makes it print round-trip times, `--full-log` writes every one of them.

Every round trip is also kept as a histogram (rtthist.py), so a report pools the
repetitions and gives a tail percentile only where enough round trips carry it.

Whether offloads trade latency for throughput (a 64 KiB super-packet delays what queues
behind it, GRO holds packets until a flush) is a question for the data: both are
reported per offload profile, and the report's latency section opens with what its
tables show (report/latency_view.py). Latency at a fixed load — a TCP request/response
beside a stream paced alike for every profile — is latency_probes.py's.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from ..records import PROBE_INTERVAL_MS, RR_MESSAGE
from . import rtthist

IRTT_PORT = 2112
SOCKPERF_PORT = 11111
SERVER_MIN_INTERVAL = "1ms"
"""The irtt server refuses clients faster than its minimum interval (10 ms by default)."""
RR_PACED_RATE = 500
"""Transactions per second of the request/response probe beside a paced stream: one
every 2 ms like irtt's, a load of its own far below the stream's."""
RR_START_ROOM_S = 0.25
"""What the paced probe leaves of the window for its client's start: sockperf runs whole
seconds, started as the window opens, and must end inside it."""
RR_MIN_WINDOW_S = 1.0 + RR_START_ROOM_S
"""The shortest paced window that holds one second of sockperf."""
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
    histogram: Mapping[int, int] = field(default_factory=dict)
    """Every round trip, binned (rtthist.py); empty when the tool gave only percentiles."""
    seconds: float | None = None
    """Over how long the round trips were taken (sockperf's valid duration)."""
    outside: int = 0
    """Probes sent outside the measured window (the warm-up, the tail), left out."""

    def counters(self, prefix: str) -> dict[str, float]:
        """As sample counters: "<prefix>_p50_us" …, the probes lost, the histogram."""
        return {f"{prefix}_p50_us": self.p50_us, f"{prefix}_p99_us": self.p99_us,
                f"{prefix}_p999_us": self.p999_us, f"{prefix}_samples": float(self.samples),
                f"{prefix}_lost": float(self.lost), f"{prefix}_outside": float(self.outside),
                **rtthist.to_counters(self.histogram, prefix)}


# --- command lines ----------------------------------------------------------------------


def irtt_server_args(bind: str, core: int, port: int = IRTT_PORT) -> list[str]:
    """The irtt server pinned to the receiver's core, beside the stream's receiver."""
    return ["taskset", "-c", str(core), "irtt", "server", "-b", f"{bind}:{port}", "--timeout=1m",
            "-i", SERVER_MIN_INTERVAL]


def irtt_client_args(server: str, core: int, duration_s: float, output: str, port: int = IRTT_PORT,
                     interval_ms: int = PROBE_INTERVAL_MS) -> list[str]:
    """The irtt client pinned to the sender's core: unpinned, the scheduler put it on
    whichever core was idle, so its round trips measured the scheduler's choice."""
    return ["taskset", "-c", str(core), "irtt", "client", "-Q", "-i", f"{interval_ms}ms",
            "-d", f"{duration_s:g}s", "-o", output, f"{server}:{port}"]


def sockperf_server_args(bind: str, core: int, port: int = SOCKPERF_PORT, protocol: str = "tcp") -> list[str]:
    tcp = ["--tcp"] if protocol == "tcp" else []  # sockperf's default is UDP
    return ["taskset", "-c", str(core), "sockperf", "server", *tcp, "-i", bind, "-p", str(port)]


def sockperf_client_args(server: str, core: int, duration_s: float, port: int = SOCKPERF_PORT,
                         message: int = RR_MESSAGE, protocol: str = "tcp",
                         full_log: str | None = None, rate: int | None = None) -> list[str]:
    """ping-pong back to back, or paced at `rate` transactions per second (--mps)."""
    tcp = ["--tcp"] if protocol == "tcp" else []
    log = ["--full-log", full_log] if full_log else []
    paced = [f"--mps={rate}"] if rate else []
    return ["taskset", "-c", str(core), "sockperf", "ping-pong", *tcp, "-i", server,
            "-p", str(port), "-t", str(max(1, round(duration_s))), "-m", str(message), *paced,
            "--full-rtt", *log]


# --- parsing ----------------------------------------------------------------------------


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """The q-th percentile (0 < q ≤ 100) by the nearest-rank method, as sockperf and
    most latency tools report it: the smallest value with at least q % at or below it."""
    if not sorted_values:
        raise LatencyError("no round trips to take a percentile of")
    rank = max(1, math.ceil(q / 100.0 * len(sorted_values)))
    return float(sorted_values[rank - 1])


def parse_irtt(text: str, window: tuple[float, float] | None = None) -> Latency:
    """irtt client JSON → percentiles of the round trips that came back. With `window`
    (wall-clock start and end, seconds since the epoch), only probes the client sent
    inside it count: the probe runs through the stream's warm-up, whose round trips are
    not the measured load's. Dropped probes are counted ("outside")."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        raise LatencyError(f"irtt output is not JSON ({err.msg} at {err.pos})") from None
    trips = doc.get("round_trips") if isinstance(doc, dict) else None
    if not isinstance(trips, list):
        raise LatencyError("irtt JSON has no round_trips")
    inside = [t for t in trips if window is None or _sent_within(t, window)]
    rtts = sorted(t["delay"]["rtt"] / 1000.0 for t in inside
                  if t.get("lost") == "false" and "rtt" in t.get("delay", {}))
    lost = sum(1 for t in inside if t.get("lost") != "false")
    if not rtts:
        raise LatencyError(f"irtt: none of {len(inside)} probes sent in the measured window came back "
                           f"({len(trips)} sent in all)")
    p50, p99, p999 = (percentile(rtts, q) for q in PERCENTILES)
    return Latency(p50, p99, p999, len(rtts), lost, rtthist.histogram(rtts), outside=len(trips) - len(inside))


def _sent_within(trip: Mapping, window: tuple[float, float]) -> bool:
    """Whether irtt's client sent this probe inside the window (its wall-clock send
    timestamp, ns); a probe without one cannot be placed and is left out."""
    sent = trip.get("timestamps", {}).get("client", {}).get("send", {}).get("wall")
    return isinstance(sent, int) and window[0] <= sent / 1e9 <= window[1]


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_PERCENTILE = re.compile(r"percentile\s+([\d.]+)\s*=\s*([\d.]+)")
_OBSERVATIONS = re.compile(r"Total\s+(\d+)\s+observations")
_DROPPED = re.compile(r"#\s*dropped messages\s*=\s*(\d+)")
_VALID = re.compile(r"\[Valid Duration\]\s*RunTime=([\d.]+)\s*sec")


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
    valid = _VALID.search(plain)
    return Latency(found[50.0], found[99.0], found[99.9],
                   int(observations.group(1)) if observations else 0,
                   int(dropped.group(1)) if dropped else 0,
                   seconds=float(valid.group(1)) if valid else None)


def parse_sockperf_log(text: str) -> dict[int, int]:
    """sockperf's `--full-log` CSV (packet, txTime, rxTime, rtt(usec)) → a histogram of
    the round trips; lines that are not four numbers (the header) are skipped."""
    rtts = []
    for line in text.splitlines():
        fields = [f.strip() for f in line.split(",")]
        if len(fields) == 4:
            try:
                rtts.append(float(fields[3]))
            except ValueError:
                continue
    if not rtts:
        raise LatencyError("sockperf full log has no round trips")
    return rtthist.histogram(rtts)
