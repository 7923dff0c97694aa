"""Nested profiles give one finding, not two.

A profile whose recorded state in force also turned off another profile's features
(tx checksumming off takes TSO with it: the kernel's feature dependency) measures those
features too. Its effect and the other profile's are then one finding, which names
every feature involved — "keep TSO and Tx checksumming on" — and quotes both
comparisons, instead of two lines of advice that count the same thing twice.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

from .effects import Effect, Step, turned_off


def nests(inner: "Step", outer: "Step") -> bool:
    """The outer step turned off everything the inner one did, and more, from the same
    profile (both measured against one reference in one group)."""
    return (inner.group is outer.group and inner.on_row is outer.on_row
            and bool(turned_off(inner)) and turned_off(inner) < turned_off(outer))


def merge_nested(effects: Sequence["Effect"]) -> list["Effect"]:
    """The effects with each nested set folded into one: the effect of the step that
    turned off least carries the others (`Effect.nested`), in the given order."""
    clusters: list[list["Effect"]] = []
    for effect in effects:
        joined = [c for c in clusters if any(_related(effect, other) for other in c)]
        clusters = [c for c in clusters if all(c is not j for j in joined)]
        clusters.append([effect] + [e for c in joined for e in c])
    order = {id(e): i for i, e in enumerate(effects)}
    out = []
    for cluster in sorted(clusters, key=lambda c: min(order[id(e)] for e in c)):
        primary = min(cluster, key=lambda e: (len(turned_off(e.step)), order[id(e)]))
        others = tuple(sorted((e for e in cluster if e is not primary), key=lambda e: order[id(e)]))
        out.append(dataclasses.replace(primary, nested=others) if others else primary)
    return out


def _related(a: "Effect", b: "Effect") -> bool:
    return (a.metric == b.metric and a.better_on == b.better_on
            and (nests(a.step, b.step) or nests(b.step, a.step)))
