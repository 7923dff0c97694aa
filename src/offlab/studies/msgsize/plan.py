"""Sweeps of the workload in a plan: message sizes and uni-/bidirectional, expanded
into the workloads of the plan's cross product (seed 001).

Plan keys (all optional):

* ``message_sizes`` — TCP write sizes (iperf3 ``-l``): a list of byte counts, or a
  range of powers of two ``{ from = 64, to = 262144 }`` (seed 001: 64 B … 256 KiB).
  UDP workloads keep their datagram size and are not multiplied by it.
* ``bidirectional`` — ``false`` (default), ``true``, or ``[false, true]`` for both.

Pure functions; mistakes raise `SweepError` with the key and the fix, which the plan
loader prefixes with the file name.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Iterable, Mapping

from ...records import TrafficSpec

KEYS = frozenset({"message_sizes", "bidirectional"})
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


def parse(doc: Mapping[str, Any]) -> Sweep:
    """The sweep keys of a plan document (other keys are the plan loader's business)."""
    return Sweep(
        message_sizes=message_sizes(doc.get("message_sizes", [])),
        bidirectional=_bidirectional(doc.get("bidirectional", False)),
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
