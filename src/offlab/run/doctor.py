"""`offlab doctor`: everything the lab needs from the machine, each with its fix."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass

from ..proc import ProcessError, run

TOOLS = {"iperf3": "iperf3", "ethtool": "ethtool", "ip": "iproute2"}
DEVICE_KINDS = ("veth", "vxlan")


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""


def check_root() -> Check:
    root = os.geteuid() == 0
    return Check("root", root, "running as root" if root else f"uid {os.geteuid()}",
                 "" if root else "run offlab as root (sudo .venv/bin/offlab …): namespaces need CAP_NET_ADMIN")


def check_tool(name: str, package: str) -> Check:
    path = shutil.which(name)
    return Check(name, path is not None, path or "not found",
                 "" if path else f"apt-get install {package}  (or: make setup)")


def check_tun() -> Check:
    """Opening the clone device proves the tun driver is there (built in or loaded)."""
    fix = "modprobe tun (CONFIG_TUN), and mknod /dev/net/tun c 10 200 if the node is missing"
    try:
        os.close(os.open("/dev/net/tun", os.O_RDWR))
    except OSError as err:
        return Check("kernel: tun", False, f"/dev/net/tun: {err.strerror}", fix)
    return Check("kernel: tun", True, "/dev/net/tun opens")


def check_device_kinds() -> list[Check]:
    """Create a veth pair and a VXLAN device in a throw-away namespace: proof that the
    kernel (modules loaded, built in or auto-loaded) supports what the scenarios build."""
    from ..hosts import LocalNamespace  # pyroute2: not for `doctor --store`, which imports Check
    from ..hosts.naming import device_name
    probe = LocalNamespace("doctor")
    try:
        probe.create()
    except OSError as err:
        return [Check("network namespaces", False, str(err), "needs root and CONFIG_NET_NS")]
    checks = [Check("network namespaces", True, "created and removed one")]
    try:
        for kind, args in (("veth", ["link", "add", device_name("d0"), "type", "veth", "peer", "name",
                                     device_name("d1")]),
                           ("vxlan", ["link", "add", device_name("dvx"), "type", "vxlan", "id", "42",
                                      "dstport", "4789", "local", "10.201.0.1"])):
            done = probe.ip(*args, check=False)
            failure = done.stderr.strip() if done.returncode else None
            checks.append(Check(f"kernel: {kind}", failure is None, failure or "device created",
                                "" if failure is None else f"modprobe {kind} (CONFIG_{kind.upper()})"))
    finally:
        probe.remove()
    return checks


def check_cores() -> Check:
    n = os.cpu_count() or 1
    return Check("cores", n >= 2, f"{n} online",
                 "" if n >= 2 else "sender and receiver need a core each; use a machine with 2+ cores")


def check_iperf_affinity() -> Check:
    try:
        out = run(["iperf3", "--version"], timeout=5, check=False).stdout
    except ProcessError as err:
        return Check("iperf3 -A", False, str(err), "apt-get install iperf3")
    ok = "CPU affinity" in out
    return Check("iperf3 -A", ok, "CPU affinity supported" if ok else "this iperf3 cannot pin (-A)",
                 "" if ok else "install an iperf3 built with CPU affinity support")


def run_checks() -> list[Check]:
    checks = [check_root()]
    checks += [check_tool(name, package) for name, package in TOOLS.items()]
    checks.append(check_iperf_affinity())
    checks.append(check_tun())
    checks.append(check_cores())
    if checks[0].ok:
        checks += check_device_kinds()
    return checks
