"""The studies wing: each of the seed reports' test plans, in one folder that owns its
plan keys and its expansion into cases; its tables and charts are in the report wing
under the same name (report/studies/<name>.py), which reads these folders' plan
constants. The pipeline (plan, runner, store, stats) knows no study by name: it walks
`registered()` in order and asks each the same questions.

May import: topology, vm and hosts (a study's topologies and offload names) and the
ground floor (records). Never report, store or run: the report reads studies, and
studies know nothing of reports.

A plan is expanded in three steps, each study taking its turn in every step:

1. scenarios — the plan's `scenarios` as `Variant`s (scenario + topology parameters
   + a label); a study may replace or multiply them (middlebox paths, DUT directions);
2. profiles — per variant, each study adds its offload profiles (`Profile`: an
   ethtool profile, the study's parameters, a datapath setting);
3. traffic — the workloads, which a study may multiply (message sizes, directions);

then every variant × MTU × workload × profile becomes a `CaseSpec`, which each study
may `finish` (e.g. derive the forwarder's setting from a router and a combination).
"""

from __future__ import annotations

from .base import Study
from .dut import DutLayoutStudy
from .guests import GuestsStudy
from .middlebox import MiddleboxStudy
from .msgsize import MessageSizeStudy
from .offloads import OffloadsStudy
from .userspace import UserspaceStudy


def registered() -> tuple[Study, ...]:
    """Every study, in the order it takes its turn (the plan's case order follows)."""
    return (OffloadsStudy(), MessageSizeStudy(), DutLayoutStudy(), MiddleboxStudy(), UserspaceStudy(),
            GuestsStudy())
