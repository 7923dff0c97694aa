"""`offlab doctor --hosts`: what a server needs to run the `qemu` scenario, each row
with its fix — QEMU itself, KVM that actually boots a guest (the same probe a run uses,
vm/remote.py, with the guest's files copied by hash first), the kernel's vhost-net for
`tap-vhost`, memfd (or hugepages) for a vhost-user backend's shared guest memory, bridge
support, and free cores for the guest beside the test's own."""

from __future__ import annotations

from typing import Callable

from ..hosts import files
from ..hosts.base import HostError
from ..hosts.hostsfile import HostsFile
from ..hosts.remote_doctor import RemoteCheck
from ..hosts.ssh import SshHost
from .image import GuestImage, GuestImageMissing, find_image
from .remote import probe_accelerator

QEMU = "qemu-system-x86_64"


def guest_checks(host: SshHost, name: str, row: Callable[..., object]) -> list[object]:
    """Doctor rows (made by `row(host, check, ok, detail, fix)`) for one server. Its shell
    scripts only read, so they run as the SSH user (`root=False`) even with sudo = true."""
    found = []
    where = host.run(["sh", "-c", f"command -v {QEMU}"], check=False, root=False).stdout.strip()
    found.append(row(name, QEMU, bool(where), where or "not found",
                     "" if where else "apt-get install qemu-system-x86 (dnf install qemu-kvm)"))
    if where:
        found.append(_kvm(host, name, row))
        memfd = host.run(["sh", "-c", f"{QEMU} -object help | grep -c memory-backend-memfd"], check=False, root=False)
        huge = host.run(["sh", "-c", "grep -E '^HugePages_Total' /proc/meminfo | tr -s ' ' | cut -d' ' -f2"],
                        check=False, root=False).stdout.strip() or "0"
        has_memfd = memfd.stdout.strip() not in ("", "0")
        found.append(row(name, "memfd or hugepages (vhost-user)", has_memfd or huge != "0",
                         f"memory-backend-memfd {'yes' if has_memfd else 'no'}, {huge} hugepages",
                         "" if has_memfd or huge != "0" else "a QEMU with memfd, or reserve hugepages "
                         "(vm.nr_hugepages)"))
    vhost = host.run(["test", "-c", "/dev/vhost-net"], check=False).returncode == 0
    found.append(row(name, "/dev/vhost-net (tap-vhost)", vhost, "present" if vhost else "missing",
                     "" if vhost else "modprobe vhost_net (else use backend tap)"))
    bridge = host.run(["sh", "-c", "[ -d /sys/module/bridge ] || modinfo bridge >/dev/null 2>&1"],
                      check=False, root=False).returncode == 0
    found.append(row(name, "bridge support", bridge, "bridge module there" if bridge else "no bridge module",
                     "" if bridge else "a kernel with CONFIG_BRIDGE (modprobe bridge)"))
    found.append(_cores(host, name, row))
    return found


def _kvm(host: SshHost, name: str, row: Callable[..., object]) -> object:
    """KVM usable = a KVM guest reaches init there within the probe's bound."""
    try:
        image = find_image()
    except GuestImageMissing as missing:
        return row(name, "KVM (a guest boots under it)", False, str(missing), "make guest, then doctor again")
    kernel, _ = files.ensure(host, image.kernel)
    initramfs, _ = files.ensure(host, image.initramfs)
    remote = GuestImage(image.directory, kernel, initramfs, image.manifest)  # type: ignore[arg-type]
    accel, why = probe_accelerator(host, remote, f"{files.CACHE_DIR}/probe-{host.name}")
    return row(name, "KVM (a guest boots under it)", accel == "kvm", f"{accel}: {why}",
               "" if accel == "kvm" else "guests run under TCG there (no performance figures, nothing "
               "advised): load kvm_intel/kvm_amd, enable virtualization in the firmware, or add the user "
               "to group kvm")


def _cores(host: SshHost, name: str, row: Callable[..., object]) -> object:
    """The guest's vCPU runs on the role's app_core: a server busy on every core would
    make the guest's rates the load's."""
    said = host.run(["sh", "-c", "nproc; cut -d' ' -f1 /proc/loadavg"], check=False, root=False).stdout.split()
    if len(said) != 2:
        return row(name, "free cores", False, "could not read nproc and the load", "")
    cores, load = int(said[0]), float(said[1])
    free = cores - load
    return row(name, "free cores", free >= 1, f"{cores} cores, load {load:.1f} (about {max(free, 0):.1f} free)",
               "" if free >= 1 else "stop what keeps the server busy before measuring guests there")


def remote_guest_checks(hosts: HostsFile) -> list[RemoteCheck]:
    """`doctor --hosts --guests`: what the qemu scenario needs on each server."""
    checks: list[RemoteCheck] = []
    for role, spec in hosts.hosts.items():
        host = SshHost(role, spec, hosts.ssh_config)
        try:
            checks += guest_checks(host, f"{spec.role} ({spec.ssh})", RemoteCheck)  # type: ignore[arg-type]
        except HostError as err:
            checks.append(RemoteCheck(f"{spec.role} ({spec.ssh})", "guests", False, str(err), ""))
        finally:
            host.close()
    return checks
