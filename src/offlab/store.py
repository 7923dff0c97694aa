"""The results store: SQLite, one row per sample, committed the moment it exists.

A run killed half-way keeps every repetition measured before the kill; a report can
be written from it later. The database carries its format version in ``meta``: a
newer version than this code knows is refused with a one-line error, an older one is
upgraded in place by the migrations below.

Tables: ``run`` (environment, and the run settings as JSON), ``"case"`` (plan cells,
in plan order, with their topology and study parameters and datapath setting as
JSON), ``sample`` (one per repetition), ``sample_cpu`` (sample × core × class),
``sample_offload`` (sample × layer × interface × feature; layer "ethtool" or
"datapath"), ``sample_counter`` (sample × name), ``sample_interval`` (the receiver's rate per
report interval), ``sample_probe`` (a capacity search's trials), ``case_adaptive`` (how a case's
adaptive repetitions ended, see adaptive.py). Format 1 stores are upgraded by
migrations.py.

``case_adaptive`` and ``run_stack`` (each host's network stack configuration per
topology, stackconfig.py) were added without a format bump on purpose: they are created
on open when missing (so older stores gain them), a read-only opening of a store without
them reads them as empty, and older offlab versions never read them, so stores stay
readable both ways.
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from . import codec
from .adaptive import AdaptiveOutcome
from .migrations import MIGRATIONS
from .records import (
    RESULTS_FORMAT_VERSION,
    CaseSpec,
    CpuShare,
    FeatureState,
    Interval,
    OffloadProfile,
    RateProbe,
    RunInfo,
    Sample,
)

RUN_STATUSES = ("running", "complete", "interrupted", "failed")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS run (
    id TEXT PRIMARY KEY, plan TEXT NOT NULL, started_at REAL NOT NULL,
    finished_at REAL, status TEXT NOT NULL, command_line TEXT NOT NULL,
    kernel TEXT NOT NULL, cpu_model TEXT NOT NULL, cores INTEGER NOT NULL,
    host TEXT NOT NULL, notes TEXT NOT NULL, tool_versions TEXT NOT NULL,
    settings TEXT NOT NULL DEFAULT '{}', host_facts TEXT NOT NULL DEFAULT '{}'
);
CREATE TABLE IF NOT EXISTS "case" (
    run_id TEXT NOT NULL REFERENCES run(id), key TEXT NOT NULL,
    position INTEGER NOT NULL, scenario TEXT NOT NULL, mtu INTEGER NOT NULL,
    profile_name TEXT NOT NULL, profile_side TEXT NOT NULL,
    profile_features TEXT NOT NULL, traffic TEXT NOT NULL,
    topology TEXT NOT NULL DEFAULT '{}', params TEXT NOT NULL DEFAULT '{}',
    datapath TEXT, label TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (run_id, key)
);
CREATE TABLE IF NOT EXISTS sample (
    id INTEGER PRIMARY KEY, run_id TEXT NOT NULL, case_key TEXT NOT NULL,
    repetition INTEGER NOT NULL, started_at REAL NOT NULL, duration_s REAL NOT NULL,
    throughput_bps REAL NOT NULL, sender_bps REAL NOT NULL, retransmits INTEGER,
    lost_packets INTEGER, total_packets INTEGER, roles TEXT NOT NULL,
    role_hosts TEXT NOT NULL DEFAULT '{}',
    UNIQUE (run_id, case_key, repetition),
    FOREIGN KEY (run_id, case_key) REFERENCES "case"(run_id, key)
);
CREATE TABLE IF NOT EXISTS sample_cpu (
    sample_id INTEGER NOT NULL REFERENCES sample(id), ordinal INTEGER NOT NULL,
    core INTEGER NOT NULL, class TEXT NOT NULL, percent REAL NOT NULL,
    host TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (sample_id, ordinal, class)
);
CREATE TABLE IF NOT EXISTS sample_offload (
    sample_id INTEGER NOT NULL REFERENCES sample(id), iface TEXT NOT NULL,
    feature TEXT NOT NULL, is_on INTEGER NOT NULL, is_fixed INTEGER NOT NULL,
    requested INTEGER, layer TEXT NOT NULL DEFAULT 'ethtool',
    PRIMARY KEY (sample_id, layer, iface, feature)
);
CREATE TABLE IF NOT EXISTS sample_counter (
    sample_id INTEGER NOT NULL REFERENCES sample(id), name TEXT NOT NULL,
    value NOT NULL,
    PRIMARY KEY (sample_id, name)
);
CREATE TABLE IF NOT EXISTS sample_interval (
    sample_id INTEGER NOT NULL REFERENCES sample(id), ordinal INTEGER NOT NULL,
    start_s REAL NOT NULL, end_s REAL NOT NULL, bps REAL NOT NULL, warmup INTEGER NOT NULL,
    PRIMARY KEY (sample_id, ordinal)
);
CREATE TABLE IF NOT EXISTS sample_probe (
    sample_id INTEGER NOT NULL REFERENCES sample(id), ordinal INTEGER NOT NULL,
    offered_bps REAL NOT NULL, sent_bps REAL NOT NULL, received_bps REAL NOT NULL,
    loss_percent REAL NOT NULL,
    PRIMARY KEY (sample_id, ordinal)
);
CREATE TABLE IF NOT EXISTS run_stack (
    run_id TEXT NOT NULL REFERENCES run(id), place TEXT NOT NULL, host TEXT NOT NULL,
    key TEXT NOT NULL, value TEXT NOT NULL,
    PRIMARY KEY (run_id, place, host, key)
);
CREATE TABLE IF NOT EXISTS case_adaptive (
    run_id TEXT NOT NULL, case_key TEXT NOT NULL, target REAL NOT NULL,
    min_runs INTEGER NOT NULL, max_runs INTEGER NOT NULL, runs INTEGER NOT NULL,
    half_width REAL, reached INTEGER NOT NULL,
    PRIMARY KEY (run_id, case_key),
    FOREIGN KEY (run_id, case_key) REFERENCES "case"(run_id, key)
);
"""

