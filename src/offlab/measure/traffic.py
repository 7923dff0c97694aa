"""iperf3 traffic: command lines, a server kept up across repetitions, and a pure parser
of the client's JSON (with the server's JSON embedded by `--get-server-output`).

Warm-up is handled by us, not by iperf3's `-O` (which iperf3 3.12 only accepts in whole
seconds): the test runs `-t warmup+duration` with a report interval that divides the
warm-up, and every figure is computed from the intervals that start after it. iperf3
reads `-t` as whole seconds too, so warm-up + duration must be a whole number.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from subprocess import Popen
from typing import TYPE_CHECKING, Any

from ..proc import ProcessError
from ..records import Interval, TrafficSpec
from ..hosts.ports import DEFAULT_PORT, port_taken_text
from .sockbuf import UDP_SOCKET_BUFFER

if TYPE_CHECKING:
    from ..hosts import Host

SERVER_INTERVAL_S = 0.1
"""The server reports at iperf3's finest interval (its own -i, not the client's), so any
warm-up that is a multiple of 0.1 s falls on an interval boundary."""
_INTERVAL_CHOICES = (1.0, 0.5, 0.25, 0.2, 0.1)
_TCP_LISTEN = "0A"
_TCP_ESTABLISHED = "01"


class IperfError(Exception):
    """iperf3 reported an error, or its JSON lacks what a sample needs."""


@dataclass(frozen=True)
class TrafficResult:
    """One repetition over the measured window (warm-up intervals excluded)."""

    throughput_bps: float
    """Bytes the receiver got in the measured intervals × 8 / their length."""
    sender_bps: float
    window_s: float
    """Length of the measured window as the receiver's intervals cover it."""
    retransmits: int | None
    lost_packets: int | None
    total_packets: int | None
    reverse: "DirectionRates | None" = None
    """With `--bidir`: the server → client direction alone (the totals above include it)."""
    intervals: tuple[Interval, ...] = ()
    """The receiver's rate per report interval over the whole test, warm-up marked."""
    reported: tuple[tuple[str, float], ...] = ()
    """What the tool reported beside the rates, as sample counters: the socket buffers
    the kernel granted ("receiver_rcvbuf_bytes"), udpload's send and read counts."""

    @property
    def loss_percent(self) -> float | None:
        if self.lost_packets is None or not self.total_packets:
            return None
        return 100.0 * self.lost_packets / self.total_packets

    @property
    def counters(self) -> dict[str, float]:
        """Granted socket buffers, and per-direction rates of a bidirectional test, for
        `Sample.counters`."""
        if self.reverse is None:
            return dict(self.reported)
        return dict(self.reported) | {
            "forward_bps": self.throughput_bps - self.reverse.received_bps,
            "forward_sender_bps": self.sender_bps - self.reverse.sent_bps,
            "reverse_bps": self.reverse.received_bps,
            "reverse_sender_bps": self.reverse.sent_bps,
        }


@dataclass(frozen=True)
class DirectionRates:
    """One direction of a test over the measured window, bits per second."""

    received_bps: float
    sent_bps: float
    retransmits: int | None


def whole_seconds(total_s: float) -> int:
    """warm-up + duration as iperf3's `-t`, which takes whole seconds only."""
    if total_s < 1 or abs(total_s - round(total_s)) > 1e-9:
        raise ValueError(f"warm-up + duration = {total_s:g} s is not a whole number of seconds")
    return int(round(total_s))


def report_interval(warmup_s: float) -> float:
    """The longest iperf3 report interval (≥ 0.1 s, iperf3's minimum) dividing the warm-up."""
    for interval in _INTERVAL_CHOICES:
        ratio = warmup_s / interval
        if abs(ratio - round(ratio)) < 1e-9:
            return interval
    raise ValueError(f"warm-up {warmup_s} s is not a multiple of 0.1 s")


def server_args(bind: str, core: int, port: int = DEFAULT_PORT) -> list[str]:
    return ["iperf3", "-s", "-J", "-B", bind, "-p", str(port), "-A", str(core),
            "-i", f"{SERVER_INTERVAL_S:g}"]


def client_args(spec: TrafficSpec, server: str, core: int, port: int = DEFAULT_PORT) -> list[str]:
    args = [
        "iperf3", "-c", server, "-p", str(port), "-J", "--get-server-output",
        "-A", str(core), "-t", str(whole_seconds(spec.warmup_s + spec.duration_s)),
        "-i", f"{report_interval(spec.warmup_s):g}",
    ]
    if spec.streams > 1:
        args += ["-P", str(spec.streams)]
    if spec.bidirectional:
        args.append("--bidir")
    if spec.protocol == "udp":
        if spec.udp_payload is None:
            raise ValueError("a UDP traffic spec needs udp_payload")
        rate = f"{spec.rate_bps:.0f}" if spec.rate_bps else "0"  # 0: as fast as it can
        # A tuned test's buffer (sockbuf.py): the server applies the client's -w too.
        args += ["-u", "-b", rate, "-l", str(spec.udp_payload), "-w", str(UDP_SOCKET_BUFFER)]
    elif spec.message_size:
        args += ["-l", str(spec.message_size)]
    if spec.protocol == "tcp" and spec.rate_bps:  # paced TCP (service demand)
        args += ["-b", f"{spec.rate_bps:.0f}"]
    return args


