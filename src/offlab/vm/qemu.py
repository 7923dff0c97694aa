"""A QEMU guest in one of the lab's network namespaces: started with its NIC profile,
ready once its agent answers, driven through the agent, always stopped (and killed if
it will not stop). Its files (agent socket, console log, QEMU's stderr) live in a
runtime directory that runscope.reclaim_stale removes after a killed run; the QEMU
process itself dies with the process that started it (PR_SET_PDEATHSIG) and with its
namespace (naming.sweep_leftovers kills what runs in a stale one)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from ..hosts.local import LocalNamespace, in_netns
from ..runscope import RUNTIME_ROOT
from .accel import accel_args, choose_accelerator
from .agent import AgentChannel
from .agentguest import BOOT_TIMEOUT_S, STOP_GRACE_S, AgentGuest
from .image import GuestImage, find_image
from .lifetime import die_with_parent
from .profile import MEMORY_ID, NicProfile, check_backend
from .spec import GuestError, GuestSpec

__all__ = ["BOOT_TIMEOUT_S", "Guest", "GuestError", "GuestSpec", "qemu_argv", "runtime_dir"]


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


class Guest(AgentGuest):
    """`launch()` then `wait_ready()` (or `start()` for both); `run()` commands; `stop()`.
    Several guests boot faster launched together, then waited for one by one. Launch from
    a thread that outlives the guest: the kernel delivers PR_SET_PDEATHSIG when the
    launching *thread* ends. One command at a time per guest (`run` is not thread-safe)."""

    host: LocalNamespace

    def __init__(self, spec: GuestSpec, host: LocalNamespace, *, bridge: str | None = None,
                 image: GuestImage | None = None):
        self.spec = spec
        self.host = host
        self.bridge = bridge
        """A bridge in the namespace the TAP joins once QEMU created it."""
        self.image = image
        self.accel: str | None = None
        self.accel_reason = ""
        self.boot_s: float | None = None
        self.process: subprocess.Popen[bytes] | None = None
        self.runtime: Path | None = None
        self._agent: AgentChannel | None = None
        self._launched_at = 0.0
        self._tap_was_there = False

    # --- life cycle -----------------------------------------------------------------------

    def start(self, timeout: float = BOOT_TIMEOUT_S) -> "Guest":
        self.launch()
        self.wait_ready(timeout)
        return self

    def launch(self) -> None:
        try:
            self._launch()
        except BaseException:
            self.stop()
            raise

    def _launch(self) -> None:
        check_backend(self.spec.nic)
        self.image = self.image or find_image()
        self.accel, self.accel_reason = choose_accelerator(self.image)
        if self.tap:
            self._tap_was_there = self.host.has_link(self.tap)
        self.runtime = runtime_dir(self.spec.name)
        argv = in_netns(self.host.namespace, qemu_argv(self.spec, self.image, self.accel, self.runtime))
        (self.runtime / "argv").write_text("\n".join(argv) + "\n")
        with open(self.runtime / "qemu.stderr", "wb") as stderr:
            self._launched_at = time.monotonic()
            self.process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                            stderr=stderr, start_new_session=True,
                                            preexec_fn=die_with_parent)

    def _open_agent(self, deadline: float) -> AgentChannel:
        assert self.runtime is not None
        while True:
            # The socket file appears at bind(), a moment before QEMU listens on it.
            try:
                return AgentChannel(str(self.runtime / "agent.sock"))
            except (FileNotFoundError, ConnectionRefusedError):
                self._check_alive()
                if time.monotonic() > deadline:
                    raise GuestError(self._failure("QEMU did not open the agent's socket")) from None
                time.sleep(0.05)

    def _log_tail(self, name: str) -> list[str]:
        path = self.runtime / name if self.runtime else None
        if path is None or not path.exists():
            return []
        return path.read_text(errors="replace").strip().splitlines()[-5:]

    def stop(self) -> None:
        """TERM QEMU (it exits cleanly on it), KILL it after a grace period; then its
        TAP is gone (when QEMU made it) and its runtime files are removed."""
        if self._agent is not None:
            self._agent.close()
            self._agent = None
        if self.process is not None:
            if self.process.poll() is None:
                self.process.send_signal(signal.SIGTERM)
                try:
                    self.process.wait(timeout=STOP_GRACE_S)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait()
            if self.tap and not self._tap_was_there:
                self._wait_tap_gone()
            self.process = None
        if self.runtime is not None:
            shutil.rmtree(self.runtime, ignore_errors=True)
            self.runtime = None

    def __enter__(self) -> "Guest":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"Guest({self.spec.name!r}, {self.host.namespace!r}, {self.spec.nic.backend}, {self.accel})"
