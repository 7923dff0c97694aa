"""The NICs' drop and error counters per case (real hosts). Latency and UDP capacity
have views of their own (latency_view.py, capacity_view.py)."""

from __future__ import annotations

from typing import Sequence

from ..studies import Section
from .model import ProfileRow
from .tables import Table

NIC_INTRO = ("The NICs' own counters (`ethtool -S`) that say drops or errors, mean growth per "
             "sample, per case: where a profile is slower, a counter here often says why (a "
             "ring that overflowed, a checksum the NIC refused). Real hosts only.")


def nic_sections(rows: Sequence[ProfileRow]) -> list[Section]:
    """Drop and error counters of the NICs that grew, per case (real hosts)."""
    from ..counters import is_pathology
    found = []
    has_nic = False
    for row in rows:
        totals: dict[str, float] = {}
        for sample in row.samples:
            for name, value in sample.counters.items():
                host, _, counter = name.partition(":")
                if counter.startswith("nic."):
                    has_nic = True
                    if is_pathology(counter) and value > 0:
                        totals[name] = totals.get(name, 0.0) + value
        for name, total in sorted(totals.items(), key=lambda item: -item[1]):
            found.append((row.case.key, name, f"{total / len(row.samples):.3g}"))
    if not has_nic:
        return []
    table = Table(("Case", "Counter", "Mean growth per sample"), tuple(found), align_left=2) if found else \
        Table(("NIC counters",), (("no NIC drop or error counter grew in any case",),))
    return [Section("NIC counters (drops and errors)", NIC_INTRO, (("Per case", table),))]
