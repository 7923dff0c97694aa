"""`offlab doctor --hosts FILE`: what each real host needs, each with its fix — reachable
over ssh without a password, root or passwordless sudo, iperf3 / ethtool / ip present,
the test interface present and up, the peer reached over it, which offloads can change,
irqbalance (which would undo IRQ pinning), the CPU frequency governor."""

from __future__ import annotations

import json
from dataclasses import dataclass

from .offloads import parse_features
from . import guard
from .base import HostError
from .facts import read_facts, steering_text
from .hostsfile import HostsFile, HostSpec
from .ssh import AuditLog, SshHost

OLD_BIN_DIR = "/var/lib/offlab/bin"
"""Where offlab before the one files cache (hosts/files.py) copied offlab-fwd: still
purged, so a server those versions used is left clean too."""
TOOLS = {"iperf3": "iperf3", "ethtool": "ethtool", "ip": "iproute2", "irtt": "irtt", "sockperf": "sockperf"}


@dataclass(frozen=True)
class RemoteCheck:
    host: str
    name: str
    ok: bool
    detail: str
    fix: str = ""


def remote_facts(hosts: HostsFile, steer_rx_softirq: bool = True, guests: bool = False) -> dict[str, dict[str, str]]:
    """Each host's facts (hosts/facts.py), by role, with its core layout and the receive
    steering the run applies there (only what is applied); with `guests` (a plan with
    the qemu scenario) also what each server runs them with (`hypervisor_facts`)."""
    found = {}
    for role, spec in hosts.hosts.items():
        host = SshHost(role, spec, hosts.ssh_config)
        try:
            facts = read_facts(host, spec.interface)
            if guests:
                facts.update(hypervisor_facts(host, spec))
        finally:
            host.close()
        facts["ssh"] = spec.ssh
        facts["interface"] = f"{spec.interface} ({spec.address})"
        facts["cores used"] = f"app {spec.app_core}" + (f", IRQs {spec.irq_core}" if spec.irq_core is not None else "")
        facts["receive steering"] = steering_text(spec, steer_rx_softirq)
        found[role] = facts
    return found


def missing_tools(hosts: HostsFile, role: str, tools: set[str]) -> list[str]:
    """The tools a host lacks (sudo too, when the host file asks for it); reaching the
    host at all is the first thing this finds out."""
    spec = hosts.hosts[role]
    host = SshHost(role, spec, hosts.ssh_config)
    wanted = sorted(tools | ({"sudo"} if spec.sudo else set()))
    try:
        script = "; ".join(f"command -v {tool} >/dev/null || echo {tool}" for tool in wanted)
        # `sh -c` directly, without the sudo prefix: this asks what is installed.
        done = host.run_plain(["sh", "-c", script])
    finally:
        host.close()
    return done.stdout.split()


def remote_checks(hosts: HostsFile, allow_shared: bool = False) -> list[RemoteCheck]:
    checks = []
    uses = {}
    for role, spec in hosts.hosts.items():
        host = SshHost(role, spec, hosts.ssh_config)
        try:
            found = _checks(host, spec)
            if found[0].ok:  # reachable
                uses[role] = guard.inspect(host, spec)
                found += _guard_checks(hosts, spec, uses[role], allow_shared)
            checks += found
        finally:
            host.close()
    if len(uses) == len(hosts.hosts):
        try:
            guard.check(hosts, uses, allow_shared=True)
        except HostError as err:  # the one-kernel refusal: the only one left with allow_shared
            checks.append(RemoteCheck("all hosts", "one kernel per role", False, str(err).split(": ", 1)[0],
                                      f"set same_kernel = true in {hosts.source} if meant"))
    return checks


def _guard_checks(hosts: HostsFile, spec: HostSpec, use: guard.InterfaceUse, allow_shared: bool) -> list[RemoteCheck]:
    """The lockout guard and the leftovers of another offlab, as doctor rows."""
    name = f"{spec.role} ({spec.ssh})"
    shared = guard.findings(spec, use)
    ok = not shared or (allow_shared and not spec.pin_irqs)
    fix = "" if ok else ("set pin_irqs = false" if allow_shared else
                         f"use a dedicated test interface, or pass {guard.OVERRIDE_FLAG} to take the risk")
    leftovers = guard.foreign_devices(hosts, use)
    return [RemoteCheck(name, "test interface carries only the test", ok,
                        "; ".join(shared) or f"{spec.interface}: no SSH session, default route, upper "
                        "device or other address", fix),
            RemoteCheck(name, "no offlab devices left there", not leftovers, ", ".join(leftovers) or "none",
                        "offlab restore, or ip link del them" if leftovers else "")]


_HOLD = r"""
d=$1
[ -d "$d" ] || { echo free; exit 0; }
echo "held by $(head -n 1 "$d/owner" 2>/dev/null)"
echo "heartbeat $(( $(date +%s) - $(stat -c %Y "$d/heartbeat" 2>/dev/null || echo 0) )) s ago"
pgrep -af "offlab-watchdog $d " | sed 's/.*offlab-watchdog [^ ]* [^ ]* \([^ ]*\) .*/watchdog of \1/'
command -v systemctl >/dev/null 2>&1 && systemctl list-units --plain --no-legend 'offlab-watchdog-*' 2>/dev/null
"""


