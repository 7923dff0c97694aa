"""Tunnels as data on the real kernel: each kind over IPv4 and IPv6 underlays at an MTU
that is neither 1500 nor 9000 — built, carrying TCP, torn down — or, where this kernel
lacks the device, refused in one line naming the kernel option."""

import pytest

from offlab.records import Params
from offlab.topology import TopologyError, build, our_namespaces
from offlab.topology.tunnel import KINDS


def _kernel_has(kind: str, underlay: str) -> bool:
    try:
        with build(kind, 4000, Params(underlay=underlay)):
            return True
    except TopologyError as refused:
        assert "\n" not in str(refused) and KINDS[kind].config in str(refused)
        return False


@pytest.mark.parametrize("underlay", ["ipv4", "ipv6"])
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_tunnel_kind_builds_or_is_refused_naming_its_kernel_option(kind, underlay):
    if not _kernel_has(kind, underlay):
        pytest.skip(f"this kernel has no {kind} over {underlay} ({KINDS[kind].config})")
    with build(kind, 4000, Params(underlay=underlay)) as topo:
        links = {l["ifname"]: l["mtu"] for l in topo.sender.host.links()}
        assert links["ofl-v0"] == 4000 and links["ofl-tn0"] == 4000 - KINDS[kind].overhead(underlay)
        done = topo.sender.host.run(["iperf3", "-v"], check=False)
        assert done.returncode == 0
    assert our_namespaces() == []


def test_an_mtu_the_device_refuses_names_its_range():
    with pytest.raises(TopologyError, match=r"refuses MTU 70000 .*accepts 68 to 65535"):
        with build("bare", 70000):
            pass
    assert our_namespaces() == []


def test_vlan_is_built_or_refused_naming_its_kernel_option():
    try:
        with build("bare", 1500, Params(vlan=100)) as topo:
            assert "ofl-v0q" in {l["ifname"] for l in topo.sender.host.links()}
    except TopologyError as refused:
        assert "CONFIG_VLAN_8021Q" in str(refused)
    assert our_namespaces() == []