# --- parsing ---------------------------------------------------------------------------


def parse_result(text: str, warmup_s: float) -> TrafficResult:
    """Figures over the intervals that start at or after `warmup_s`.

    With `--bidir` iperf3 reports each direction apart: the client's `sum` is what it
    sent and its `sum_bidir_reverse` what it received; the server's the other way
    round. Throughput, sent rate and retransmits are then the sums of both directions
    (each rate over its own window), and `reverse` keeps the server → client half."""
    try:
        client = json.loads(text)
    except json.JSONDecodeError as err:
        raise IperfError(f"iperf3 output is not JSON ({err.msg} at {err.pos})") from err
    _raise_reported_error(client, "client")
    server = client.get("server_output_json")
    if not isinstance(server, dict):
        raise IperfError("no server_output_json: run the client with --get-server-output "
                         "against a server started with -J")
    _raise_reported_error(server, "server")
    udp = client.get("start", {}).get("test_start", {}).get("protocol") == "UDP"
    forward, received = _direction((server, "server"), (client, "client"), warmup_s, "sum", udp)
    reverse = None
    if any("sum_bidir_reverse" in i for i in client.get("intervals", [])):
        reverse, _ = _direction((client, "client"), (server, "server"), warmup_s,
                                "sum_bidir_reverse", udp)
    both = [forward] + ([reverse] if reverse is not None else [])
    retransmits = [d.retransmits for d in both]
    return TrafficResult(
        throughput_bps=sum(d.received_bps for d in both),
        sender_bps=sum(d.sent_bps for d in both),
        window_s=sum(i["seconds"] for i in received),
        retransmits=None if udp else sum(r or 0 for r in retransmits),
        lost_packets=int(sum(i["lost_packets"] for i in received)) if udp else None,
        total_packets=int(sum(i["packets"] for i in received)) if udp else None,
        reverse=reverse,
        intervals=_series(server, warmup_s),
        reported=_buffers(client, server) if udp else (),  # TCP's autotune moves them
    )


def _buffers(client: dict[str, Any], server: dict[str, Any]) -> tuple[tuple[str, float], ...]:
    """What the kernel granted each side (iperf3 ≥ 3.11 reports it; doubled by the kernel
    for its own bookkeeping, so 2 × the request when the request was allowed)."""
    found = []
    for who, doc, key in (("sender_sndbuf_bytes", client, "sndbuf_actual"),
                          ("receiver_rcvbuf_bytes", server, "rcvbuf_actual")):
        value = doc.get("start", {}).get(key)
        if isinstance(value, (int, float)) and value > 0:
            found.append((who, float(value)))
    return tuple(found)


def _series(receiver: dict[str, Any], warmup_s: float) -> tuple[Interval, ...]:
    """Every "sum" interval of the receiving side, as a time series."""
    sums = [i.get("sum") for i in receiver.get("intervals", [])]
    sums = [s for s in sums if isinstance(s, dict)]
    if not sums:
        return ()
    slack = 0.5 * (sums[0]["end"] - sums[0]["start"])
    return tuple(Interval(float(s["start"]), float(s["end"]), float(s["bits_per_second"]),
                          warmup=s["start"] < warmup_s - slack) for s in sums)


def _direction(receiver: tuple[dict[str, Any], str], sender: tuple[dict[str, Any], str],
               warmup_s: float, key: str, udp: bool) -> tuple[DirectionRates, list[dict[str, Any]]]:
    """One direction's rates (and the receiver's kept intervals) from the receiving
    side's and the sending side's (JSON, name) interval sums named `key`."""
    received = _measured(*receiver, warmup_s, key)
    sent = _measured(*sender, warmup_s, key)
    window = sum(i["seconds"] for i in received)
    sent_window = sum(i["seconds"] for i in sent)
    if window <= 0 or sent_window <= 0:
        raise IperfError("the measured window is empty")
    return DirectionRates(
        received_bps=8 * sum(i["bytes"] for i in received) / window,
        sent_bps=8 * sum(i["bytes"] for i in sent) / sent_window,
        retransmits=None if udp else int(sum(i.get("retransmits", 0) for i in sent)),
    ), received


