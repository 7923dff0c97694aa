"""Latency probes beside a TCP stream (measure.py runs one with iperf3 when the traffic
asks for `latency_probe`):

* beside a saturating stream, irtt ("rtt"): a 60 B UDP probe every 2 ms;
* beside a paced (service-demand) stream, sockperf TCP ping-pong paced at
  `latency.RR_PACED_RATE` transactions per second ("rrload"): a request/response
  latency at a fixed load — the stream carries the same paced rate for every profile
  of a topology, so profiles are compared at one load, not each at its own maximum.

Both are pinned to their role's core (the client with the sender, the server with the
receiver) and count only round trips inside the stream's measured window: irtt runs
from the data connection on and its probes are kept by their send timestamps;
sockperf starts as the window opens and runs whole seconds inside it (its own warm-up
and end are left out by sockperf itself).
"""

from __future__ import annotations

import math
import subprocess
import time
from abc import ABC, abstractmethod
from dataclasses import replace
from typing import TYPE_CHECKING

from . import latency
from .traffic import IperfError

if TYPE_CHECKING:
    from ..records import TrafficSpec
    from ..topology import Topology

FINISH_GRACE_S = 10.0
"""How long past its own end a probe's client may take to report."""


class LatencyProbe(ABC):
    """A latency probe's three moments in a stream's test: its client runs on the
    sender's host, its server on the receiver's."""

    def __init__(self, topology: "Topology", spec: "TrafficSpec"):
        self.topology, self.spec = topology, spec
        self.client: subprocess.Popen[str] | None = None
        self.server: subprocess.Popen[str] | None = None

    @abstractmethod
    def start(self) -> None:
        """Once the stream's data connection is up."""

    @abstractmethod
    def window_opened(self) -> None:
        """Right after the measured window's opening snapshots."""

    @abstractmethod
    def finish(self, window: tuple[float, float]) -> dict[str, float]:
        """After the test: the round trips inside `window` (wall clock) as counters; ends
        what it started."""

    def stop(self) -> None:
        """End what the probe started (the test failed, or the probe was read)."""
        if self.client is not None:
            self.topology.sender.host.stop(self.client)
        if self.server is not None:
            self.topology.receiver.host.stop(self.server)


def for_stream(topology: "Topology", spec: "TrafficSpec") -> LatencyProbe:
    """sockperf TCP request/response beside a paced stream, irtt beside a saturating one."""
    if spec.service_demand:
        return PacedRequestResponse(topology, spec)
    return Irtt(topology, spec)


class Irtt(LatencyProbe):
    output = ""

    def start(self) -> None:
        sender, receiver = self.topology.sender, self.topology.receiver
        self.server = receiver.host.spawn(latency.irtt_server_args(receiver.address, receiver.core))
        self.output = f"{sender.host.scratch_dir()}/offlab-irtt-{sender.host.name}-{time.monotonic_ns()}.json"
        time.sleep(0.05)  # irtt binds at once; a probe sent before would only be lost
        self.client = sender.host.spawn(latency.irtt_client_args(
            receiver.address, sender.core, self.spec.warmup_s + self.spec.duration_s, self.output))

    def window_opened(self) -> None:
        pass  # irtt runs through the warm-up; its probes are placed by timestamp

    def finish(self, window: tuple[float, float]) -> dict[str, float]:
        sender = self.topology.sender
        try:
            if self.client is None:
                return {}
            _, err = self.client.communicate(timeout=FINISH_GRACE_S)
            if self.client.returncode != 0:
                raise IperfError(f"irtt probe failed: {(err or '').strip()[-200:] or self.client.returncode}")
            text = sender.host.read_file(self.output)
        except subprocess.TimeoutExpired:
            raise IperfError("irtt probe did not finish") from None
        finally:
            self.stop()
            if self.output:
                sender.host.run(["rm", "-f", self.output], check=False)
        return latency.parse_irtt(text, window).counters("rtt")


class PacedRequestResponse(LatencyProbe):
    log = ""

    def start(self) -> None:
        receiver = self.topology.receiver
        self.server = receiver.host.spawn(latency.sockperf_server_args(receiver.address, receiver.core))

    def window_opened(self) -> None:
        sender, receiver = self.topology.sender, self.topology.receiver
        self.log = f"{sender.host.scratch_dir()}/offlab-sockperf-{sender.host.name}-{time.monotonic_ns()}.csv"
        self.client = sender.host.spawn(latency.sockperf_client_args(
            receiver.address, sender.core, inside_seconds(self.spec.duration_s), full_log=self.log,
            rate=latency.RR_PACED_RATE), capture_stdout=True)

    def finish(self, window: tuple[float, float]) -> dict[str, float]:
        sender = self.topology.sender
        try:
            if self.client is None:
                return {}
            out, err = self.client.communicate(timeout=FINISH_GRACE_S)
            if self.client.returncode != 0:
                raise IperfError(f"sockperf probe failed: {(err or '').strip()[-200:] or self.client.returncode}")
            found = latency.parse_sockperf(out + err)
            found = replace(found, histogram=latency.parse_sockperf_log(sender.host.read_file(self.log)))
        except subprocess.TimeoutExpired:
            raise IperfError("sockperf probe did not finish") from None
        finally:
            self.stop()
            if self.log:
                sender.host.run(["rm", "-f", self.log], check=False)
        return {**found.counters("rrload"), "rrload_rate": float(latency.RR_PACED_RATE)}


def inside_seconds(window_s: float) -> int:
    """sockperf's run (whole seconds) that fits inside a measured window, with room for
    its start: the window less `latency.RR_START_ROOM_S`, rounded down (at least 1 s:
    the plan gives a paced stream a probe only from `latency.RR_MIN_WINDOW_S` on)."""
    return max(1, math.floor(window_s - latency.RR_START_ROOM_S))
