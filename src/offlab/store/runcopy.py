"""`offlab copy RUN_ID… --store SRC --to DEST`: runs from one store into another, on
either engine (a laptop's SQLite runs into the team's PostgreSQL, and back).

Idempotent: a run DEST already holds — the same environment, status, cases, number of
samples and throughput total — is left as it is (its rows are not read back: INSERT … ON CONFLICT DO
NOTHING leaves a run written meanwhile as it is). A clash — DEST holds a *different* run
under the same id — is refused in one line and nothing is copied, for any of the runs
given: every run is checked before the first is written. Each run is written in one
transaction, so an interrupted copy leaves whole runs only, and running it again
completes it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .errors import StoreError
from .location import StoreLocation, parse
from .results import RunOutline, RunResults
from .store import Store


@dataclass(frozen=True)
class Copied:
    run_id: str
    samples: int
    already: bool
    """DEST held the run already, equal: nothing written."""

    def sentence(self, dest: StoreLocation) -> str:
        if self.already:
            return f"{self.run_id}: already in {dest.display}, equal; left as it is"
        return f"{self.run_id}: copied ({self.samples} samples) to {dest.display}"


def _samples(results: RunResults) -> int:
    return sum(len(v) for v in results.samples.values())


def _difference(a: RunOutline, b: RunOutline) -> str:
    """The first way two runs of one id differ, in words (for the clash line)."""
    if a.info != b.info:
        return "a different environment or start"
    if a.status != b.status:
        return f"status {b.status} against {a.status}"
    if a.case_keys != b.case_keys:
        return "different cases"
    if a.samples != b.samples:
        return f"{b.samples} samples against {a.samples}"
    return "different figures"


def copy_runs(run_ids: list[str], source: str | Path, dest: str | Path) -> list[Copied]:
    src_at, dest_at = parse(source), parse(dest)
    if src_at.same_as(dest_at):
        raise StoreError(f"--store and --to are the same store ({src_at.display}); name another --to")
    with Store(src_at, readonly=True) as src:
        runs = [src.load_run(run_id) for run_id in dict.fromkeys(run_ids)]
        for results in runs:
            if src.may_be_written(results.info.run_id):
                state = "is still running" if results.status == "running" else \
                    "was marked interrupted by another offlab, but its writer may still be writing it"
                raise StoreError(f"run {results.info.run_id} {state} in {src_at.display}; copy it "
                                 "when it has ended (nothing copied)")
    with Store(dest_at) as target:
        for results in runs:
            there = target.outline(results.info.run_id)
            if there is not None and not there.same_as(RunOutline.of(results)):
                raise StoreError(f"run {results.info.run_id} clashes: {dest_at.display} holds another run "
                                 f"with this id ({_difference(RunOutline.of(results), there)}); nothing copied")
        return [Copied(results.info.run_id, _samples(results), not target.import_run(results))
                for results in runs]
