"""The router of a hosts file (`[router]`, R of the middlebox plan) before a run: what
`offlab doctor --hosts` says about it, what a run refuses, and its facts for the report.

R is judged per test interface as the sender and receiver are — reachable, root or
sudo, the tools, the interface up, the sender (toward-sender interface) and the
receiver (toward-receiver interface) reached over it, the lockout guard — plus its IP
forwarding, which routing A <-> B through R's kernel needs: offlab turns it on only
with `--allow-forwarding`, journaled and put back at the end.
"""

from __future__ import annotations

import ipaddress
import json
from dataclasses import replace
from typing import Iterable

from ..records import CaseSpec
from . import guard
from .base import HostError
from .facts import read_facts
from .hostsfile import HostsFile, HostSpec
from .remote_doctor import RemoteCheck, _checks, _guard_checks
from .ssh import SshHost

ROUTER_TOOLS = {"iperf3", "ethtool", "ip", "sha256sum"}
"""iperf3 for the terminated paths; sha256sum to copy offlab-fwd by hash (hosts/files.py)."""
INTERFACE_ROWS = ("interface", "peer over the test interface", "changeable offloads")


def interface_specs(hosts: HostsFile, host: SshHost) -> list[HostSpec]:
    """R once per test interface, as a sender or receiver spec: its own address on that
    interface (read there) and, as peer, the host that interface faces."""
    router = hosts.router
    assert router is not None
    faces = (hosts.hosts["sender"], hosts.hosts["receiver"])
    return [replace(router, interface=name, address=own_address(host, name, faces[0].address), peer=face.address)
            for name, face in zip(router.interfaces, faces)]


def own_address(host: SshHost, interface: str, like: str) -> str:
    """The interface's first global address of the family of `like` ("" if none)."""
    found = json.loads(host.ip("-j", "addr", "show", "dev", interface, check=False).stdout or "[]")
    family = ipaddress.ip_address(like).version
    for entry in (a for link in found for a in link.get("addr_info", [])):
        address = ipaddress.ip_address(entry.get("local", "::"))
        if address.version == family and not address.is_link_local:
            return str(address)
    return ""


def forwarding_path(hosts: HostsFile) -> str:
    if ":" in hosts.hosts["sender"].address:
        return "/proc/sys/net/ipv6/conf/all/forwarding"
    return "/proc/sys/net/ipv4/ip_forward"


def forwarding_key(path: str) -> str:
    return path.removeprefix("/proc/sys/").replace("/", ".")


def forwarding_refusal(hosts: HostsFile) -> str:
    key = forwarding_key(forwarding_path(hosts))
    assert hosts.router is not None
    return (f"router ({hosts.router.ssh}): IP forwarding is off ({key} = 0), so R cannot route A <-> B; "
            f"turn it on yourself (sysctl -w {key}=1) or pass --allow-forwarding (offlab turns it on "
            "and puts it back)")


def forwarding_on(host: SshHost, hosts: HostsFile) -> bool:
    return host.read_file(forwarding_path(hosts)).strip() == "1"


def routed_by_kernel(cases: Iterable[CaseSpec]) -> bool:
    """Some middlebox case has R's kernel route A <-> B: IP forwarding must be on."""
    return any(c.scenario == "middlebox" and c.topology.get("router", "kernel") == "kernel" for c in cases)


def bridged_by_fwd(cases: Iterable[CaseSpec]) -> bool:
    """Some middlebox case has offlab-fwd bridge R's interfaces."""
    return any(c.scenario == "middlebox" and c.topology.get("router") == "offlab-fwd" for c in cases)


def router_checks(hosts: HostsFile, allow_shared: bool = False,
                  plan: tuple[str, list[CaseSpec]] | None = None) -> list[RemoteCheck]:
    """`offlab doctor --hosts` rows for R (none without a [router] table); `plan` (its
    name and cases, from `doctor --plan`) decides whether R's IP forwarding must be on."""
    if hosts.router is None:
        return []
    host = SshHost("r", hosts.router, hosts.ssh_config)
    try:
        found = _checks(host, replace(hosts.router, peer=hosts.hosts["sender"].address))
        if not found[0].ok:
            return found
        specs = interface_specs(hosts, host)
        found = [c for c in found if c.name not in INTERFACE_ROWS]
        for spec in specs:
            found += [c for c in _checks(host, spec) if c.name in INTERFACE_ROWS]
            found += _guard_checks(_with_router_interfaces(hosts), spec, guard.inspect(host, spec), allow_shared)
        found.append(_forwarding_check(host, hosts, plan))
        return found
    finally:
        host.close()


