#!/usr/bin/env python3
"""Boots one guest per virtio-net device option (backend tap, two at a time) and prints
what each negotiates: the guest's virtio feature bits, its `ethtool -k eth0`, and the
host TAP's `ethtool -k` (the offloads QEMU set on it from the guest's features). The
table in docs/vms.md is this script's output. Needs root and `make guest`.

    .venv/bin/python scripts/vm-negotiation.py [OPTION …]   e.g. host_tso4=off
"""

from __future__ import annotations

import sys

from offlab.hosts import LocalNamespace
from offlab.hosts.offloads import parse_features
from offlab.vm import DeviceFeatures, Guest, GuestSpec, NicProfile, read_guest_nic

OPTIONS = ["(defaults)", "csum=off", "guest_csum=off", "host_tso4=off", "host_tso6=off", "host_ufo=off",
           "guest_tso4=off", "guest_tso6=off", "guest_ecn=off", "guest_ufo=off", "mrg_rxbuf=off",
           "guest_tso4=off,guest_tso6=off,guest_ecn=off,guest_ufo=off"]
BITS = ("CSUM", "GUEST_CSUM", "GUEST_TSO4", "GUEST_TSO6", "GUEST_ECN", "GUEST_UFO",
        "HOST_TSO4", "HOST_TSO6", "HOST_ECN", "HOST_UFO", "MRG_RXBUF")
GUEST_FLAGS = ("tx-checksumming", "tx-tcp-segmentation", "tx-tcp-ecn-segmentation", "tx-tcp6-segmentation",
               "tcp-segmentation-offload", "rx-checksumming", "large-receive-offload", "rx-gro-hw")
TAP_FLAGS = ("tx-checksumming", "tx-tcp-segmentation", "tx-tcp6-segmentation", "tx-tcp-ecn-segmentation",
             "tx-udp-segmentation")


def observe(ns: LocalNamespace, batch: list[str]) -> dict[str, tuple[set[str], set[str], set[str]]]:
    guests = []
    for n, option in enumerate(batch):
        features = DeviceFeatures() if option.startswith("(") else DeviceFeatures.parse(option)
        nic = NicProfile("tap", features, tap=f"ofl-gn{n}", mac=f"52:54:00:00:0c:{n:02x}")
        guests.append(Guest(GuestSpec(f"n{n}", nic, f"10.214.0.{n + 1}/24"), ns))
    found = {}
    try:
        for guest in guests:
            guest.launch()
        for option, guest in zip(batch, guests):
            guest.wait_ready()
            state = read_guest_nic(guest)
            tap = parse_features(ns.run(["ethtool", "-k", guest.tap]).stdout)
            found[option] = (set(state.virtio) & set(BITS),
                             {f for f in GUEST_FLAGS if state.on(f)},
                             {f for f in TAP_FLAGS if (s := tap.features.get(f)) and s.on})
    finally:
        for guest in guests:
            guest.stop()
    return found


def main(options: list[str]) -> None:
    ns = LocalNamespace("gneg").create()
    try:
        rows = {}
        for start in range(0, len(options), 2):
            rows.update(observe(ns, options[start:start + 2]))
    finally:
        ns.remove()
    base = rows.get("(defaults)")
    print("| QEMU `-device virtio-net-pci,…` | guest virtio bits | guest `ethtool -k eth0` (on) | host TAP `ethtool -k` (on) |")
    print("| --- | --- | --- | --- |")
    for option, (bits, flags, tap) in rows.items():
        if base is None or option == "(defaults)":
            cells = [" ".join(sorted(bits)), ", ".join(sorted(flags)), ", ".join(sorted(tap))]
        else:
            cells = [_diff(base[0], bits), _diff(base[1], flags), _diff(base[2], tap)]
        print(f"| `{option}` | " + " | ".join(c or "same" for c in cells) + " |")


def _diff(base: set[str], now: set[str]) -> str:
    return " ".join([f"−{x}" for x in sorted(base - now)] + [f"+{x}" for x in sorted(now - base)])


if __name__ == "__main__":
    main(sys.argv[1:] or OPTIONS)
