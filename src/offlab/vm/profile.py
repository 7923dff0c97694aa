"""A guest's NIC, typed: which QEMU backend carries its frames and which virtio-net
features the device offers, turned into QEMU arguments.

Backends:
- `tap`: QEMU itself moves frames between the virtqueues and a TAP (its userspace
  virtio-net); QEMU sets the TAP's offloads (TUNSETOFFLOAD) from what the guest
  negotiated, so the host kernel segments what the guest cannot take.
- `tap-vhost`: the same TAP, but the kernel's vhost-net moves the frames (a `vhost-<pid>`
  thread); needs /dev/vhost-net.
- `vhost-user`: a userspace backend (offlab-fwd) owns the virtqueues over a unix socket;
  it maps the guest's memory, so that memory must be a shared memfd.

Device features (virtio-net-pci properties, each on by default in QEMU); the names are
the device's point of view, which reads backwards from the guest's:
- `host_tso4/6`, `host_ufo`: the device accepts TSO/UFO super-packets *from* the guest —
  with them the guest driver offers TSO (`ethtool -k`: tcp-segmentation-offload).
- `guest_tso4/6`, `guest_ecn`, `guest_ufo`: the guest accepts super-packets *to* it —
  the host may deliver coalesced frames (the guest's LRO / rx-gro-hw flags).
- `csum`: the device completes checksums of the guest's frames (guest tx-checksumming);
  every host_* segmentation feature depends on it.
- `guest_csum`: the guest accepts frames with a partial checksum (its rx-checksumming);
  every guest_* segmentation feature depends on it.
- `mrg_rxbuf`: receive buffers may be merged, so a large frame spans several.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, fields

from ..hosts.naming import IFNAMSIZ

BACKENDS = ("tap", "tap-vhost", "vhost-user")
VHOST_NET = "/dev/vhost-net"
NETDEV_ID, DEVICE_ID, CHARDEV_ID, MEMORY_ID = "n0", "nic0", "vu0", "mem0"


VIRTIO_PROFILES: dict[str, dict[str, bool]] = {
    # QEMU's defaults: every offload offered both ways.
    "all-on": {},
    # The device refuses the guest's super-packets: the guest's own GSO cuts them
    # (seed 004's "kernel GSO": host_tso4=off).
    "host-tso-off": {"host_tso4": False, "host_tso6": False},
    # The device may not hand the guest super-packets: the backend (or TAP) delivers
    # MTU frames, and the guest's GRO is its only coalescing.
    "guest-tso-off": {"guest_tso4": False, "guest_tso6": False, "guest_ecn": False},
    # No checksum offload either way, and so no segmentation offload (virtio ties TSO
    # to the checksum feature): every frame is complete on the wire.
    "csum-off": {"csum": False, "guest_csum": False},
    # One buffer per receive descriptor chain: large receive buffers instead of merged ones.
    "mrg-rxbuf-off": {"mrg_rxbuf": False},
}
"""The guests plan's `virtio` axis: named sets of device features (the study names
them, the device is defined here, below the topologies that start it)."""


def virtio_options(profile: str) -> dict[str, bool]:
    """The QEMU device options of a named virtio profile."""
    try:
        return dict(VIRTIO_PROFILES[profile])
    except KeyError:
        raise ValueError(f"unknown virtio profile {profile!r}; known: {', '.join(VIRTIO_PROFILES)}") from None


class ProfileError(ValueError):
    """A NIC profile that cannot run (here); the message is one line with the fix."""


@dataclass(frozen=True)
class DeviceFeatures:
    """virtio-net-pci feature properties; None leaves QEMU's default (on)."""

    csum: bool | None = None
    guest_csum: bool | None = None
    guest_tso4: bool | None = None
    guest_tso6: bool | None = None
    guest_ecn: bool | None = None
    guest_ufo: bool | None = None
    host_tso4: bool | None = None
    host_tso6: bool | None = None
    host_ufo: bool | None = None
    mrg_rxbuf: bool | None = None

    def options(self) -> list[str]:
        """`name=on|off` for every feature that is set, in declaration order."""
        return [f"{f.name}={'on' if value else 'off'}" for f in fields(self)
                if (value := getattr(self, f.name)) is not None]

    @classmethod
    def parse(cls, text: str) -> "DeviceFeatures":
        """From "host_tso4=off,guest_tso4=off" (the form of a plan or a test id)."""
        known = {f.name for f in fields(cls)}
        values: dict[str, bool] = {}
        for item in filter(None, (part.strip() for part in text.split(","))):
            name, _, value = item.partition("=")
            if name not in known or value not in ("on", "off"):
                raise ProfileError(f"device feature {item!r}: use NAME=on|off with NAME one of "
                                   f"{', '.join(sorted(known))}")
            values[name] = value == "on"
        return cls(**values)


