"""Tunnelled scenarios: the bare veth pair as underlay, a tunnel on top, traffic between
the inner addresses — VXLAN, Geneve, GRE (L3), GRETAP (L2), IPIP and SIT, over an IPv4
or an IPv6 underlay (topology parameter `underlay`), as the running kernel offers them.

The inner MTU is the underlay MTU minus the tunnel's overhead, so the outer packets fit
the underlay. IPv6 tunnels (ip6gre, ip6gretap, ip6tnl) are created with
`encaplimit none`: the default tunnel-encapsulation-limit option would add 8 bytes to
every packet that the seed's tunnels did not carry.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..hosts.naming import device_name
from ..hosts.offloads import UDP_TNL, Interface
from ..hosts.naming import RX_DEV, TX_DEV
from .bare import Bare, underlay_addresses
from .base import TopologyError

VNI = 42
VXLAN_PORT = 4789
TX_TUNNEL = device_name("tn0")
RX_TUNNEL = device_name("tn1")
INNER_V4 = ("10.202.0.1", "10.202.0.2", 24)
INNER_V6 = ("fd00:202::1", "fd00:202::2", 64)


@dataclass(frozen=True)
class TunnelKind:
    """One kind of tunnel device: how iproute2 makes it over each underlay family."""

    name: str
    ipv4: tuple[str, ...]
    """`ip link add DEV type …` arguments over IPv4; {local} {remote} {dev} filled in."""
    ipv6: tuple[str, ...]
    overhead4: int
    overhead6: int
    config: str
    """The kernel option that provides it (named when the kernel lacks it)."""
    segmentation: tuple[str, ...]
    """The ethtool features that segment this tunnel's traffic on the underlay."""
    inner_ipv6: bool = False

    def overhead(self, underlay: str) -> int:
        return self.overhead6 if underlay == "ipv6" else self.overhead4

    def link_args(self, device: str, underlay: str, local: str, remote: str, under_dev: str,
                  vni: int = VNI, port: int = VXLAN_PORT) -> list[str]:
        template = self.ipv6 if underlay == "ipv6" else self.ipv4
        fields = {"local": local, "remote": remote, "dev": under_dev, "vni": str(vni), "port": str(port)}
        return ["link", "add", device, "type", *(part.format(**fields) for part in template)]


UDP_TUNNEL = (UDP_TNL,)
KINDS = {kind.name: kind for kind in (
    TunnelKind("vxlan", ("vxlan", "id", "{vni}", "local", "{local}", "remote", "{remote}", "dstport", "{port}",
                         "dev", "{dev}", "noudpcsum"),
               ("vxlan", "id", "{vni}", "local", "{local}", "remote", "{remote}", "dstport", "{port}",
                "dev", "{dev}", "udp6zerocsumtx", "udp6zerocsumrx"),
               50, 70, "CONFIG_VXLAN", UDP_TUNNEL),
    TunnelKind("geneve", ("geneve", "id", "{vni}", "remote", "{remote}"),
               ("geneve", "id", "{vni}", "remote", "{remote}", "udp6zerocsumtx", "udp6zerocsumrx"),
               50, 70, "CONFIG_GENEVE", UDP_TUNNEL),
    TunnelKind("gre", ("gre", "local", "{local}", "remote", "{remote}"),
               ("ip6gre", "local", "{local}", "remote", "{remote}", "encaplimit", "none"),
               24, 44, "CONFIG_NET_IPGRE / CONFIG_IPV6_GRE", ("tx-gre-segmentation", "tx-gre-csum-segmentation")),
    TunnelKind("gretap", ("gretap", "local", "{local}", "remote", "{remote}"),
               ("ip6gretap", "local", "{local}", "remote", "{remote}", "encaplimit", "none"),
               38, 58, "CONFIG_NET_IPGRE / CONFIG_IPV6_GRE", ("tx-gre-segmentation", "tx-gre-csum-segmentation")),
    TunnelKind("ipip", ("ipip", "local", "{local}", "remote", "{remote}"),
               ("ip6tnl", "mode", "ipip6", "local", "{local}", "remote", "{remote}", "encaplimit", "none"),
               20, 40, "CONFIG_NET_IPIP / CONFIG_IPV6_TUNNEL", ("tx-ipxip4-segmentation", "tx-ipxip6-segmentation")),
    TunnelKind("sit", ("sit", "local", "{local}", "remote", "{remote}"),
               ("ip6tnl", "mode", "ip6ip6", "local", "{local}", "remote", "{remote}", "encaplimit", "none"),
               20, 40, "CONFIG_IPV6_SIT / CONFIG_IPV6_TUNNEL", ("tx-sit-segmentation", "tx-ipxip6-segmentation"),
               inner_ipv6=True),
)}


class Tunnel(Bare):
    """Base of every tunnelled scenario; `kind` chooses the device."""

    kind: TunnelKind = KINDS["vxlan"]
    tunnel = True

    def tunnel_segmentation(self) -> tuple[str, ...]:
        return self.kind.segmentation

    @property
    def inner_mtu(self) -> int:
        return self.mtu - self.kind.overhead(self.underlay)

    def _build(self) -> None:
        super()._build()
        local, remote = underlay_addresses(self.underlay)[:2]
        inner = INNER_V6 if self.kind.inner_ipv6 else INNER_V4
        ends = ((self.tx, TX_DEV, TX_TUNNEL, local, remote, inner[0]),
                (self.rx, RX_DEV, RX_TUNNEL, remote, local, inner[1]))
        for host, under, device, mine, theirs, address in ends:
            done = host.ip(*self.kind.link_args(device, self.underlay, mine, theirs,
                                                self.underlay_device(under)), check=False)
            if done.returncode != 0:
                raise TopologyError(f"{self.scenario} over {self.underlay}: this kernel cannot make the "
                                    f"device ({done.stderr.strip()}); it needs {self.kind.config}")
            self.set_mtu(host, device, self.inner_mtu)
            host.add_address(device, address, inner[2])

    def _addresses(self) -> tuple[str, str]:
        inner = INNER_V6 if self.kind.inner_ipv6 else INNER_V4
        return inner[0], inner[1]

    def offload_interfaces(self) -> list[Interface]:
        # Both the tunnel device and its underlay, as the seed toggled them: the tunnel
        # segmentation offloads (tx-udp_tnl-segmentation, tx-gre-segmentation, …) live
        # on the underlay.
        return [
            Interface("tx", self.tx, TX_TUNNEL, self._sender_pinned()),
            Interface("tx", self.tx, TX_DEV, self._sender_pinned(underlay=True)),
            Interface("rx", self.rx, RX_TUNNEL), Interface("rx", self.rx, RX_DEV),
            *self.wire_interfaces(),
        ]


def tunnel_scenarios() -> dict[str, type[Tunnel]]:
    """One scenario per kind: "vxlan", "geneve", "gre", "gretap", "ipip", "sit"."""
    return {name: type(f"Tunnel_{name}", (Tunnel,), {"scenario": name, "kind": kind})
            for name, kind in KINDS.items()}
