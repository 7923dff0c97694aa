"""What a real host is, read once when a run begins: kernel, cores, the test
interface's driver, firmware and bus (`ethtool -i`), link speed and duplex (sysfs),
channels (`ethtool -l`), rings (`ethtool -g`) and interrupt coalescing (`ethtool -c`).
A report names them beside every figure from that host. Pure parsers, one reader."""

from __future__ import annotations

from .base import Host
from .hostsfile import HostSpec

ETHTOOL_I = {"driver", "version", "firmware-version", "bus-info"}

# Drivers of software devices: a test interface of one of these is no NIC, whatever
# machine it is on, and its properties (veth carrying super-packets whole, its NAPI
# path) can show up as offload effects.
VIRTUAL_DRIVERS = {"veth", "tun", "bridge", "dummy", "macvlan", "ipvlan", "vxlan", "geneve"}


def virtual_roles(host_facts: dict[str, dict[str, str]]) -> list[str]:
    """The roles whose test interface is a software device, from the facts read at the
    start of a run (`nic driver`)."""
    return [role for role, facts in host_facts.items()
            if facts.get("nic driver", "") in VIRTUAL_DRIVERS]


def parse_colon_list(text: str, wanted: set[str] | None = None) -> dict[str, str]:
    """`key: value` lines (ethtool -i/-l/-g/-c), first occurrence of each key (ethtool -l
    and -g print the maximums first, then the current settings: the second block is what
    is in force, so later occurrences win)."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if sep and key and value and (wanted is None or key in wanted):
            found[key] = value
    return found


def read_facts(host: Host, interface: str) -> dict[str, str]:
    """Facts of one host and its test interface; what a command cannot tell is "n/a"."""
    def out(args: list[str]) -> str:
        done = host.run(args, check=False, timeout=15)
        return done.stdout if done.returncode == 0 else ""

    facts = {"kernel": out(["uname", "-r"]).strip() or "n/a",
             "cores": out(["nproc"]).strip() or "n/a",
             "cpu": next((line.split(":", 1)[1].strip() for line in out(["cat", "/proc/cpuinfo"]).splitlines()
                          if line.startswith("model name")), "n/a")}
    info = parse_colon_list(out(["ethtool", "-i", interface]), ETHTOOL_I)
    facts.update({f"nic {k}": v for k, v in info.items()})
    speed = out(["cat", f"/sys/class/net/{interface}/speed"]).strip()
    facts["link speed"] = f"{speed} Mb/s" if speed.isdigit() and int(speed) > 0 else "n/a (no link speed)"
    facts["duplex"] = out(["cat", f"/sys/class/net/{interface}/duplex"]).strip() or "n/a"
    channels = parse_colon_list(out(["ethtool", "-l", interface]), {"RX", "TX", "Combined"})
    facts["channels"] = ", ".join(f"{k} {v}" for k, v in channels.items()) or "n/a"
    rings = parse_colon_list(out(["ethtool", "-g", interface]), {"RX", "TX"})
    facts["rings"] = ", ".join(f"{k} {v}" for k, v in rings.items()) or "n/a"
    coalesce = parse_colon_list(out(["ethtool", "-c", interface]),
                                {"Adaptive RX", "rx-usecs", "tx-usecs", "rx-frames"})
    facts["coalescing"] = ", ".join(f"{k} {v}" for k, v in coalesce.items()) or "n/a"
    return facts


def steering_text(spec: HostSpec, steer_rx_softirq: bool) -> str:
    """What a run applies to place the receiver's receive processing (host facts)."""
    if spec.pin_irqs:
        return f"{spec.interface}'s queue IRQs pinned to core {spec.irq_core} (pin_irqs); no RPS"
    if steer_rx_softirq and spec.role == "receiver":
        return f"RPS of {spec.interface}'s receive queues to core {spec.app_core} (the application's)"
    return "none: receive processing where the NIC's IRQs put it"
