#!/usr/bin/env python3
"""What a plan runs of the project's own builds, one a line: `offlab-fwd`, `offlab-udpload`,
`guest`. `make demo` reads it to build and install only what its plan runs (the engine
checks' toolchains and the guest are `make test`'s).

Usage: scripts/plan-needs.py PLAN   (a plan name or a .toml file, as `offlab run --plan`)"""

from __future__ import annotations

import sys

from offlab.run.plan import PlanError, load
from offlab.run.preflight import needs


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: scripts/plan-needs.py PLAN (a plan name or a .toml file)", file=sys.stderr)
        return 2
    try:
        plan = load(argv[1])
    except PlanError as err:
        print(f"scripts/plan-needs.py: {err}", file=sys.stderr)
        return 2
    for name in sorted(needs(plan.cases)):
        print(name)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
