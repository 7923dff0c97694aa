"""The guests plan's axes: real QEMU guests on virtio-net, each a topology of its own.

Seed 000 measured VM to VM on different nodes, plain and over VXLAN between the nodes;
seed 004 a QEMU guest whose virtio-net offers (`host_tso4`) or withholds TSO, with
DPDK's vhost backend doing GRO/GSO. Here every combination of

* `guest_paths` — vm2vm (guest A to guest B) or vm2host (guest A to its node's stack);
* `overlays` — none, or vxlan: the nodes are two namespaces joined by an underlay
  veth, each bridging its guests onto a VXLAN device (the hypervisor encapsulates, as
  in seed 000; the guests see plain Ethernet);
* `backends` — tap (QEMU's own virtio in userspace), tap-vhost (the kernel's vhost-net),
  vhost-user (offlab-fwd as the backend, the engine between guest and node);
* `fwd_modes` — offlab-fwd's mode on vhost-user paths (pass, gso, gro);
* `virtio` — which virtio-net features QEMU offers the guest (vm/profile.py's
  VIRTIO_PROFILES);

is one topology: the guests boot with that device and keep it for every case measured
on it (QEMU fixes a device's features when it starts). The in-guest ethtool profiles
(`sequences`) toggle the guest driver's offloads on top.
"""

from __future__ import annotations

from itertools import product

from ...records import Params
from ...vm.profile import VIRTIO_PROFILES
from ..base import PlanCheck, Variant

SCENARIO = "qemu"
PATHS = ("vm2vm", "vm2host")
OVERLAYS = ("none", "vxlan")
BACKENDS = ("tap", "tap-vhost", "vhost-user")
FWD_MODES = ("pass", "gso", "gro")

_SHORT_BACKEND = {"tap": "tap", "tap-vhost": "vhost", "vhost-user": "vu"}


def variant_label(params: Params) -> str:
    """`qemu-vm2vm-vxlan-vu-gro-all-on`: the variant's name for people."""
    parts = [SCENARIO, str(params["path"])]
    if params["overlay"] != "none":
        parts.append(str(params["overlay"]))
    parts.append(_SHORT_BACKEND[str(params["backend"])])
    if "fwd" in params:
        parts.append(str(params["fwd"]))
    parts.append(str(params["virtio"]))
    return "-".join(parts)


def expand_scenarios(check: PlanCheck, variants: list[Variant]) -> list[Variant]:
    """`qemu` replaced by one variant per path × overlay × backend (× mode) × virtio."""
    keys = ("guest_paths", "overlays", "backends", "fwd_modes", "virtio")
    if not any(v.scenario == SCENARIO for v in variants):
        for key in keys:
            if key in check.doc:
                raise check.fail(key, f"only the '{SCENARIO}' scenario takes '{key}'; add it to scenarios")
        return variants
    paths = check.choices("guest_paths", list(PATHS), default=["vm2vm"])
    overlays = check.choices("overlays", list(OVERLAYS), default=["none"])
    backends = check.choices("backends", list(BACKENDS), default=["tap"])
    modes = check.choices("fwd_modes", list(FWD_MODES), default=["pass"])
    profiles = check.choices("virtio", list(VIRTIO_PROFILES), default=["all-on"])
    if "fwd_modes" in check.doc and "vhost-user" not in backends:
        raise check.fail("fwd_modes", "offlab-fwd runs only on vhost-user paths; add \"vhost-user\" to backends")
    expanded: list[Variant] = []
    for variant in variants:
        if variant.scenario != SCENARIO:
            expanded.append(variant)
            continue
        for path, overlay, backend, profile in product(paths, overlays, backends, profiles):
            for mode in (modes if backend == "vhost-user" else [None]):
                params = Params(path=path, overlay=overlay, backend=backend, virtio=profile,
                                **({"fwd": mode} if mode else {}))
                expanded.append(Variant(SCENARIO, params, variant_label(params)))
    return expanded
