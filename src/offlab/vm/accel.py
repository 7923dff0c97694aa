"""KVM when it works, TCG otherwise. /dev/kvm existing is not enough: nested guests
may hang at boot or QEMU may abort setting an MSR. So the probe boots the real guest
with `ofl.probe` (its init powers off at once) under KVM, bounded in time; the answer
is kept for the rest of the process. OFFLAB_VM_ACCEL=kvm|tcg skips the probe."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

from .image import GuestImage
from .lifetime import die_with_parent

PROBE_TIMEOUT_S = 15.0
PROBE_MARK = "ofl-init: probe: reached init"
ENV_ACCEL = "OFFLAB_VM_ACCEL"
ACCELERATORS = ("kvm", "tcg")

_chosen: dict[str, str] = {}


def accel_args(accel: str) -> list[str]:
    # TCG: "max" offers every CPU feature TCG emulates; KVM: the host's own CPU.
    if accel == "kvm":
        return ["-accel", "kvm", "-cpu", "host"]
    return ["-accel", "tcg", "-cpu", "max"]


def forced_accelerator() -> tuple[str, str] | None:
    """(accelerator, why) when OFFLAB_VM_ACCEL forces one, here or on a server."""
    forced = os.environ.get(ENV_ACCEL)
    if not forced:
        return None
    if forced not in ACCELERATORS:
        raise ValueError(f"{ENV_ACCEL}={forced!r}: use kvm or tcg")
    return forced, f"{ENV_ACCEL}={forced}"


def probe_argv(image: GuestImage, console: str) -> list[str]:
    """The probe guest under KVM, its console to the file `console`: the same command
    here and on a server (vm/remote.py), which reads the file for PROBE_MARK."""
    return ["qemu-system-x86_64", "-nodefaults", "-no-user-config", "-display", "none",
            "-no-reboot", "-machine", "pc", *accel_args("kvm"), "-m", "128",
            "-kernel", str(image.kernel), "-initrd", str(image.initramfs),
            "-append", "console=ttyS0 panic=-1 ofl.probe",
            "-chardev", f"file,id=con,path={console}", "-serial", "chardev:con"]


def choose_accelerator(image: GuestImage) -> tuple[str, str]:
    """(accelerator, why), probed once per process."""
    forced = forced_accelerator()
    if forced:
        return forced
    if "answer" not in _chosen:
        _chosen["answer"], _chosen["why"] = _probe(image)
    return _chosen["answer"], _chosen["why"]


def _probe(image: GuestImage) -> tuple[str, str]:
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return "tcg", "no usable /dev/kvm"
    with tempfile.TemporaryDirectory(prefix="ofl-kvm-probe-") as scratch:
        console = Path(scratch) / "console.log"
        try:
            done = subprocess.run(probe_argv(image, str(console)), capture_output=True, text=True, timeout=PROBE_TIMEOUT_S,
                                  preexec_fn=die_with_parent)
        except subprocess.TimeoutExpired:  # run() kills QEMU before raising
            return "tcg", f"a KVM guest did not reach init within {PROBE_TIMEOUT_S:g} s"
        except FileNotFoundError:
            return "tcg", "qemu-system-x86_64 not found"
        reached = console.exists() and PROBE_MARK in console.read_text(errors="replace")
        if done.returncode == 0 and reached:
            return "kvm", "KVM guest booted in the probe"
        reason = done.stderr.strip().splitlines()[0] if done.stderr.strip() else f"exit {done.returncode}"
        return "tcg", f"KVM probe failed: {reason}"
