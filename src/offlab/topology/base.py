"""What every scenario shares: the hosts it creates (local namespaces), guaranteed
teardown as a context manager, the two endpoints and their pinned cores, the
interfaces whose offloads a profile controls, and the hooks a scenario with a userspace
datapath fills in. Scenario builders subclass `Topology` and implement `_build`."""

from __future__ import annotations

import json
import os
import signal
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import ClassVar, Iterator

from ..hosts import Host, LocalNamespace, connect_veth
from ..hosts.offloads import Interface
from ..records import DatapathSetting, FeatureState, Params
from ..hosts.ports import DEFAULT_PORT


class TopologyError(Exception):
    """A topology that could not be built or torn down."""


class Interrupted(BaseException):
    """SIGINT, SIGTERM or SIGHUP (a closed terminal) arrived; unwinds through every `finally` and `__exit__`.
    A BaseException so that no `except Exception` on the way swallows it."""

    def __init__(self, signum: int):
        self.signum = signum
        super().__init__(signal.Signals(signum).name)


class TerminationSignals:
    """Within this block SIGINT, SIGTERM and SIGHUP raise `Interrupted` once; later signals are
    ignored so the teardown they started cannot itself be interrupted."""

    def __init__(self) -> None:
        self.received: int | None = None
        self._previous: dict[int, object] = {}
        self._owner = os.getpid()

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if os.getpid() != self._owner:
            # A forked helper (pyroute2 forks to enter namespaces) inherited this
            # handler: it must simply die, not run the parent's teardown.
            os._exit(128 + signum)
        if self.received is None:
            self.received = signum
            raise Interrupted(signum)

    def __enter__(self) -> "TerminationSignals":
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)  # type: ignore[arg-type]


@contextmanager
def deferred_signals() -> Iterator[None]:
    """SIGINT/SIGTERM are held (not lost) inside this block and delivered after it, so
    a teardown is never cut in half by the signal that asked for it."""
    held = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


@dataclass(frozen=True)
class Endpoint:
    """One end of the traffic: the host iperf3 runs on, the address it uses, its core."""

    role: str
    """"sender" or "receiver"."""
    host: Host
    address: str
    core: int


