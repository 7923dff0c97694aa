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

A top-level `ssh_config = "path"` passes `-F path` to every ssh. Every mistake is one
line naming the file, the host and the fix.
"""

from __future__ import annotations

import ipaddress
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROLES = ("sender", "receiver")
KEYS = {"ssh", "interface", "address", "peer", "app_core", "irq_core", "pin_irqs", "sudo"}
REQUIRED = ("ssh", "interface", "address", "peer", "app_core")


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


@dataclass(frozen=True)
class HostsFile:
    source: str
    hosts: dict[str, HostSpec]
    ssh_config: str | None = None

    def describe(self) -> str:
        """For RunSettings.hosts: "ssh: sender lab@server1 (ens1f0), receiver …"."""
        parts = [f"{spec.role} {spec.ssh} ({spec.interface})" for spec in self.hosts.values()]
        return "ssh: " + ", ".join(parts)


def load(path: str | Path) -> HostsFile:
    path = Path(path)
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise HostsFileError(f"{path}: no such hosts file; write one as docs/real-hosts.md shows") from None
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
        raise HostsFileError(f"{path}: not a TOML file ({err}); see docs/real-hosts.md") from None
    return parse(doc, str(path))


def parse(doc: dict[str, Any], source: str) -> HostsFile:
    config = doc.get("ssh_config")
    unknown = set(doc) - set(ROLES) - {"ssh_config"}
    if unknown:
        raise HostsFileError(f"{source}: unknown table or key {sorted(unknown)[0]!r}; "
                             f"use [{'], ['.join(ROLES)}] and ssh_config")
    if config is not None and not isinstance(config, str):
        raise HostsFileError(f"{source}: ssh_config must be the path of an ssh config file")
    hosts = {}
    for role in ROLES:
        table = doc.get(role)
        if not isinstance(table, dict):
            raise HostsFileError(f"{source}: no [{role}] table; a run needs a sender and a receiver")
        hosts[role] = _host(source, role, table)
    if hosts["sender"].peer != hosts["receiver"].address or hosts["receiver"].peer != hosts["sender"].address:
        raise HostsFileError(f"{source}: each host's peer must be the other's address "
                             f"(sender peer {hosts['sender'].peer}, receiver address {hosts['receiver'].address})")
    return HostsFile(source, hosts, config)


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
