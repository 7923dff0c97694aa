"""The hosts file (`offlab run --hosts hosts.toml`): the user's own servers, one table per
role, each reached with the OpenSSH client exactly as `ssh DESTINATION` would reach it
(`~/.ssh/config`, jump hosts, the agent and keys just work).

    [sender]
    ssh = "lab@server1"          # anything ssh accepts: an alias of ~/.ssh/config too
    interface = "ens1f0"         # the test interface, already addressed
    address = "192.168.50.1"     # its address
    peer = "192.168.50.2"        # the receiver's test address
    app_core = 2                 # iperf3 runs pinned here
    irq_core = 3                 # optional: the interface's queue IRQs go here (pin_irqs)
    pin_irqs = false
    sudo = false                 # prefix every command with `sudo -n`

    [receiver]
    …

A third table, `[router]`, makes R of the middlebox plan (A = the sender, B = the
receiver, R between them, topology/remote_middlebox.py):

    [router]
    ssh = "lab@server3"
    interfaces = ["ens1f0", "ens1f1"]   # toward the sender, toward the receiver
    app_core = 2                 # iperf3 (terminated paths) and offlab-fwd run here
    sudo = false

Top-level keys: `ssh_config = "path"` passes `-F path` to every ssh (the file must be
owned by root or by the user ssh runs as, and writable by nobody else: ssh executes what
it says, ProxyCommand included); `same_kernel = true` lets two roles share one kernel
(refused otherwise); `watchdog_s` is how long a server waits for the controller's
heartbeat before it restores itself (server.py); `udp_max_rate` caps UDP ("1G" unless
raised, "unlimited"); `baseline = "as-configured"` makes every profile start from the
test interfaces' features as they were, instead of all on. Every mistake is one line naming the
file, the host and the fix.

A `[test_network]` table moves what offlab puts on the servers' test link off a range
another user of it holds (each key optional; the defaults shown):

    [test_network]
    vni = 42                     # the VXLAN devices' VNI (ofl-tn0, the guests' ofl-vx0)
    vxlan_port = 4789            # their UDP port
    prefix = "10.202.0.0/24"     # the tunnels' inner addresses (.1 sender, .2 receiver)
    guest_prefix = "10.214.0.0/24"  # the qemu guests' segment (.1 guest A, .2 guest B)
    iperf3_port = 5201           # iperf3's server port on the receiver
"""

from __future__ import annotations

import ipaddress
import os
import pwd
import re
import stat
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROLES = ("sender", "receiver")
ROUTER = "router"
ROUTER_KEYS = {"ssh", "interfaces", "app_core", "sudo"}
KEYS = {"ssh", "interface", "address", "peer", "app_core", "irq_core", "pin_irqs", "sudo"}
REQUIRED = ("ssh", "interface", "address", "peer", "app_core")
TOP_KEYS = {"ssh_config", "same_kernel", "watchdog_s", "udp_max_rate", "baseline"}
TEST_NETWORK = "test_network"
BASELINES = ("all-on", "as-configured")
DEFAULT_UDP_MAX_BPS = 1e9
"""UDP offered on real hosts at most (bit/s) unless the hosts file raises it: their
network may be shared, and UDP has no congestion control."""
_RATE_UNITS = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9}
DEFAULT_WATCHDOG_S = 60
MIN_WATCHDOG_S = 5
IFNAMSIZ = 15
_INTERFACE = re.compile(r"[A-Za-z0-9_.:@-]+")
"""What a Linux interface name may hold here (no "/", no whitespace: it becomes a path)."""


class HostsFileError(ValueError):
    """A hosts file that cannot be used; the message is one line with the fix."""


@dataclass(frozen=True)
class HostSpec:
    role: str
    ssh: str
    interface: str
    address: str
    peer: str
    app_core: int
    irq_core: int | None = None
    pin_irqs: bool = False
    sudo: bool = False
    interfaces: tuple[str, ...] = ()
    """The router's two test interfaces, toward the sender and toward the receiver
    (`interface` is then the first); empty for the sender and the receiver."""