@dataclass(frozen=True)
class NicProfile:
    backend: str = "tap"
    features: DeviceFeatures = DeviceFeatures()
    tap: str | None = None
    """The TAP's name (tap backends): QEMU creates it, or opens one made beforehand."""
    socket: str | None = None
    """vhost-user: the backend's unix socket; QEMU connects to it (and reconnects)."""
    mac: str = "52:54:00:00:00:01"

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise ProfileError(f"NIC backend {self.backend!r} is not one of {', '.join(BACKENDS)}")
        if self.backend in ("tap", "tap-vhost"):
            if not self.tap or len(self.tap) > IFNAMSIZ or not re.fullmatch(r"[a-zA-Z0-9_.-]+", self.tap):
                raise ProfileError(f"backend {self.backend} needs tap=NAME, a device name of at most "
                                   f"{IFNAMSIZ} characters (got {self.tap!r})")
        if self.backend == "vhost-user" and not self.socket:
            raise ProfileError("backend vhost-user needs socket=PATH, the backend's unix socket")
        if not re.fullmatch(r"([0-9a-f]{2}:){5}[0-9a-f]{2}", self.mac):
            raise ProfileError(f"MAC {self.mac!r} is not six lowercase hex pairs")

    @property
    def shared_memory(self) -> bool:
        """vhost-user backends read the virtqueues in the guest's memory directly."""
        return self.backend == "vhost-user"

    def netdev_args(self) -> list[str]:
        if self.backend == "vhost-user":
            # reconnect=1: a restarted backend (a new profile of offlab-fwd) is picked up
            # again instead of leaving the NIC dead.
            return ["-chardev", f"socket,id={CHARDEV_ID},path={self.socket},reconnect=1",
                    "-netdev", f"vhost-user,id={NETDEV_ID},chardev={CHARDEV_ID}"]
        vhost = ",vhost=on" if self.backend == "tap-vhost" else ""
        return ["-netdev", f"tap,id={NETDEV_ID},ifname={self.tap},script=no,downscript=no{vhost}"]

    def device_args(self) -> list[str]:
        # romfile= : no PXE option ROM — the guest boots from -kernel, and QEMU then does
        # not need the ipxe package.
        options = [f"netdev={NETDEV_ID}", f"id={DEVICE_ID}", f"mac={self.mac}", "romfile=",
                   *self.features.options()]
        return ["-device", "virtio-net-pci," + ",".join(options)]


def check_backend(profile: NicProfile, vhost_net: str = VHOST_NET) -> None:
    """Refuse, in one line, a backend this host cannot give."""
    if profile.backend == "tap-vhost" and not os.path.exists(vhost_net):
        raise ProfileError(f"backend tap-vhost needs {vhost_net}, which this host lacks "
                           "(kernel without CONFIG_VHOST_NET, or the vhost_net module not loaded); "
                           "use backend tap (QEMU's userspace virtio-net) instead")
    if profile.backend == "vhost-user" and profile.socket and not os.path.exists(profile.socket):
        raise ProfileError(f"backend vhost-user: no socket at {profile.socket}; start the backend "
                           "(offlab-fwd) first")