LAYERS = ("ethtool", "datapath")
"""sample_offload.layer: an ethtool feature of an interface, or a setting of the
userspace datapath in force (Sample.offloads and Sample.datapath)."""


class StoreError(Exception):
    """A results store that cannot be used (newer format, unknown run, bad status)."""


@dataclass(frozen=True)
class RunSummary:
    id: str
    plan: str
    started: float
    status: str
    cases: int
    samples: int


@dataclass(frozen=True)
class RunResults:
    """Everything stored for one run, ready for statistics and reports."""

    info: RunInfo
    status: str
    cases: tuple[CaseSpec, ...]
    """In plan order (the order the runner first added them)."""
    samples: Mapping[str, tuple[Sample, ...]]
    """case key → samples in repetition order; every case has an entry."""
    finished_at: float | None = None
    adaptive: Mapping[str, AdaptiveOutcome] = field(default_factory=dict)
    """case key → how its adaptive repetitions ended (empty for fixed-count runs)."""
    stack: Mapping[str, Mapping[str, Mapping[str, str]]] = field(default_factory=dict)
    """place ("bare · MTU 1500") → host → stack setting → value (stackconfig.py)."""


class Store:
    """A results database. ``Store(path)`` creates it (and its directory) if needed."""

    def __init__(self, path: str | Path, *, readonly: bool = False):
        """`readonly`: open an existing store for reading only (list, report, export,
        compare): it may belong to another user or sit on a read-only mount, and
        reading it must never create or change anything."""
        self.path = Path(path)
        self.readonly = readonly
        try:
            if readonly:
                if not self.path.is_file():
                    raise StoreError(f"{self.path}: no such store; pass --store with a results "
                                     "file, or start a run with: offlab run")
                self.path.open("rb").close()  # the permission error, as one line, before SQLite's
                self._conn = sqlite3.connect(f"file:{self.path.resolve()}?mode=ro", uri=True)
            else:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._conn = sqlite3.connect(self.path)
        except OSError as err:
            raise StoreError(f"{self.path}: cannot open the store ({err.strerror}); pass --store "
                             "with a file you can read") from None
        try:
            self._conn.execute("PRAGMA foreign_keys = ON")
            if not readonly:
                self._conn.execute("PRAGMA journal_mode = WAL")
            self._open_schema()
        except sqlite3.DatabaseError as err:
            self._conn.close()
            raise StoreError(f"{self.path}: not a usable offlab store ({err}); pass --store "
                             "with a results .sqlite, or move this file away") from None

    def close(self) -> None:
        if not self.readonly:
            # WAL lets reports read while a run writes; a closed store goes back to a
            # rollback journal so that read-only openers (another user, a read-only
            # mount) need no -wal/-shm files beside it and create none.
            try:
                self._conn.execute("PRAGMA journal_mode = DELETE")
            except sqlite3.OperationalError:
                pass  # another connection still has it open: it stays in WAL for now
        self._conn.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _open_schema(self) -> None:
        if self.readonly:
            self._check_readonly_version()
            return
        with self._conn:
            self._conn.execute(
                "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
            )
            row = self._conn.execute(
                "SELECT value FROM meta WHERE key = 'format_version'"
            ).fetchone()
        version = int(row[0]) if row else RESULTS_FORMAT_VERSION
        if version > RESULTS_FORMAT_VERSION:
            self._conn.close()
            raise StoreError(
                f"{self.path}: results format {version} is newer than this offlab reads "
                f"({RESULTS_FORMAT_VERSION}); upgrade offlab"
            )
        while version < RESULTS_FORMAT_VERSION:
            step = MIGRATIONS.get(version)
            if step is None:
                self._conn.close()
                raise StoreError(f"{self.path}: no upgrade from results format {version}")
            with self._conn:  # one transaction: a failed step leaves the store as it was
                self._conn.execute("BEGIN")
                step(self._conn)
                version += 1
                self._set_version(version)
        with self._conn:
            self._conn.executescript(_SCHEMA)
            self._set_version(version)

    def _check_readonly_version(self) -> None:
        row = self._conn.execute("SELECT value FROM meta WHERE key = 'format_version'").fetchone()
        version = int(row[0]) if row else None
        if version is None:
            raise StoreError(f"{self.path}: not an offlab store (no format version); pass --store "
                             "with a results .sqlite")
        if version > RESULTS_FORMAT_VERSION:
            raise StoreError(f"{self.path}: results format {version} is newer than this offlab "
                             f"reads ({RESULTS_FORMAT_VERSION}); upgrade offlab")
        if version < RESULTS_FORMAT_VERSION:
            raise StoreError(f"{self.path}: results format {version} needs an upgrade this "
                             "read-only opening cannot write; open it once as its owner "
                             "(e.g. offlab list as root), or copy it and pass --store")

    def _set_version(self, version: int) -> None:
        self._conn.execute(
            "INSERT OR REPLACE INTO meta (key, value) VALUES ('format_version', ?)",
            (str(version),),
        )

    # --- writing -------------------------------------------------------------------

    def begin_run(self, info: RunInfo) -> str:
        """Record a new run (status "running") and return its id."""
        try:
            with self._conn:
                self._conn.execute(
                    "INSERT INTO run (id, plan, started_at, finished_at, status, command_line,"
                    " kernel, cpu_model, cores, host, notes, tool_versions, settings, host_facts)"
                    " VALUES (?, ?, ?, NULL, 'running', ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        info.run_id, info.plan, info.started_at, info.command_line,
                        info.kernel, info.cpu_model, info.cores, info.host, info.notes,
                        json.dumps(dict(info.tool_versions)), codec.settings_to_json(info.settings),
                        json.dumps({k: dict(v) for k, v in info.host_facts.items()}),
                    ),
                )
        except sqlite3.IntegrityError as err:
            raise StoreError(f"run {info.run_id!r} already exists in {self.path}") from err
        return info.run_id

    def add_case(self, run_id: str, case: CaseSpec) -> None:
        """Record a plan cell; adding the same case twice is a no-op."""
        with self._conn:
            self._insert_case(run_id, case)

    def _insert_case(self, run_id: str, case: CaseSpec) -> None:
        self._require_run(run_id)
        (position,) = self._conn.execute(
            'SELECT COUNT(*) FROM "case" WHERE run_id = ?', (run_id,)
        ).fetchone()
        self._conn.execute(
            'INSERT OR IGNORE INTO "case" (run_id, key, position, scenario, mtu, profile_name,'
            " profile_side, profile_features, traffic, topology, params, datapath, label)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                run_id, case.key, position, case.scenario, case.mtu, case.profile.name,
                case.profile.side, json.dumps(dict(case.profile.features)),
                codec.traffic_to_json(case.traffic), codec.params_to_json(case.topology),
                codec.params_to_json(case.params), codec.datapath_to_json(case.datapath), case.label,
            ),
        )

    def add_sample(self, run_id: str, case: CaseSpec, sample: Sample) -> None:
        """Store one repetition and commit at once."""
        if sample.case_key != case.key:
            raise StoreError(f"sample for {sample.case_key!r} given with case {case.key!r}")
        try:
            with self._conn:
                self._insert_sample(run_id, case, sample)
        except sqlite3.IntegrityError as err:
            raise StoreError(
                f"repetition {sample.repetition} of {case.key} is already stored in run {run_id}"
            ) from err

    def _insert_sample(self, run_id: str, case: CaseSpec, sample: Sample) -> None:
        self._insert_case(run_id, case)
        cur = self._conn.execute(
            "INSERT INTO sample (run_id, case_key, repetition, started_at, duration_s,"
            " throughput_bps, sender_bps, retransmits, lost_packets, total_packets, roles, role_hosts)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                run_id, sample.case_key, sample.repetition, sample.started_at,
                sample.duration_s, sample.throughput_bps, sample.sender_bps,
                sample.retransmits, sample.lost_packets, sample.total_packets,
                json.dumps(dict(sample.roles)), json.dumps(dict(sample.role_hosts)),
            ),
        )
        self._insert_sample_details(cur.lastrowid, sample)

    def _insert_sample_details(self, sample_id: int | None, sample: Sample) -> None:
        self._conn.executemany(
            "INSERT INTO sample_cpu (sample_id, ordinal, core, class, percent, host) VALUES (?, ?, ?, ?, ?, ?)",
            [
                (sample_id, ordinal, share.core, cls, pct, share.host)
                for ordinal, share in enumerate(sample.cpu)
                for cls, pct in share.percent.items()
            ],
        )
        self._conn.executemany(
            "INSERT INTO sample_offload (sample_id, iface, feature, is_on, is_fixed, requested, layer)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                (sample_id, iface, feature, st.on, st.fixed, st.requested, layer)
                for layer, states in zip(LAYERS, (sample.offloads, sample.datapath))
                for iface, features in states.items()
                for feature, st in features.items()
            ],
        )
        self._conn.executemany(
            "INSERT INTO sample_counter VALUES (?, ?, ?)",
            [(sample_id, name, value) for name, value in sample.counters.items()],
        )
        self._conn.executemany(
            "INSERT INTO sample_interval VALUES (?, ?, ?, ?, ?, ?)",
            [(sample_id, n, i.start_s, i.end_s, i.bps, i.warmup) for n, i in enumerate(sample.intervals)],
        )
        self._conn.executemany(
            "INSERT INTO sample_probe VALUES (?, ?, ?, ?, ?, ?)",
            [(sample_id, n, p.offered_bps, p.sent_bps, p.received_bps, p.loss_percent)
             for n, p in enumerate(sample.probes)],
        )

    def record_adaptive(self, run_id: str, outcome: AdaptiveOutcome) -> None:
        """Store (or replace, on resume) how a case's adaptive repetitions ended."""
        with self._conn:
            self._conn.execute(
                "INSERT OR REPLACE INTO case_adaptive VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (run_id, outcome.case_key, outcome.target, outcome.min_runs,
                 outcome.max_runs, outcome.runs, outcome.half_width, outcome.reached),
            )

    def record_stack(self, run_id: str, place: str, host: str, config: Mapping[str, str]) -> None:
        """Store (or replace, on resume) one host's stack configuration for a topology."""
        with self._conn:
            self._conn.executemany(
                "INSERT OR REPLACE INTO run_stack VALUES (?, ?, ?, ?, ?)",
                [(run_id, place, host, key, value) for key, value in config.items()],
            )

    def finish_run(self, run_id: str, status: str, finished_at: float | None = None) -> None:
        """Mark a run "complete", "interrupted" or "failed"."""
        if status not in RUN_STATUSES[1:]:
            raise StoreError(f"unknown run status {status!r} (want one of {RUN_STATUSES[1:]})")
        self._require_run(run_id)
        with self._conn:
            self._conn.execute(
                "UPDATE run SET status = ?, finished_at = ? WHERE id = ?",
                (status, time.time() if finished_at is None else finished_at, run_id),
            )

    def close_killed_runs(self) -> list[str]:
        """Mark runs still "running" as "interrupted" (their offlab was killed: call this
        holding the machine lock, when no run can be live); their ids."""
        rows = self._conn.execute("SELECT id FROM run WHERE status = 'running'").fetchall()
        with self._conn:
            self._conn.execute("UPDATE run SET status = 'interrupted' WHERE status = 'running'")
        return [row[0] for row in rows]

    def _require_run(self, run_id: str) -> None:
        if not self._conn.execute("SELECT 1 FROM run WHERE id = ?", (run_id,)).fetchone():
            raise StoreError(f"no run {run_id!r} in {self.path}")

    # --- reading -------------------------------------------------------------------

    def runs(self) -> list[RunSummary]:
        """Every run, oldest first, with how many cases and samples it holds."""
        rows = self._conn.execute(
            "SELECT r.id, r.plan, r.started_at, r.status,"
            ' (SELECT COUNT(*) FROM "case" c WHERE c.run_id = r.id),'
            " (SELECT COUNT(*) FROM sample s WHERE s.run_id = r.id)"
            " FROM run r ORDER BY r.started_at, r.id"
        ).fetchall()
        return [RunSummary(*row) for row in rows]

    def latest_run_id(self) -> str | None:
        row = self._conn.execute(
            "SELECT id FROM run ORDER BY started_at DESC, rowid DESC LIMIT 1"
        ).fetchone()
        return row[0] if row else None

    def completed_counts(self, run_id: str) -> dict[str, int]:
        """case key → samples stored (cases with none are included with 0)."""
        self._require_run(run_id)
        rows = self._conn.execute(
            'SELECT c.key, COUNT(s.id) FROM "case" c LEFT JOIN sample s'
            " ON s.run_id = c.run_id AND s.case_key = c.key"
            " WHERE c.run_id = ? GROUP BY c.key ORDER BY c.position",
            (run_id,),
        ).fetchall()
        return {key: count for key, count in rows}

    def load_run(self, run_id: str) -> RunResults:
        row = self._conn.execute(
            "SELECT id, plan, started_at, command_line, kernel, cpu_model, cores,"
            " tool_versions, host, notes, status, finished_at, settings, host_facts FROM run WHERE id = ?",
            (run_id,),
        ).fetchone()
        if row is None:
            raise StoreError(f"no run {run_id!r} in {self.path}")
        info = RunInfo(
            run_id=row[0], plan=row[1], started_at=row[2], command_line=row[3],
            kernel=row[4], cpu_model=row[5], cores=row[6],
            tool_versions=json.loads(row[7]), host=row[8], notes=row[9],
            settings=codec.settings_from_json(row[12]), host_facts=json.loads(row[13]),
        )
        cases = self._load_cases(run_id)
        samples: dict[str, tuple[Sample, ...]] = {c.key: () for c in cases}
        for sample in self._load_samples(run_id):
            samples[sample.case_key] = samples.get(sample.case_key, ()) + (sample,)
        return RunResults(info, row[10], tuple(cases), samples, row[11],
                          self._load_adaptive(run_id), self._load_stack(run_id))

    def _load_stack(self, run_id: str) -> dict[str, dict[str, dict[str, str]]]:
        if not self._conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'run_stack'").fetchone():
            return {}  # an older store opened read-only
        found: dict[str, dict[str, dict[str, str]]] = {}
        for place, host, key, value in self._conn.execute(
                "SELECT place, host, key, value FROM run_stack WHERE run_id = ? ORDER BY rowid", (run_id,)):
            found.setdefault(place, {}).setdefault(host, {})[key] = value
        return found

    def _load_adaptive(self, run_id: str) -> dict[str, AdaptiveOutcome]:
        rows = self._conn.execute(
            "SELECT case_key, target, min_runs, max_runs, runs, half_width, reached"
            " FROM case_adaptive WHERE run_id = ? ORDER BY rowid",
            (run_id,),
        ).fetchall()
        return {r[0]: AdaptiveOutcome(r[0], r[1], r[2], r[3], r[4], r[5], bool(r[6])) for r in rows}

    def _load_cases(self, run_id: str) -> list[CaseSpec]:
        rows = self._conn.execute(
            'SELECT scenario, mtu, profile_name, profile_side, profile_features, traffic,'
            ' topology, params, datapath, label FROM "case" WHERE run_id = ? ORDER BY position',
            (run_id,),
        ).fetchall()
        return [
            CaseSpec(
                scenario=scenario,
                mtu=mtu,
                profile=OffloadProfile(name, side, json.loads(features)),
                traffic=codec.traffic_from_json(traffic),
                topology=codec.params_from_json(topology),
                params=codec.params_from_json(params),
                datapath=codec.datapath_from_json(datapath),
                label=label,
            )
            for scenario, mtu, name, side, features, traffic, topology, params, datapath, label in rows
        ]

    def _load_samples(self, run_id: str) -> list[Sample]:
        rows = self._conn.execute(
            "SELECT id, case_key, repetition, started_at, duration_s, throughput_bps,"
            " sender_bps, retransmits, lost_packets, total_packets, roles, role_hosts"
            " FROM sample WHERE run_id = ? ORDER BY case_key, repetition",
            (run_id,),
        ).fetchall()
        return [self._rebuild_sample(row) for row in rows]

    def _rebuild_sample(self, row: tuple[Any, ...]) -> Sample:
        sample_id = row[0]
        return Sample(
            case_key=row[1], repetition=row[2], started_at=row[3], duration_s=row[4],
            throughput_bps=row[5], sender_bps=row[6], retransmits=row[7],
            lost_packets=row[8], total_packets=row[9],
            cpu=self._load_cpu(sample_id), roles=json.loads(row[10]), role_hosts=json.loads(row[11]),
            offloads=self._load_offloads(sample_id, "ethtool"),
            datapath=self._load_offloads(sample_id, "datapath"),
            intervals=tuple(Interval(a, b, c, bool(d)) for a, b, c, d in self._conn.execute(
                "SELECT start_s, end_s, bps, warmup FROM sample_interval WHERE sample_id = ?"
                " ORDER BY ordinal", (sample_id,)).fetchall()),
            probes=tuple(RateProbe(*row) for row in self._conn.execute(
                "SELECT offered_bps, sent_bps, received_bps, loss_percent FROM sample_probe"
                " WHERE sample_id = ? ORDER BY ordinal", (sample_id,)).fetchall()),
            counters=dict(self._conn.execute(
                "SELECT name, value FROM sample_counter WHERE sample_id = ? ORDER BY rowid",
                (sample_id,),
            ).fetchall()),
        )

    def _load_cpu(self, sample_id: int) -> tuple[CpuShare, ...]:
        rows = self._conn.execute(
            "SELECT ordinal, core, class, percent, host FROM sample_cpu WHERE sample_id = ?"
            " ORDER BY ordinal, rowid",
            (sample_id,),
        ).fetchall()
        shares: dict[int, tuple[int, str, dict[str, float]]] = {}
        for ordinal, core, cls, pct, host in rows:
            shares.setdefault(ordinal, (core, host, {}))[2][cls] = pct
        return tuple(CpuShare(core, pct, host) for core, host, pct in shares.values())

    def _load_offloads(self, sample_id: int, layer: str) -> dict[str, dict[str, FeatureState]]:
        rows = self._conn.execute(
            "SELECT iface, feature, is_on, is_fixed, requested FROM sample_offload"
            " WHERE sample_id = ? AND layer = ? ORDER BY rowid",
            (sample_id, layer),
        ).fetchall()
        offloads: dict[str, dict[str, FeatureState]] = {}
        for iface, feature, on, fixed, requested in rows:
            offloads.setdefault(iface, {})[feature] = FeatureState(
                bool(on), bool(fixed), None if requested is None else bool(requested)
            )
        return offloads
