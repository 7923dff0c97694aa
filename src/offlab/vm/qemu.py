"""QEMU's command line, and `InNamespace`: the launcher (guest.py) of a guest in one of
the lab's network namespaces, started with its NIC profile. Its files (agent socket,
console log, QEMU's stderr) live in a runtime directory that runscope.reclaim_stale
removes after a killed run; the QEMU process itself dies with the process that started
it (PR_SET_PDEATHSIG) and with its namespace (naming.sweep_leftovers kills what runs in
a stale one)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Callable

from ..hosts.local import LocalNamespace, in_netns
from ..runscope import RUNTIME_ROOT
from .accel import accel_args, choose_accelerator
from .agent import AgentChannel
from .guest import BOOT_TIMEOUT_S, STOP_GRACE_S, Guest, Launcher, Started
from .image import GuestImage, find_image
from .lifetime import die_with_parent
from .profile import MEMORY_ID, NicProfile, check_backend
from .spec import GuestError, GuestSpec

__all__ = ["BOOT_TIMEOUT_S", "Guest", "GuestError", "GuestSpec", "InNamespace", "qemu_argv", "runtime_dir"]


def kernel_cmdline(spec: GuestSpec) -> str:
    # panic=-1 with -no-reboot: a guest whose init dies makes QEMU exit, not hang.
    return f"console=ttyS0 panic=-1 ofl.ip={spec.address} ofl.mtu={spec.mtu}"


def qemu_argv(spec: GuestSpec, image: GuestImage, accel: str, runtime: Path, *,
              agent: str | None = None) -> list[str]:
    """The whole QEMU command line: first serial port the console (to a file), second
    the agent (a unix socket QEMU listens on, or the chardev backend `agent` names:
    "stdio" on a server reached over SSH), the NIC from its profile."""
    agent = agent or f"socket,id=agent,path={runtime / 'agent.sock'},server=on,wait=off"
    machine, memory = "pc", ["-m", str(spec.memory_mb)]
    if spec.nic.shared_memory:
        machine += f",memory-backend={MEMORY_ID}"
        memory += ["-object", f"memory-backend-memfd,id={MEMORY_ID},size={spec.memory_mb}M,share=on"]
    return ["qemu-system-x86_64", "-nodefaults", "-no-user-config", "-display", "none", "-no-reboot",
            "-name", f"ofl-{spec.name},debug-threads=on", "-machine", machine, *accel_args(accel),
            "-smp", str(spec.cpus), *memory,
            "-kernel", str(image.kernel), "-initrd", str(image.initramfs), "-append", kernel_cmdline(spec),
            "-chardev", f"file,id=console,path={runtime / 'console.log'}", "-serial", "chardev:console",
            "-chardev", agent,
            "-serial", "chardev:agent",
            *spec.nic.netdev_args(), *_device_args(spec.nic, accel)]


def _device_args(nic: NicProfile, accel: str) -> list[str]:
    """QEMU 7.2 under TCG crashes (SIGSEGV in msix_set_vector_notifiers, from
    vhost_net_start) when a vhost-user NIC uses MSI-X: without KVM's irqfds it emulates
    the guest notifiers and trips there. The NIC then uses a legacy interrupt
    (`vectors=0`); under KVM it keeps MSI-X."""
    args = nic.device_args()
    if nic.backend == "vhost-user" and accel == "tcg":
        args[-1] += ",vectors=0"
    return args


def runtime_dir(name: str) -> Path:
    """Under the run's runtime directory when there is one, else /run/offlab/vm-<pid>-…;
    both carry this process's pid, which is how a later run knows they are stale."""
    run_dir = RUNTIME_ROOT / f"run-{os.getpid()}"
    if run_dir.is_dir():
        return Path(tempfile.mkdtemp(prefix=f"vm-{name}-", dir=run_dir))
    RUNTIME_ROOT.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f"vm-{os.getpid()}-{name}-", dir=RUNTIME_ROOT))


class InNamespace(Launcher):
    """QEMU in one of the lab's namespaces on this machine: its agent on a unix socket in
    the runtime directory, its accelerator probed here once per process (accel.py)."""

    def __init__(self, host: LocalNamespace, image: GuestImage | None = None):
        self.host = host
        self.image = image
        self.accel: str | None = None
        self.accel_reason = ""
        self.runtime: Path | None = None

    def start(self, spec: GuestSpec) -> Started:
        check_backend(spec.nic)
        self.image = self.image or find_image()
        self.accel, self.accel_reason = choose_accelerator(self.image)
        self.runtime = runtime_dir(spec.name)
        argv = in_netns(self.host.namespace, qemu_argv(spec, self.image, self.accel, self.runtime))
        (self.runtime / "argv").write_text("\n".join(argv) + "\n")
        with open(self.runtime / "qemu.stderr", "wb") as stderr:
            launched_at = time.monotonic()
            process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                       stderr=stderr, start_new_session=True, preexec_fn=die_with_parent)
        return Started(process, launched_at)

    def open_agent(self, deadline: float, check_alive: Callable[[], None],
                   failure: Callable[[str], str]) -> AgentChannel:
        assert self.runtime is not None
        while True:
            # The socket file appears at bind(), a moment before QEMU listens on it.
            try:
                return AgentChannel(str(self.runtime / "agent.sock"))
            except (FileNotFoundError, ConnectionRefusedError):
                check_alive()
                if time.monotonic() > deadline:
                    raise GuestError(failure("QEMU did not open the agent's socket")) from None
                time.sleep(0.05)

    def log_tail(self, name: str) -> list[str]:
        path = self.runtime / name if self.runtime else None
        if path is None or not path.exists():
            return []
        return path.read_text(errors="replace").strip().splitlines()[-5:]

    def end(self, process: subprocess.Popen[bytes]) -> None:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def clean(self) -> None:
        if self.runtime is not None:
            shutil.rmtree(self.runtime, ignore_errors=True)
            self.runtime = None

    def __repr__(self) -> str:
        return repr(self.host.namespace)
