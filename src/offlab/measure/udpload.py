"""offlab-udpload (crates/udpload) as a UDP traffic source: the binary, its command
lines, one trial with its CPU window, and a pure parser of its two JSON reports.

iperf3 3.12 sends one datagram per system call and reads one per call. Today's UDP
stacks (QUIC) hand the kernel up to 64 datagrams per send with UDP_SEGMENT — cut in the
device when it offers USO (`tx-udp-segmentation`), in software GSO otherwise — and
read coalesced runs with UDP_GRO. udpload does either ("gso") or neither ("plain"), so
a plan compares them with one tool and the profiles say what USO and UDP GRO are worth.

The sender marks each datagram of the measured window; loss is what it sent in the
window less what the sink received of it. In local namespaces it runs this machine's
build; on real hosts (SSH) that build copied to each server by hash (`binary_on`,
hosts/files.py, as offlab-fwd is), then run there.
"""

from __future__ import annotations

import json
import subprocess
import time
import weakref
from pathlib import Path
from typing import TYPE_CHECKING

from .. import binaries
from . import cpu
from ..proc import ProcessError
from ..hosts.proctimes import process_percent, process_times
from ..records import CpuShare, TrafficSpec
from .sockbuf import UDP_SOCKET_BUFFER
from .traffic import IperfError, TrafficResult
from .window import Window

if TYPE_CHECKING:
    from ..hosts import Host
    from ..topology import Topology

PORT = 5301
BINARY_ENV = "OFFLAB_UDPLOAD"
WORKSPACE_BINARY = binaries.WORKSPACE_RELEASE / "offlab-udpload"
GRACE_S = 5.0
DRAIN_S = 0.05
"""After the sender ends, what is still in flight reaches the sink before it is stopped."""


class UdpLoadError(IperfError):
    """udpload missing, failing, or reporting what a sample cannot use (an IperfError, so
    the runner retries it as it retries iperf3)."""


def find_binary(workspace: Path = WORKSPACE_BINARY) -> Path:
    """$OFFLAB_UDPLOAD, else the workspace's release build, else `offlab-udpload` on PATH."""
    return binaries.find("offlab-udpload", BINARY_ENV, workspace, UdpLoadError)


_shipped: "weakref.WeakKeyDictionary[Host, Path]" = weakref.WeakKeyDictionary()
"""A server's copy of the binary, by host object: checked once per run's connection."""


def binary_on(host: "Host") -> Path:
    """Where `host` runs udpload: this machine's build, or on a server reached over SSH
    its copy there (copied by hash unless already there, hosts/files.py)."""
    from ..hosts import files
    from ..hosts.ssh import SshHost
    local = find_binary()
    if not isinstance(host, SshHost):
        return local
    if host not in _shipped:
        _shipped[host] = Path(files.ensure(host, local, executable=True)[0])
    return _shipped[host]


def _end_sink(host: "Host", sink) -> None:
    """SIGTERM: the sink prints its report and exits (a server's process by its pid there)."""
    if isinstance(sink, subprocess.Popen):
        sink.terminate()
    else:
        host.run(["kill", "-s", "TERM", str(sink.pid)], check=False)


def receiver_args(binary: Path, bind: str, core: int, spec: TrafficSpec, port: int = PORT) -> list[str]:
    return ["taskset", "-c", str(core), str(binary), "recv", "--bind", f"{bind}:{port}",
            "--rcvbuf", str(UDP_SOCKET_BUFFER), *(["--gro"] if spec.udp_gso else [])]


def sender_args(binary: Path, server: str, core: int, spec: TrafficSpec, port: int = PORT) -> list[str]:
    if spec.udp_payload is None:
        raise ValueError("a udpload traffic spec needs udp_payload")
    return ["taskset", "-c", str(core), str(binary), "send", "--to", f"{server}:{port}",
            "--payload", str(spec.udp_payload), "--rate", f"{spec.rate_bps or 0:.0f}",
            "--warmup", f"{spec.warmup_s:g}", "--duration", f"{spec.duration_s:g}",
            "--sndbuf", str(UDP_SOCKET_BUFFER), *(["--gso"] if spec.udp_gso else [])]


