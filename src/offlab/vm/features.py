"""What a guest's NIC negotiated, read inside the guest: the virtio feature bits (sysfs
prints them as a string of 0/1, bit 0 first) decoded to names, and the driver's
offload flags (`ethtool -k eth0`), which the driver derives from those bits."""

from __future__ import annotations

from dataclasses import dataclass

from ..hosts.offloads import FeatureListing, parse_features

# Bit numbers from the virtio specification (device type net, and the transport bits
# every device shares); a bit not named here decodes as "BIT_<n>".
VIRTIO_NET_FEATURES = {
    0: "CSUM", 1: "GUEST_CSUM", 2: "CTRL_GUEST_OFFLOADS", 3: "MTU", 5: "MAC", 6: "GSO",
    7: "GUEST_TSO4", 8: "GUEST_TSO6", 9: "GUEST_ECN", 10: "GUEST_UFO",
    11: "HOST_TSO4", 12: "HOST_TSO6", 13: "HOST_ECN", 14: "HOST_UFO", 15: "MRG_RXBUF",
    16: "STATUS", 17: "CTRL_VQ", 18: "CTRL_RX", 19: "CTRL_VLAN", 20: "CTRL_RX_EXTRA",
    21: "GUEST_ANNOUNCE", 22: "MQ", 23: "CTRL_MAC_ADDR",
    24: "NOTIFY_ON_EMPTY", 27: "ANY_LAYOUT", 28: "RING_INDIRECT_DESC", 29: "RING_EVENT_IDX",
    32: "VERSION_1", 33: "ACCESS_PLATFORM", 34: "RING_PACKED", 35: "IN_ORDER",
    36: "ORDER_PLATFORM", 37: "SR_IOV", 38: "NOTIFICATION_DATA", 40: "RING_RESET",
    52: "VQ_NOTF_COAL", 53: "NOTF_COAL", 54: "GUEST_USO4", 55: "GUEST_USO6", 56: "HOST_USO",
    57: "HASH_REPORT", 59: "GUEST_HDRLEN", 60: "RSS", 61: "RSC_EXT", 62: "STANDBY",
    63: "SPEED_DUPLEX",
}

# The offload features of each direction, as a report names them.
SEGMENTATION_FROM_GUEST = ("CSUM", "HOST_TSO4", "HOST_TSO6", "HOST_ECN", "HOST_UFO")
SEGMENTATION_TO_GUEST = ("GUEST_CSUM", "GUEST_TSO4", "GUEST_TSO6", "GUEST_ECN", "GUEST_UFO")


def decode_feature_bits(bits: str) -> list[str]:
    """"1100…" (sysfs `features`) → ["CSUM", "GUEST_CSUM", …], in bit order."""
    bits = bits.strip()
    if bits.strip("01"):
        raise ValueError(f"virtio features {bits[:20]!r}…: expected only 0 and 1")
    return [VIRTIO_NET_FEATURES.get(n, f"BIT_{n}") for n, bit in enumerate(bits) if bit == "1"]


@dataclass(frozen=True)
class GuestNicState:
    virtio: tuple[str, ...]
    """Negotiated virtio feature names."""
    ethtool: FeatureListing

    def on(self, feature: str) -> bool:
        """An ethtool feature's state ("tcp-segmentation-offload", "large-receive-offload")."""
        found = self.ethtool.features.get(feature)
        return bool(found and found.on)


def read_guest_nic(guest, device: str = "eth0") -> GuestNicState:
    """Both views of `device` in a running Guest (qemu.Guest)."""
    bits = guest.run(f"cat /sys/class/net/{device}/device/features").stdout
    listing = guest.run(f"ethtool -k {device}").stdout
    return GuestNicState(tuple(decode_feature_bits(bits)), parse_features(listing))
