"""Sweeps in a plan: message sizes, uni-/bidirectional, and the DUT direction, expanded
into the workloads and scenarios of the plan's cross product.

Plan keys (all optional):

* ``message_sizes`` — TCP write sizes (iperf3 ``-l``): a list of byte counts, or a
  range of powers of two ``{ from = 64, to = 262144 }`` (seed 001: 64 B … 256 KiB).
  UDP workloads keep their datagram size and are not multiplied by it.
* ``bidirectional`` — ``false`` (default), ``true``, or ``[false, true]`` for both.
* ``dut`` — ``["rcv", "snd"]``: run every scenario in its DUT layout (seed 002), once
  with the DUT receiving and once sending; see ``topology.dut``.

Pure functions; mistakes raise `SweepError` with the key and the fix, which the plan
loader prefixes with the file name.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Container, Iterable, Mapping

from .records import TrafficSpec

KEYS = frozenset({"message_sizes", "bidirectional", "dut"})
DUT_DIRECTIONS = ("rcv", "snd")
"""The DUT receives the generator's traffic, or sends it to the generator."""
MIN_MESSAGE = 1
MAX_MESSAGE = 1 << 20
"""iperf3 refuses TCP blocks larger than 1 MiB."""


class SweepError(ValueError):
    """A sweep key that cannot be expanded; one line naming the key and the fix."""


@dataclass(frozen=True)
class Sweep:
    message_sizes: tuple[int, ...] = ()
    """Empty: iperf3's default write size."""
    bidirectional: tuple[bool, ...] = (False,)
    dut: tuple[str, ...] = ()
    """Empty: the scenario's own layout (sender core, receiver core)."""


def parse(doc: Mapping[str, Any]) -> Sweep:
    """The sweep keys of a plan document (other keys are the plan loader's business)."""
    dut = _dut(doc.get("dut", []))
    if dut and doc.get("steer_rx_softirq", True) is False:
        raise SweepError("key 'dut': a DUT layout steers the DUT's softirq to its own core; "
                         "remove steer_rx_softirq = false or the dut key")
    return Sweep(
        message_sizes=message_sizes(doc.get("message_sizes", [])),
        bidirectional=_bidirectional(doc.get("bidirectional", False)),
        dut=dut,
    )


def powers_of_two(low: int, high: int) -> tuple[int, ...]:
    """Every power of two from `low` to `high`, both included (both must be powers)."""
    for name, value in (("from", low), ("to", high)):
        if not _is_power_of_two(value):
            raise SweepError(f"key 'message_sizes.{name}': {value!r} is not a power of two; "
                             f"use e.g. 64 or 262144")
    if low > high:
        raise SweepError(f"key 'message_sizes': from = {low} is above to = {high}; swap them")
    sizes = []
    size = low
    while size <= high:
        sizes.append(size)
        size *= 2
    return tuple(sizes)


def message_sizes(value: Any) -> tuple[int, ...]:
    """A list of sizes, or a {from, to} range of powers of two; checked and in order."""
    if isinstance(value, Mapping):
        unknown = set(value) - {"from", "to"}
        if unknown or not {"from", "to"} <= set(value):
            raise SweepError("key 'message_sizes': a range is { from = 64, to = 262144 } "
                             "(powers of two, both included)")
        sizes = powers_of_two(_size(value["from"]), _size(value["to"]))
    elif isinstance(value, list):
        sizes = tuple(_size(v) for v in value)
        if len(set(sizes)) != len(sizes):
            raise SweepError(f"key 'message_sizes': {value!r} lists a size twice; list each once")
    else:
        raise SweepError(f"key 'message_sizes': {value!r} must be a list of byte counts "
                         "or { from = 64, to = 262144 }")
    return sizes


def expand_traffic(specs: Iterable[TrafficSpec], sweep: Sweep) -> list[TrafficSpec]:
    """Each workload × message size (TCP only) × direction, sizes ascending outermost,
    so a report lists a curve's points in order."""
    out: list[TrafficSpec] = []
    for spec in specs:
        sizes: tuple[int | None, ...] = sweep.message_sizes or (None,)
        if spec.protocol != "tcp":
            sizes = (spec.message_size,)
        for size in sizes:
            for both_ways in sweep.bidirectional:
                out.append(replace(spec, message_size=size, bidirectional=both_ways))
    return out


def expand_scenarios(scenarios: Iterable[str], sweep: Sweep,
                     known: Container[str] | None = None) -> list[str]:
    """Each scenario, or each scenario in each DUT direction (which must be `known`,
    when given: not every scenario has a DUT layout)."""
    if not sweep.dut:
        return list(scenarios)
    out = [dut_scenario(s, d) for s in scenarios for d in sweep.dut]
    for name in out:
        if known is not None and name not in known:
            raise SweepError(f"key 'dut': scenario {split_dut_scenario(name)[0]!r} has no DUT "
                             "layout; use it without the dut key, or bare/vxlan")
    return out


def dut_scenario(scenario: str, direction: str) -> str:
    if direction not in DUT_DIRECTIONS:
        raise SweepError(f"key 'dut': {direction!r} is not known; use 'rcv' and/or 'snd'")
    return f"{scenario}-dut-{direction}"


def split_dut_scenario(name: str) -> tuple[str, str] | None:
    """(base scenario, direction) of a DUT-layout scenario name, else None."""
    base, sep, direction = name.rpartition("-dut-")
    if sep and base and direction in DUT_DIRECTIONS:
        return base, direction
    return None


# --- checks ---------------------------------------------------------------------------


def _is_power_of_two(value: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0 \
        and value & (value - 1) == 0


def _size(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) \
            or not MIN_MESSAGE <= value <= MAX_MESSAGE:
        raise SweepError(f"key 'message_sizes': {value!r} must be a whole number of bytes "
                         f"from {MIN_MESSAGE} to {MAX_MESSAGE}")
    return value


def _bidirectional(value: Any) -> tuple[bool, ...]:
    if isinstance(value, bool):
        return (value,)
    if isinstance(value, list) and value and all(isinstance(v, bool) for v in value) \
            and len(set(value)) == len(value):
        return tuple(value)
    raise SweepError(f"key 'bidirectional': {value!r} must be true, false or [false, true]")


def _dut(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or len(set(map(str, value))) != len(value):
        raise SweepError(f"key 'dut': {value!r} must be a list of 'rcv' and/or 'snd', each once")
    for direction in value:
        if direction not in DUT_DIRECTIONS:
            raise SweepError(f"key 'dut': {direction!r} is not known; use 'rcv' and/or 'snd'")
    return tuple(value)