class Topology:
    """Base of every scenario. Use as `with builder(mtu, params) as topo:`; the hosts it
    created are removed on exit, whatever happened inside."""

    scenario: ClassVar[str]
    tunnel: ClassVar[bool] = False
    datapath: ClassVar[bool] = False
    """Whether a case of this scenario may carry a userspace datapath setting."""
    iperf3_port: int = DEFAULT_PORT
    """iperf3's server port (real hosts: the hosts file's [test_network] iperf3_port)."""

    def __init__(self, mtu: int, params: Params | None = None, *, sender_core: int = 0,
                 receiver_core: int = 1, steer_rx_softirq: bool = True, pid: int | None = None):
        self.mtu = mtu
        self.params = params or Params()
        self.sender_core = sender_core
        self.receiver_core = receiver_core
        self.steer_rx_softirq = steer_rx_softirq
        self._pid = pid
        self._owner = os.getpid()
        self.hosts: dict[str, LocalNamespace] = {}
        self._napi_homes: list[tuple[Host, str, int]] = []
        """(host, device, core) whose NAPI thread must run on `core`."""
        self._napi_pids: dict[int, int] = {}
        """pid of a NAPI thread we pinned → its core."""

    # --- what scenarios provide -------------------------------------------------------

    def _build(self) -> None:
        raise NotImplementedError

    @property
    def sender(self) -> Endpoint:
        raise NotImplementedError

    @property
    def receiver(self) -> Endpoint:
        raise NotImplementedError

    def offload_interfaces(self) -> list[Interface]:
        raise NotImplementedError

    @property
    def roles(self) -> dict[str, int]:
        """role → the core it is pinned to (known before the hosts exist)."""
        return {"sender": self.sender_core, "receiver": self.receiver_core}

    @property
    def role_hosts(self) -> dict[str, str]:
        """role → host name, when the roles' cores are on separate machines (none here)."""
        return {}

    def cpu_machines(self) -> dict[str, Host]:
        """One host per machine whose cores a sample's CPU shares cover, by the label its
        shares get: "" when both endpoints share this machine's cores, the host's name
        ("tx", "rx") when they are apart."""
        hosts = {e.host.machine: e.host for e in (self.sender, self.receiver)}
        if len(hosts) == 1:
            return {"": next(iter(hosts.values()))}
        return {host.name: host for host in hosts.values()}

    def inner_cpu_hosts(self) -> dict[str, Host]:
        """Hosts that run on this machine's cores but have cores of their own (guests),
        whose per-core classes a sample keeps as counters, by label."""
        return {}

    def window_threads(self) -> dict[str, tuple[tuple[int, int], ...]]:
        """Threads of this machine whose CPU over the measured window a sample keeps, in
        groups by label ("qemu-a:vcpu" → (pid, tid) of guest A's vCPU threads)."""
        return {}

    def remote_window_threads(self) -> dict[str, tuple[Host, tuple[tuple[int, int], ...]]]:
        """As `window_threads`, for threads of another machine (a server's QEMU), read
        on the host given: label → (host, (pid, tid) …)."""
        return {}

    def counter_hosts(self) -> dict[str, Host]:
        """Hosts whose kernel counters a sample keeps, by name (the counters' prefix)."""
        return dict(self.hosts)

    def nic_interfaces(self) -> dict[str, list[str]]:
        """host name → NICs whose own counters (`ethtool -S`) a sample keeps (real hosts)."""
        return {}

    def apply_datapath(self, setting: DatapathSetting | None) -> dict[str, dict[str, FeatureState]]:
        """Put a case's userspace datapath in place; its state in force. Scenarios with a
        datapath override this; the others have none to set."""
        if setting is not None:
            raise TopologyError(f"{self.scenario} has no userspace datapath to set ({setting.label})")
        return {}

    def datapath_counters(self) -> dict[str, float]:
        """The userspace datapath's counters that grew since the previous call."""
        return {}

    # --- lifecycle --------------------------------------------------------------------

    def __enter__(self) -> "Topology":
        try:
            self._build()
        except BaseException:
            self.teardown()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.teardown()

    def teardown(self) -> None:
        """Remove every host this topology created (their devices go with them).
        Tries all of them and reports the ones that failed."""
        if os.getpid() != self._owner:
            return  # a forked child unwinding: the namespaces belong to the parent
        failed = []
        with deferred_signals():
            for host in reversed(list(self.hosts.values())):
                try:
                    host.remove()
                except OSError as err:
                    failed.append(f"{host.namespace}: {err}")
            self.hosts.clear()
        if failed:
            raise TopologyError("teardown failed: " + "; ".join(failed))

    # --- helpers for builders ---------------------------------------------------------

    def add_host(self, role: str) -> LocalNamespace:
        host = LocalNamespace(role, self._pid)
        self.hosts[role] = host  # first: a signal right after create still tears it down
        host.create()
        return host

    def link(self, left: LocalNamespace, left_dev: str, right: LocalNamespace, right_dev: str,
             addresses: tuple[str | None, str | None], prefixlen: int, mtu: int | None = None) -> None:
        """A veth pair between two hosts, each end addressed (or not) and up."""
        connect_veth(left, left_dev, right, right_dev)
        for host, device, address in ((left, left_dev, addresses[0]), (right, right_dev, addresses[1])):
            self.set_mtu(host, device, mtu or self.mtu)
            if address is not None:
                host.add_address(device, address, prefixlen)

    def set_mtu(self, host: Host, device: str, mtu: int) -> None:
        """Set a device's MTU and bring it up; a refused MTU is one line with the range
        the device accepts."""
        done = host.ip("link", "set", "dev", device, "mtu", str(mtu), check=False)
        if done.returncode != 0:
            details = json.loads(host.ip("-d", "-j", "link", "show", "dev", device).stdout or "[{}]")[0]
            low, high = details.get("min_mtu", "?"), details.get("max_mtu", "?")
            raise TopologyError(f"{self.scenario}: {device} refuses MTU {mtu} ({done.stderr.strip()}); "
                                f"it accepts {low} to {high}")
        host.set_link(device)

    def steer_receive(self, host: Host, device: str, core: int) -> None:
        """Receive processing of `device` on `core`, as on a separate host.

        A veth delivers on the *transmitting* CPU (its xmit runs the peer's receive
        softirq). RPS moves the protocol stack to `core`; the NAPI poll (where GRO runs,
        present only while GRO is on) is made a kernel thread and pinned there by
        `pin_napi_threads` after every offload change."""
        self._napi_homes.append((host, device, core))
        self.rps(host, device, core)

    def rps(self, host: Host, device: str, core: int) -> None:
        """The protocol stack of what `device` receives on `core` (RPS)."""
        # Inside the namespace /sys shows its own devices; only the queues in use
        # (real_num_rx_queues) appear there.
        queues_dir = f"/sys/class/net/{device}/queues"
        listing = host.run(["ls", queues_dir]).stdout.split()
        for queue in (q for q in listing if q.startswith("rx-")):
            host.write_file(f"{queues_dir}/{queue}/rps_cpus", f"{1 << core:x}\n")

    def napi_snapshot(self) -> set[int]:
        """Pids of the NAPI threads of our steered devices' names before an offload
        change; threads that appear after it are ours."""
        return set(napi_threads({device for _, device, _ in self._napi_homes}))

    def pin_napi_threads(self, before: set[int]) -> dict[int, int]:
        """Make each steered device's NAPI threaded and pin its thread; return pid → core.

        veth has a NAPI instance only while GRO is on, and recreates its thread when GRO
        is toggled; writing `threaded` fails (EIO) while there is none, which is fine."""
        for host, device, core in self._napi_homes:
            host.write_file(f"/sys/class/net/{device}/threaded", "1\n", check=False)
            now = napi_threads({device})
            for pid in set(now) - before:
                self._napi_pids[pid] = core
        pinned = {}
        for pid, core in list(self._napi_pids.items()):
            try:
                os.sched_setaffinity(pid, {core})
                pinned[pid] = core
            except ProcessLookupError:
                del self._napi_pids[pid]  # GRO went off: that thread is gone
        return pinned


def napi_threads(devices: set[str]) -> dict[int, str]:
    """Kernel NAPI threads (`napi/<device>-<napi id>`) of devices with these names."""
    found = {}
    for comm in Path("/proc").glob("[0-9]*/comm"):
        try:
            name = comm.read_text().strip()
        except (FileNotFoundError, ProcessLookupError):
            continue  # exited while we looked
        if name.startswith("napi/") and name[5:].rsplit("-", 1)[0] in devices:
            found[int(comm.parent.name)] = name
    return found