@dataclass(frozen=True)
class TestNetwork:
    """What offlab puts on the test link, as the hosts file's [test_network] sets it;
    the defaults are the local lab's (topology/tunnel.py, guests.py, traffic.py)."""

    __test__ = False  # not a pytest class
    vni: int = 42
    vxlan_port: int = 4789
    prefix: str = "10.202.0.0/24"
    guest_prefix: str = "10.214.0.0/24"
    iperf3_port: int = 5201

    @staticmethod
    def pair(prefix: str) -> tuple[str, str, int]:
        """(".1", ".2", prefix length) of a prefix: the two ends' addresses in it."""
        network = ipaddress.ip_network(prefix)
        return str(network.network_address + 1), str(network.network_address + 2), network.prefixlen

    @property
    def inner_v4(self) -> tuple[str, str, int]:
        return self.pair(self.prefix)

    @property
    def guest_addresses(self) -> dict[str, str]:
        """The guests' addresses by node ("a", "b"), as topology/guests.py's ADDRESS."""
        first, second, _ = self.pair(self.guest_prefix)
        return {"a": first, "b": second}

    @property
    def guest_prefixlen(self) -> int:
        return self.pair(self.guest_prefix)[2]


_TEST_NETWORK_RANGES = {"vni": (1, 16777215), "vxlan_port": (1, 65535), "iperf3_port": (1, 65535)}


@dataclass(frozen=True)
class HostsFile:
    source: str
    hosts: dict[str, HostSpec]
    ssh_config: str | None = None
    same_kernel: bool = False
    watchdog_s: int = DEFAULT_WATCHDOG_S
    udp_max_bps: float | None = DEFAULT_UDP_MAX_BPS
    """None: "unlimited" (the capacity search's unlimited probe included)."""
    baseline: str = "all-on"
    """What every profile starts from on the test interfaces: every toggled feature on,
    or each as the operator configured it (read before the run changes anything)."""
    router: HostSpec | None = None
    """R of the middlebox plan, when the file has a [router] table."""
    test_network: TestNetwork = TestNetwork()

    def roles(self) -> dict[str, HostSpec]:
        """Every server of the file by role: the sender, the receiver and the router."""
        return {**self.hosts, **({ROUTER: self.router} if self.router is not None else {})}

    def describe(self) -> str:
        """For RunSettings.hosts: "ssh: sender lab@server1 (ens1f0), receiver …"."""
        parts = [f"{spec.role} {spec.ssh} ({', '.join(spec.interfaces or (spec.interface,))})"
                 for spec in self.roles().values()]
        return "ssh: " + ", ".join(parts)


def load(path: str | Path) -> HostsFile:
    return checked(parse(read_document(path), str(path)), str(path))


def read_document(path: str | Path) -> dict[str, Any]:
    """A hosts (or fleet) file's TOML, or one line saying why it cannot be read."""
    path = Path(path)
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise HostsFileError(f"{path}: no such hosts file; write one as docs/real-hosts.md shows") from None
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
        raise HostsFileError(f"{path}: not a TOML file ({err}); see docs/real-hosts.md") from None


def checked(found: HostsFile, source: str) -> HostsFile:
    """`found`, once its ssh_config (if any) is one only root or the user ssh runs as can
    write: what the file's parse cannot see."""
    if found.ssh_config is not None:
        sudo_user = os.environ.get("SUDO_USER")
        runs_as = pwd.getpwnam(sudo_user).pw_uid if sudo_user and os.geteuid() == 0 else None
        check_ssh_config(found.ssh_config, source, runs_as)
    return found


def check_ssh_config(config: str, source: str, runs_as: int | None = None) -> None:
    """ssh executes what its config says (ProxyCommand, LocalCommand): refuse one that
    someone other than root or the user ssh runs as could have written."""
    try:
        info = os.stat(config)
    except OSError as err:
        raise HostsFileError(f"{source}: ssh_config {config}: {err.strerror}; give an existing file") from None
    owners = {0, os.getuid(), *([] if runs_as is None else [runs_as])}
    if info.st_uid not in owners or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise HostsFileError(f"{source}: ssh_config {config} is owned by uid {info.st_uid} or writable by "
                             "others, and ssh would run what it says; chown root and chmod go-w it")