def parse(sender_text: str, receiver_text: str) -> TrafficResult:
    """The two reports → the measured window's rates and loss."""
    try:
        sent, got = json.loads(sender_text), json.loads(receiver_text)
    except json.JSONDecodeError as err:
        raise UdpLoadError(f"udpload output is not JSON ({err.msg})") from None
    if not isinstance(sent, dict) or not isinstance(got, dict) or sent.get("role") != "send" \
            or got.get("role") != "recv":
        raise UdpLoadError("udpload reports are not a sender's and a receiver's")
    window = float(sent.get("measured_s", 0.0))
    if window <= 0 or not sent.get("sent_measured"):
        raise UdpLoadError("udpload sent nothing in the measured window")
    lost = max(0, int(sent["sent_measured"]) - int(got["received_measured"]))
    reads = max(1, int(got["reads"]))
    calls = max(1, int(got.get("read_calls", reads)))
    return TrafficResult(
        throughput_bps=8 * got["bytes_measured"] / window,
        sender_bps=8 * sent["bytes_measured"] / window,
        window_s=window, retransmits=None, lost_packets=lost, total_packets=int(sent["sent_measured"]),
        reported=(("sender_sndbuf_bytes", float(sent["sndbuf"])), ("receiver_rcvbuf_bytes", float(got["rcvbuf"])),
                  ("udpload_segments_per_send", float(sent["segments_per_send"])),
                  # The whole life's count, warm-up included: a paced sender never gets ahead
                  # of its schedule, so this stays within rate x (warm-up + duration) however
                  # late the sender was woken (the measured window alone may hold catch-up).
                  ("udpload_sent_datagrams", float(sent["sent"])),
                  ("udpload_send_errors", float(sent["send_errors"])),
                  ("udpload_datagrams_per_read", got["received"] / reads),
                  ("udpload_reads_per_call", reads / calls),
                  ("udpload_coalesced_read_share", got["coalesced_reads"] / reads)),
    )


def bound(host: "Host", pid: int, port: int, timeout_s: float = 5.0) -> bool:
    """Has the sink (pid, on its host) bound its UDP port yet?"""
    wanted = f":{port:04X}"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            comm, udp = host.read_files([f"/proc/{pid}/comm", f"/proc/{pid}/net/udp"]).values()
            if (comm.strip() == "offlab-udpload"
                    and any(line.split()[1].endswith(wanted) for line in udp.splitlines()[1:] if line.split())):
                return True
        except (FileNotFoundError, ProcessLookupError, ProcessError):
            return False
        time.sleep(0.005)
    return False


def trial(topology: "Topology", spec: TrafficSpec, label: str) -> "tuple[TrafficResult, Window]":
    """One udpload test: the sink on the receiver, the sender for warm-up + duration, the
    machines' CPU and both processes' own CPU over the measured window."""

    sender, receiver = topology.sender, topology.receiver
    sink = receiver.host.spawn(receiver_args(binary_on(receiver.host), receiver.address, receiver.core, spec),
                               capture_stdout=True)
    try:
        if not bound(receiver.host, sink.pid, PORT):
            raise UdpLoadError(f"{label}: the udpload sink did not bind port {PORT}")
        source = sender.host.spawn(sender_args(binary_on(sender.host), receiver.address, sender.core, spec),
                                   capture_stdout=True)
        try:
            start = time.monotonic()
            machines = topology.cpu_machines()
            time.sleep(max(0.0, start + spec.warmup_s - time.monotonic()))
            before, started_at, opened = _machines(machines), time.time(), time.monotonic()
            apps = {"sender_app": (source.pid, sender.host), "receiver_app": (sink.pid, receiver.host)}
            apps_before = {k: process_times(pid, host) for k, (pid, host) in apps.items()}
            time.sleep(max(0.0, start + spec.warmup_s + spec.duration_s - time.monotonic()))
            after, closed = _machines(machines), time.monotonic()
            apps_after = {k: process_times(pid, host) for k, (pid, host) in apps.items()}
            sent_text, sent_err = source.communicate(timeout=GRACE_S)
        except subprocess.TimeoutExpired:
            raise UdpLoadError(f"{label}: the udpload sender still running {GRACE_S:g} s after its test") from None
        finally:
            sender.host.stop(source)
        time.sleep(DRAIN_S)
        _end_sink(receiver.host, sink)
        got_text, got_err = sink.communicate(timeout=GRACE_S)
    finally:
        receiver.host.stop(sink)
    if source.returncode != 0 or sink.returncode != 0:
        raise UdpLoadError(f"{label}: udpload failed: {(sent_err + got_err).strip()[-200:]}")
    result = parse(sent_text, got_text)
    counters = {"cpu_window_s": closed - opened, **result.counters}
    for role in apps:
        percent = process_percent(apps_before[role], apps_after[role], closed - opened)
        if percent is not None:
            counters.update({f"{role}_usr_pct": percent["usr"], f"{role}_sys_pct": percent["sys"]})
    shares = tuple(share for name in before for share in _labelled(name, before[name], after[name]))
    return result, Window(started_at, closed - opened, shares, counters)


def _machines(machines: "dict[str, Host]") -> dict[str, cpu.CpuTimes]:
    return {name: cpu.snapshot(host) for name, host in machines.items()}


def _labelled(name: str, before: cpu.CpuTimes, after: cpu.CpuTimes) -> list[CpuShare]:
    from dataclasses import replace
    return [replace(share, host=name) for share in cpu.shares_between(before, after)]