def _raise_reported_error(doc: dict[str, Any], who: str) -> None:
    if doc.get("error"):
        raise IperfError(f"iperf3 {who}: {doc['error']}")


def _measured(doc: dict[str, Any], who: str, warmup_s: float,
              key: str = "sum") -> list[dict[str, Any]]:
    """The `key` sum of every interval that starts after the warm-up (half an interval
    of slack absorbs iperf3's timer jitter on the boundary)."""
    intervals = [i.get(key) for i in doc.get("intervals", [])]
    if not intervals or any(not isinstance(s, dict) for s in intervals):
        raise IperfError(f"iperf3 {who} JSON has no '{key}' intervals")
    first = intervals[0]
    slack = 0.5 * (first["end"] - first["start"])
    kept = [s for s in intervals if s["start"] >= warmup_s - slack and not s.get("omitted")]
    if not kept:
        raise IperfError(f"iperf3 {who}: no interval after the {warmup_s:g} s warm-up")
    return kept


def listening_ports(proc_net_tcp: str) -> set[int]:
    """Local ports in LISTEN state in a /proc/<pid>/net/tcp(6) table."""
    ports = set()
    for line in proc_net_tcp.splitlines()[1:]:
        fields = line.split()
        if len(fields) > 3 and fields[3] == _TCP_LISTEN:
            ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def sockets_to_port(table: str, port: int, state: str | None) -> int:
    """Sockets in a /proc/<pid>/net/{tcp,udp} table whose remote port is `port`
    (and whose state is `state`, e.g. "01" ESTABLISHED, if given)."""
    count = 0
    for line in table.splitlines()[1:]:
        fields = line.split()
        if len(fields) > 3 and int(fields[2].rsplit(":", 1)[1], 16) == port:
            count += state is None or fields[3] == state
    return count


def wait_for_data_connection(host: "Host", pid: int, port: int, timeout_s: float) -> float | None:
    """Monotonic time at which the client has its data socket open next to the control
    connection — iperf3 starts the test clock right after. None if not seen in time
    (e.g. the client already failed)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:  # one command on a server per poll (read_files), not one per file
            comm, tcp, udp = host.read_files([f"/proc/{pid}/comm", f"/proc/{pid}/net/tcp",
                                              f"/proc/{pid}/net/udp"]).values()
            if (comm.strip() == "iperf3"
                    and sockets_to_port(tcp, port, _TCP_ESTABLISHED) + sockets_to_port(udp, port, None) >= 2):
                return time.monotonic()
        except (FileNotFoundError, ProcessLookupError, ProcessError):
            return None
        time.sleep(0.001)
    return None


# --- the server ------------------------------------------------------------------------


class IperfServer:
    """An iperf3 server on the receiving host, reused for every repetition."""

    def __init__(self, host: "Host", bind: str, core: int, port: int = DEFAULT_PORT):
        self.host = host
        self.args = server_args(bind, core, port)
        self.port = port
        self._proc: Popen[str] | None = None

    def __enter__(self) -> "IperfServer":
        self._proc = self.host.spawn(self.args)
        self._wait_listening(timeout_s=5.0)
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._proc is not None:
            self.host.stop(self._proc)
            self._proc = None

    @property
    def pid(self) -> int | None:
        """The iperf3 server's pid (`ip netns exec` execs it, so it is the same)."""
        return self._proc.pid if self._proc is not None else None

    def ensure_running(self) -> None:
        """Restart the server if it died (iperf3 servers exit on some client errors)."""
        if self._proc is None or self._proc.poll() is not None:
            self.close()
            self.__enter__()

    def _wait_listening(self, timeout_s: float) -> None:
        # The spawned pid is iperf3's own on its host, so /proc/<pid>/net is its view.
        assert self._proc is not None
        pid = self._proc.pid
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                err = self._proc.stderr.read() if self._proc.stderr else ""
                said = port_taken_text(self.host, self.port, err.strip() or "no output")
                raise ProcessError(self.args, f"exited at start: {said}")
            try:
                # Until the host's launcher has exec'd iperf3 the tables are not its own.
                # comm and the IPv4 table in one command on a server; tcp6 (which a
                # kernel without IPv6 lacks) only when the port is not in the first.
                comm, tcp = self.host.read_files([f"/proc/{pid}/comm", f"/proc/{pid}/net/tcp"]).values()
                execd = comm.strip() == "iperf3"
                if execd and (self.port in listening_ports(tcp)
                              or self.port in listening_ports(self.host.read_file(f"/proc/{pid}/net/tcp6"))):
                    return
            except (FileNotFoundError, ProcessLookupError, ProcessError):
                pass
            time.sleep(0.01)
        raise ProcessError(self.args, f"not listening on port {self.port} after {timeout_s:g} s")
