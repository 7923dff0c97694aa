"""The report's view of each host's network stack (stackconfig.py): the settings every
host and topology shared once, then per topology what differed between its hosts."""

from __future__ import annotations

from typing import Mapping

from .cells import Table
from .section import Section

INTRO = ("The network stack each host ran the tests with, read when each topology was built: "
         "congestion control, qdiscs, socket buffer limits, the backlog, GRO's flush timeout, "
         "the largest GSO/GRO packet of each test device, the CPU frequency governor and the "
         "tools' versions on the host. `offlab compare` lists any that differ between two runs. "
         "In a network namespace the machine-wide settings (default_qdisc, netdev_max_backlog) "
         "are the machine's.")


def stack_sections(stack: Mapping[str, Mapping[str, Mapping[str, str]]]) -> list:
    if not stack:
        return []
    configs = [config for hosts in stack.values() for config in hosts.values()]
    keys = list(dict.fromkeys(key for config in configs for key in config))
    common = [k for k in keys if all(c.get(k) == configs[0].get(k) for c in configs)]
    tables = [("Every host, every topology", Table(("Setting", "Value"),
                                                   tuple((k, configs[0][k]) for k in common), align_left=2))]
    for place, hosts in stack.items():
        names = list(hosts)
        rows = tuple((k, *(hosts[h].get(k, "–") for h in names))
                     for k in dict.fromkeys(k for h in names for k in hosts[h]) if k not in common)
        if rows:
            tables.append((place, Table(("Setting", *names), rows, align_left=1 + len(names))))
    return [Section("Stack configuration per host", INTRO, tuple(tables))]
