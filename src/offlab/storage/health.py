"""`offlab doctor --store`: whether a store can be reached and read by this offlab, and
`--upgrade-store` to bring an older schema to this offlab's revision (reading commands
never upgrade a store themselves)."""

from __future__ import annotations

from ..doctor import Check
from .errors import StoreError
from .location import StoreLocation
from .schema import head_revision


def check_store(location: StoreLocation, upgrade: bool) -> list[Check]:
    from ..store import Store  # the store module imports this package
    fix = ""
    try:
        if upgrade:
            Store(location).close()
        with Store(location, readonly=True) as store:
            runs = store.runs()
    except StoreError as failure:
        detail = str(failure)
        if "needs an upgrade" in detail:
            fix = f"offlab doctor --store {location.display} --upgrade-store"
        return [Check("store", False, detail.removeprefix(f"{location.display}: "), fix)]
    running = sum(1 for r in runs if r.status == "running")
    return [Check("store", True, f"{location.dialect} at {location.display}, schema revision "
                  f"{head_revision()}: {len(runs)} runs ({running} running)")]