def parse(doc: dict[str, Any], source: str) -> HostsFile:
    config = doc.get("ssh_config")
    unknown = set(doc) - set(ROLES) - {ROUTER, TEST_NETWORK} - TOP_KEYS
    if unknown:
        raise HostsFileError(f"{source}: unknown table or key {sorted(unknown)[0]!r}; "
                             f"use [{'], ['.join((*ROLES, ROUTER, TEST_NETWORK))}], {', '.join(sorted(TOP_KEYS))}")
    if config is not None and not isinstance(config, str):
        raise HostsFileError(f"{source}: ssh_config must be the path of an ssh config file")
    if not isinstance(doc.get("same_kernel", False), bool):
        raise HostsFileError(f"{source}: same_kernel must be true or false")
    watchdog = doc.get("watchdog_s", DEFAULT_WATCHDOG_S)
    if isinstance(watchdog, bool) or not isinstance(watchdog, int) or watchdog < MIN_WATCHDOG_S:
        raise HostsFileError(f"{source}: watchdog_s = {watchdog!r} must be whole seconds, at least {MIN_WATCHDOG_S}")
    hosts = {}
    for role in ROLES:
        table = doc.get(role)
        if not isinstance(table, dict):
            raise HostsFileError(f"{source}: no [{role}] table; a run needs a sender and a receiver")
        hosts[role] = _host(source, role, table)
    if hosts["sender"].peer != hosts["receiver"].address or hosts["receiver"].peer != hosts["sender"].address:
        raise HostsFileError(f"{source}: each host's peer must be the other's address "
                             f"(sender peer {hosts['sender'].peer}, receiver address {hosts['receiver'].address})")
    baseline = doc.get("baseline", "all-on")
    if baseline not in BASELINES:
        raise HostsFileError(f"{source}: baseline = {baseline!r}; use \"all-on\" or \"as-configured\"")
    router = _router(source, doc[ROUTER]) if ROUTER in doc else None
    return HostsFile(source, hosts, config, doc.get("same_kernel", False), watchdog,
                     _udp_max(doc.get("udp_max_rate", "1G"), source), baseline, router,
                     _test_network(source, doc.get(TEST_NETWORK, {})))


def _test_network(source: str, table: Any) -> TestNetwork:
    """[test_network]: vni, vxlan_port, prefix, guest_prefix, iperf3_port (each optional)."""
    where = f"{source}: [{TEST_NETWORK}]"
    allowed = ", ".join(TestNetwork.__dataclass_fields__)
    if not isinstance(table, dict):
        raise HostsFileError(f"{where} must be a table ({allowed})")
    for key, value in table.items():
        if key not in TestNetwork.__dataclass_fields__:
            raise HostsFileError(f"{where}: unknown key {key!r}; allowed: {allowed}")
        if key in _TEST_NETWORK_RANGES:
            low, high = _TEST_NETWORK_RANGES[key]
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise HostsFileError(f"{where}: {key} = {value!r} must be a whole number from {low} to {high}")
        else:
            _check_prefix(where, key, value)
    found = TestNetwork(**table)
    if ipaddress.ip_network(found.prefix).overlaps(ipaddress.ip_network(found.guest_prefix)):
        raise HostsFileError(f"{where}: prefix {found.prefix} and guest_prefix {found.guest_prefix} overlap; "
                             "give them separate ranges")
    return found


def _check_prefix(where: str, key: str, value: Any) -> None:
    try:
        network = ipaddress.IPv4Network(value) if isinstance(value, str) else None
    except ValueError:
        network = None
    if network is None or not 8 <= network.prefixlen <= 30:
        raise HostsFileError(f'{where}: {key} = {value!r} must be an IPv4 network from /8 to /30 '
                             'with no host bits, such as "10.202.0.0/24"')


def _udp_max(value: Any, source: str) -> float | None:
    """"unlimited", or a rate such as "2.5G" (bit/s)."""
    if value == "unlimited":
        return None
    text = str(value).strip().upper()
    number, unit = (text[:-1], text[-1]) if text[-1:] in _RATE_UNITS and text[-1:] else (text, "")
    try:
        bps = float(number) * _RATE_UNITS[unit]
    except ValueError:
        bps = -1.0
    if isinstance(value, bool) or not 1e3 <= bps <= 1e12:
        raise HostsFileError(f"{source}: udp_max_rate = {value!r} must be \"unlimited\" or a rate such "
                             "as \"2.5G\" (bit/s)")
    return bps


