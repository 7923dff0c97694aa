"""What every scenario shares: namespaces it owns, guaranteed teardown as a context
manager, the hosts and their pinned cores, and the interfaces whose offloads a profile
controls. Scenario builders subclass `Topology` and implement `_build`."""

from __future__ import annotations

import os
import signal
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Callable, ClassVar, Iterator

from pyroute2 import NetNS, netns

from ..offloads import Interface
from ..proc import in_netns, run
from .naming import namespace_name


class TopologyError(Exception):
    """A topology that could not be built or torn down."""


class Interrupted(BaseException):
    """SIGINT or SIGTERM arrived; unwinds through every `finally` and `__exit__`.
    A BaseException so that no `except Exception` on the way swallows it."""

    def __init__(self, signum: int):
        self.signum = signum
        super().__init__(signal.Signals(signum).name)


class TerminationSignals:
    """Within this block SIGINT and SIGTERM raise `Interrupted` once; later signals are
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
        for sig in (signal.SIGINT, signal.SIGTERM):
            self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)  # type: ignore[arg-type]


@contextmanager
def deferred_signals() -> Iterator[None]:
    """SIGINT/SIGTERM are held (not lost) inside this block and delivered after it, so
    a teardown is never cut in half by the signal that asked for it."""
    held = {signal.SIGINT, signal.SIGTERM}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


@dataclass(frozen=True)
class Host:
    """One end of the traffic: where iperf3 runs, the address it uses, its core."""

    role: str
    """"sender" or "receiver" (later scenarios add "forwarder")."""
    namespace: str
    address: str
    core: int


class Topology:
    """Base of every scenario. Use as `with builder(mtu=…) as topo:`; the namespaces
    it created are deleted on exit, whatever happened inside."""

    scenario: ClassVar[str]
    tunnel: ClassVar[bool] = False

    def __init__(self, mtu: int, *, sender_core: int = 0, receiver_core: int = 1,
                 steer_rx_softirq: bool = True, pid: int | None = None):
        self.mtu = mtu
        self.sender_core = sender_core
        self.receiver_core = receiver_core
        self.steer_rx_softirq = steer_rx_softirq
        self._pid = pid
        self._owner = os.getpid()
        self.namespaces: list[str] = []
        self._napi_homes: list[tuple[str, str, int]] = []
        """(namespace, device, core) whose NAPI thread must run on `core`."""
        self._napi_pids: dict[int, int] = {}
        """pid of a NAPI thread we pinned → its core."""

    # --- what scenarios provide -------------------------------------------------------

    def _build(self) -> None:
        raise NotImplementedError

    @property
    def sender(self) -> Host:
        raise NotImplementedError

    @property
    def receiver(self) -> Host:
        raise NotImplementedError

    def offload_interfaces(self) -> list[Interface]:
        raise NotImplementedError

    @property
    def roles(self) -> dict[str, int]:
        return {self.sender.role: self.sender.core, self.receiver.role: self.receiver.core}

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
        """Delete every namespace this topology created (their devices go with them).
        Tries all of them and reports the ones that failed."""
        if os.getpid() != self._owner:
            return  # a forked child unwinding: the namespaces belong to the parent
        failed = []
        with deferred_signals():
            for name in reversed(self.namespaces):
                try:
                    if name in netns.listnetns():
                        netns.remove(name)
                except OSError as err:
                    failed.append(f"{name}: {err}")
            self.namespaces.clear()
        if failed:
            raise TopologyError("teardown failed: " + "; ".join(failed))

    # --- helpers for builders ---------------------------------------------------------

    def add_namespace(self, role: str) -> str:
        name = namespace_name(role, self._pid)
        self.namespaces.append(name)  # first: a signal right after create still tears it down
        netns.create(name)
        with NetNS(name) as ns:
            ns.link("set", index=ns.link_lookup(ifname="lo")[0], state="up")
        return name

    def steer_receive(self, namespace: str, device: str, core: int) -> None:
        """Receive processing of `device` on `core`, as on a separate host.

        A veth delivers on the *transmitting* CPU (its xmit runs the peer's receive
        softirq). RPS moves the protocol stack to `core`; the NAPI poll (where GRO runs,
        present only while GRO is on) is made a kernel thread and pinned there by
        `pin_napi_threads` after every offload change."""
        self._napi_homes.append((namespace, device, core))
        # `ip netns exec` mounts the namespace's own /sys for the command; only the
        # queues in use (real_num_rx_queues) appear there.
        queues_dir = f"/sys/class/net/{device}/queues"
        listing = run(in_netns(namespace, ["ls", queues_dir])).stdout.split()
        mask = f"{1 << core:x}\n"
        for queue in (q for q in listing if q.startswith("rx-")):
            path = f"{queues_dir}/{queue}/rps_cpus"
            run(in_netns(namespace, ["tee", path]), input_text=mask)

    def napi_snapshot(self) -> set[int]:
        """Pids of the NAPI threads of our steered devices' names before an offload
        change; threads that appear after it are ours."""
        return set(napi_threads({device for _, device, _ in self._napi_homes}))

    def pin_napi_threads(self, before: set[int]) -> dict[int, int]:
        """Make each steered device's NAPI threaded and pin its thread; return pid → core.

        veth has a NAPI instance only while GRO is on, and recreates its thread when GRO
        is toggled; writing `threaded` fails (EIO) while there is none, which is fine."""
        for namespace, device, core in self._napi_homes:
            threaded = f"/sys/class/net/{device}/threaded"
            run(in_netns(namespace, ["tee", threaded]), input_text="1\n", check=False)
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


Builder = Callable[..., Topology]
