"""What a guest is — its name, NIC profile, address, MTU, memory and vCPUs — and the
error every guest raises, wherever it runs."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .profile import NicProfile


class GuestError(Exception):
    """A guest that did not start, did not answer, or whose command failed."""


@dataclass(frozen=True)
class GuestSpec:
    name: str
    """Lowercase letters and digits: names the guest's files and QEMU (`-name ofl-NAME`)."""
    nic: NicProfile
    address: str
    """eth0's address with its prefix, "10.213.0.1/24"."""
    mtu: int = 1500
    memory_mb: int = 256
    cpus: int = 1

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[a-z0-9]{1,12}", self.name):
            raise ValueError(f"guest name {self.name!r}: 1–12 lowercase letters and digits")
        if not re.fullmatch(r"[0-9.]+/\d+", self.address):
            raise ValueError(f"guest address {self.address!r}: an IPv4 address with its prefix")