def _hold_check(host: SshHost, name: str) -> RemoteCheck:
    """An offlab run's hold on the server and the watchdogs that would restore it: a
    hold without a watchdog is stale (docs/real-hosts.md, "A stale hold")."""
    from .server import SERVER_DIR
    lines = host.run(["sh", "-c", _HOLD, "offlab-hold", SERVER_DIR], check=False, timeout=15).stdout.splitlines()
    if lines[:1] == ["free"] or not lines:
        return RemoteCheck(name, "offlab hold", True, "free (no run holds it)")
    watchdogs = [line for line in lines[2:] if line.strip()]
    detail = f"{lines[0]}; {lines[1] if len(lines) > 1 else ''}; " + (
        ", ".join(watchdogs) if watchdogs else "no watchdog running")
    return RemoteCheck(name, "offlab hold", bool(watchdogs), detail,
                       "" if watchdogs else "a stale hold: check the server, then clear it as docs/real-hosts.md "
                       "says (\"A stale hold\")")


def _checks(host: SshHost, spec: HostSpec) -> list[RemoteCheck]:
    name = f"{spec.role} ({spec.ssh})"
    try:
        uid = host.run(["id", "-u"], timeout=15).stdout.strip()
    except HostError as err:
        return [RemoteCheck(name, "reachable", False, str(err).split(": ", 1)[-1],
                            f"make `ssh {spec.ssh} true` work without a password (key, agent, ~/.ssh/config)")]
    found = [RemoteCheck(name, "reachable", True, "ssh works (BatchMode, multiplexed)")]
    root = uid == "0" or spec.sudo
    found.append(RemoteCheck(name, "root or sudo", root, f"uid {uid}" + (", sudo -n" if spec.sudo else ""),
                             "" if root else "log in as root, or set sudo = true with passwordless sudo"))
    found.append(_hold_check(host, name))
    for tool, package in TOOLS.items():
        where = host.run(["sh", "-c", f"command -v {tool}"], check=False, root=False).stdout.strip()
        found.append(RemoteCheck(name, tool, bool(where), where or "not found",
                                 "" if where else f"apt-get install {package} (dnf install {package})"))
    link = host.ip("-j", "link", "show", "dev", spec.interface, check=False)
    state = json.loads(link.stdout or "[{}]")[0] if link.returncode == 0 else {}
    up = "UP" in state.get("flags", [])
    found.append(RemoteCheck(name, "interface", up, f"{spec.interface}: " + (
        f"up, MTU {state.get('mtu')}" if up else (link.stderr.strip() or "down")),
        "" if up else f"ip link set {spec.interface} up (and address it {spec.address})"))
    route = host.ip("route", "get", spec.peer, check=False).stdout
    via = f"dev {spec.interface}" in route
    found.append(RemoteCheck(name, "peer over the test interface", via, " ".join(route.split()) or "no route",
                             "" if via else f"route {spec.peer} over {spec.interface}"))
    features = parse_features(host.run(["ethtool", "-k", spec.interface], check=False).stdout).features
    changeable = sorted(f for f, state in features.items() if not state.fixed)
    found.append(RemoteCheck(name, "changeable offloads", bool(changeable),
                             f"{len(changeable)} of {len(features)}: " + ", ".join(changeable[:8]) +
                             ("…" if len(changeable) > 8 else "")))
    balancing = host.run(["pgrep", "-x", "irqbalance"], check=False).stdout.strip()
    found.append(RemoteCheck(name, "irqbalance", not balancing or not spec.pin_irqs,
                             "running" if balancing else "not running",
                             "systemctl stop irqbalance while pinning IRQs" if balancing and spec.pin_irqs else ""))
    governor = host.run(["cat", "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"], check=False).stdout.strip()
    found.append(RemoteCheck(name, "CPU frequency governor", governor in ("", "performance"),
                             governor or "no cpufreq (a VM, or fixed)",
                             "" if governor in ("", "performance") else "cpupower frequency-set -g performance"))
    return found


def purge_files(hosts: HostsFile) -> list[str]:
    """`offlab restore --purge`: offlab's copied files off every server of the hosts
    file (the files cache: guest kernel and initramfs, offlab-fwd); each server tried."""
    from . import files
    lines = []
    for role, spec in hosts.hosts.items():
        host = SshHost(role, spec, hosts.ssh_config, audit=AuditLog())
        try:
            for said in (files.purge(host), files.purge(host, OLD_BIN_DIR)):
                lines.append(said)
                host.log(f"offlab restore --purge: {said}")
        except HostError as err:
            lines.append(f"{role}: not purged: {err}")
        finally:
            host.close()
    return lines


def hypervisor_facts(host: SshHost, spec: HostSpec) -> dict[str, str]:
    """QEMU's version, KVM and vhost-net as the server offers them, and where its guest
    runs; the accelerator each topology used is probed when it boots (in the samples'
    `hypervisor@tx`/`@rx` state)."""
    version = host.run(["qemu-system-x86_64", "--version"], check=False, timeout=15).stdout.splitlines()
    devices = host.run(["sh", "-c", "for d in /dev/kvm /dev/vhost-net; do [ -c $d ] && echo $d; done"], root=False,
                       check=False, timeout=15).stdout.split()
    guest = "guest A (1 vCPU, 256 MiB)" if spec.role == "sender" else "guest B on vm2vm (1 vCPU, 256 MiB)"
    return {"hypervisor": (version[0].replace("QEMU emulator version ", "QEMU ") if version else "no QEMU found"),
            "hypervisor devices": ", ".join(devices) or "neither /dev/kvm nor /dev/vhost-net",
            "guest cores": f"{guest}: QEMU pinned to core {spec.app_core}; offlab-fwd (vhost-user) there too"}