def _forwarding_check(host: SshHost, hosts: HostsFile, plan: tuple[str, list[CaseSpec]] | None) -> RemoteCheck:
    """A failure only for a plan whose R routes through its kernel; without a plan the
    row says what it found and which plans need it, and fails nothing."""
    assert hosts.router is not None
    key = forwarding_key(forwarding_path(hosts))
    on = forwarding_on(host, hosts)
    name, state = f"router ({hosts.router.ssh})", f"{key} = {1 if on else 0}"
    fix = f"sysctl -w {key}=1, or run with --allow-forwarding (offlab sets it and puts it back)"
    if plan is None:
        return RemoteCheck(name, "IP forwarding", True, state + ("" if on else
                           ": needed only when R's kernel routes (middlebox, router = \"kernel\"); "
                           "add --plan NAME to check it for your plan"), "" if on else "for such a plan: " + fix)
    plan_name, cases = plan
    if not routed_by_kernel(cases):
        return RemoteCheck(name, "IP forwarding", True, f"{state}: not needed by plan {plan_name} "
                           "(no middlebox case with router = \"kernel\")")
    return RemoteCheck(name, "IP forwarding", on, f"{state}: plan {plan_name} routes through R's kernel",
                       "" if on else fix)


def check_router(hosts: HostsFile, cases: Iterable[CaseSpec], allow_forwarding: bool,
                 allow_shared: bool) -> list[str]:
    """Before a run changes anything: refuse (HostError, one line) a router the plan
    cannot use; the warnings of an allowed shared interface."""
    cases = [c for c in cases if c.scenario == "middlebox"]
    if not cases:
        return []
    if hosts.router is None:
        raise HostError(f"the middlebox plan on real hosts needs a [router] table in {hosts.source} "
                        "(ssh, interfaces = [toward the sender, toward the receiver], app_core); "
                        "see docs/real-hosts.md")
    router = hosts.router
    host = SshHost("r", router, hosts.ssh_config)
    try:
        wanted = sorted(ROUTER_TOOLS | ({"sudo"} if router.sudo else set()))
        script = "; ".join(f"command -v {tool} >/dev/null || echo {tool}" for tool in wanted)
        missing = host.run_plain(["sh", "-c", script]).stdout.split()
        if missing:
            raise HostError(f"router ({router.ssh}): {', '.join(missing)} not found there; install it on "
                            f"{router.ssh}, or check with offlab doctor --hosts {hosts.source}")
        warnings = []
        for spec in interface_specs(hosts, host):
            shared = guard.findings(spec, guard.inspect(host, spec))
            if shared and not allow_shared:
                raise HostError(f"router ({router.ssh}): {'; '.join(shared)}: changing {spec.interface} (MTU, "
                                f"offloads) could cut the server off; use a dedicated test interface, or pass "
                                f"{guard.OVERRIDE_FLAG} to take that risk")
            warnings += [f"router ({router.ssh}): {finding} ({guard.OVERRIDE_FLAG})" for finding in shared]
        if routed_by_kernel(cases) and not allow_forwarding and not forwarding_on(host, hosts):
            raise HostError(forwarding_refusal(hosts))
        return warnings
    finally:
        host.close()


def planned_router_changes(hosts: HostsFile, cases: Iterable[CaseSpec], allow_forwarding: bool) -> list[str]:
    """The confirmation's line for R (hosts/confirm.py has the sender's and receiver's)."""
    cases = [c for c in cases if c.scenario == "middlebox"]
    if hosts.router is None or not cases:
        return []
    router = hosts.router
    off = sorted({f for c in cases for f, on in c.profile.features.items() if not on})
    parts = [f"MTU set to {', '.join(str(m) for m in sorted({c.mtu for c in cases}))} (and put back)",
             f"ethtool features turned off and back on: {', '.join(off) or 'none'}",
             "iperf3 started and ended on terminated paths"]
    if bridged_by_fwd(cases):
        parts.append("offlab-fwd copied (by hash, kept) and run on both interfaces; on the sender and "
                     "the receiver a host route and a permanent neighbour entry for the other meanwhile")
    if allow_forwarding and routed_by_kernel(cases):
        parts.append(f"{forwarding_key(forwarding_path(hosts))} set to 1 if it is 0 (and put back)")
    return [f"router {router.ssh}, interfaces {', '.join(router.interfaces)}: " + "; ".join(parts)]


def router_facts(hosts: HostsFile) -> dict[str, dict[str, str]]:
    """R's facts for "What was measured" (hosts/facts.py), per test interface."""
    if hosts.router is None:
        return {}
    host = SshHost("r", hosts.router, hosts.ssh_config)
    try:
        facts = read_facts(host, hosts.router.interfaces[0])
        second = read_facts(host, hosts.router.interfaces[1])
        facts.update({f"{key} ({hosts.router.interfaces[1]})": value for key, value in second.items()
                      if facts.get(key) != value})
        key = forwarding_key(forwarding_path(hosts))
        facts["IP forwarding before the run"] = f"{key} = {1 if forwarding_on(host, hosts) else 0}"
    finally:
        host.close()
    facts["ssh"] = hosts.router.ssh
    facts["interfaces"] = " (toward the sender), ".join(hosts.router.interfaces) + " (toward the receiver)"
    facts["cores used"] = f"app {hosts.router.app_core} (iperf3 on terminated paths, offlab-fwd)"
    return {"router": facts}


def _with_router_interfaces(hosts: HostsFile) -> HostsFile:
    """The file as the `ofl-` leftovers check sees it: R's interfaces count as test ones."""
    extra = {f"router-{n}": replace(hosts.router, interface=n) for n in (hosts.router.interfaces if hosts.router else ())}
    return replace(hosts, hosts={**hosts.hosts, **extra})