def _router(source: str, table: Any) -> HostSpec:
    """[router]: ssh, interfaces (toward the sender, toward the receiver), app_core, sudo."""
    where = f"{source}: [{ROUTER}]"
    if not isinstance(table, dict):
        raise HostsFileError(f"{where} must be a table (ssh, interfaces, app_core, sudo)")
    for key in table:
        if key not in ROUTER_KEYS:
            raise HostsFileError(f"{where}: unknown key {key!r}; allowed: {', '.join(sorted(ROUTER_KEYS))}")
    for key in ("ssh", "interfaces", "app_core"):
        if key not in table:
            raise HostsFileError(f"{where}: missing key {key!r}; add it (see docs/real-hosts.md)")
    if not isinstance(table["ssh"], str) or not table["ssh"] or table["ssh"].startswith("-"):
        raise HostsFileError(f"{where}: ssh = {table['ssh']!r} must be a non-empty name")
    names = table["interfaces"]
    if not isinstance(names, list) or len(names) != 2 or len(set(map(str, names))) != 2:
        raise HostsFileError(f'{where}: interfaces = {names!r} must be two different interfaces: '
                             '["<toward the sender>", "<toward the receiver>"]')
    for name in names:
        _check_interface(where, name)
    value = table["app_core"]
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise HostsFileError(f"{where}: app_core = {value!r} must be a core number (0, 1, …)")
    if not isinstance(table.get("sudo", False), bool):
        raise HostsFileError(f"{where}: sudo must be true or false")
    # address/peer: R's own addresses are read from its interfaces when a run needs them.
    return HostSpec(ROUTER, table["ssh"], names[0], "", "", value, sudo=table.get("sudo", False),
                    interfaces=tuple(names))


def _check_interface(where: str, name: Any) -> None:
    if not isinstance(name, str) or len(name) > IFNAMSIZ or not _INTERFACE.fullmatch(name) or name in (".", ".."):
        raise HostsFileError(f"{where}: interface {name!r} is not a Linux interface name "
                             f"(at most {IFNAMSIZ} of letters, digits and _.:@-)")


def _host(source: str, role: str, table: dict[str, Any]) -> HostSpec:
    where = f"{source}: [{role}]"
    for key in table:
        if key not in KEYS:
            raise HostsFileError(f"{where}: unknown key {key!r}; allowed: {', '.join(sorted(KEYS))}")
    for key in REQUIRED:
        if key not in table:
            raise HostsFileError(f"{where}: missing key {key!r}; add it (see docs/real-hosts.md)")
    for key in ("ssh", "interface"):
        if not isinstance(table[key], str) or not table[key] or table[key].startswith("-"):
            raise HostsFileError(f"{where}: {key} = {table[key]!r} must be a non-empty name")
    name = table["interface"]
    if len(name) > IFNAMSIZ or not _INTERFACE.fullmatch(name) or name in (".", ".."):
        raise HostsFileError(f"{where}: interface = {name!r} is not a Linux interface name "
                             f"(at most {IFNAMSIZ} of letters, digits and _.:@-)")
    for key in ("address", "peer"):
        try:
            ipaddress.ip_address(table[key])
        except (ValueError, TypeError):
            raise HostsFileError(f"{where}: {key} = {table[key]!r} is not an IP address") from None
    for key in ("app_core", "irq_core"):
        value = table.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise HostsFileError(f"{where}: {key} = {value!r} must be a core number (0, 1, …)")
    for key in ("pin_irqs", "sudo"):
        if not isinstance(table.get(key, False), bool):
            raise HostsFileError(f"{where}: {key} must be true or false")
    if table.get("pin_irqs") and table.get("irq_core") is None:
        raise HostsFileError(f"{where}: pin_irqs needs irq_core, the core to pin the IRQs to")
    return HostSpec(role, table["ssh"], table["interface"], table["address"], table["peer"],
                    table["app_core"], table.get("irq_core"), table.get("pin_irqs", False),
                    table.get("sudo", False))
