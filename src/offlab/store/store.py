"""The results store: one row per sample, committed the moment it exists, in a SQLite
file (the default) or a team's PostgreSQL database (a URL).

A run killed half-way keeps every repetition measured before the kill; a report can
be written from it later. SQLAlchemy Core speaks both engines from one description of
the tables (storage/tables.py); one Alembic history creates and upgrades both
(storage/schema.py); stores of the hand-written releases are upgraded in place.

Tables: ``run`` (environment, the run settings as JSON, its writer), ``"case"`` (plan
cells, in plan order, with their topology and study parameters and datapath setting as
JSON), ``sample`` (one per repetition), ``sample_cpu`` (sample × core × class),
``sample_offload`` (sample × layer × interface × feature; layer "ethtool" or
"datapath"), ``sample_counter`` (sample × name), ``sample_interval`` (the receiver's rate per
report interval), ``sample_probe`` (a capacity search's trials), ``case_adaptive`` (how a case's
adaptive repetitions ended, see adaptive.py), ``run_campaign`` (the campaign and pair of a
run, see campaign.py), ``run_stack`` (each host's network stack configuration per topology,
see stackconfig.py).

Many writers: run ids are unique across machines (runflow.new_run_id, and the primary
key refuses a clash), sample ids come from the database, every write is one short
transaction and no write locks more than the rows it adds.
"""

from __future__ import annotations

import sqlite3
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from sqlalchemy import func, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError, IntegrityError

from . import codec
from ..analysis.adaptive import AdaptiveOutcome
from ..records import CaseSpec, RunInfo, Sample
from . import location as locations
from . import retry, schema, writer
from .errors import StoreError
from .masking import mask_command_line
from .location import StoreLocation
from .reading import aggregate_runs, load_run, load_runs
from .results import RunAggregates, RunOutline, RunResults, RunSummary
from .tables import (case_adaptive, run, run_campaign, run_stack, sample, sample_counter, sample_cpu,
                     sample_interval, sample_offload, sample_probe)
from .tables import case as case_table

__all__ = ["Store", "StoreError", "RunAggregates", "RunResults", "RunSummary", "StoreLocation", "RUN_STATUSES",
           "LAYERS"]

RUN_STATUSES = ("running", "complete", "interrupted", "failed")

HISTORY_BATCH = 100
"""Runs a history reads per round of queries."""

LAYERS = ("ethtool", "datapath")
"""sample_offload.layer: an ethtool feature of an interface, or a setting of the
userspace datapath in force (Sample.offloads and Sample.datapath)."""


class Store:
    """A results database. ``Store(path_or_url)`` creates a SQLite file (and its
    directory) if needed, or uses a PostgreSQL database that exists."""

    def __init__(self, where: str | Path | StoreLocation, *, readonly: bool = False):
        """`readonly`: open an existing store for reading only (list, report, export,
        compare): it may belong to another user or sit on a read-only mount, and
        reading it must never create or change anything."""
        self.location = locations.parse(where)
        self.readonly = readonly
        self.path = self.location.display
        if self.location.path is not None:
            self._check_file()
        self._engine = locations.make_engine(self.location, readonly)
        self._snapshot: Connection | None = None
        self._cases_known: set[tuple[str, str]] = set()
        """(run, case) this store has added: a sample's case is added once, not per sample."""
        try:
            if readonly and self.location.dialect == "postgresql":
                # Every read of this command in one REPEATABLE READ transaction: one
                # snapshot, however many runs are written meanwhile.
                self._snapshot = self._engine.connect()
                schema.check_readable(self._snapshot, self.location)
            elif readonly:
                with self._engine.connect() as connection:
                    schema.check_readable(connection, self.location)
            else:
                schema.open_for_writing(self._engine, self.location)
        except StoreError:
            self._release()
            raise
        except (DBAPIError, sqlite3.DatabaseError) as failure:
            self._release()
            raise locations.connect_error(self.location, failure) from None

    def _release(self) -> None:
        if self._snapshot is not None:
            self._snapshot.close()
            self._snapshot = None
        self._engine.dispose()

    @contextmanager
    def _reading(self) -> Iterator[Connection]:
        """The connection reads go through: the command's snapshot, or a new one."""
        if self._snapshot is not None:
            yield self._snapshot
            return
        with self._engine.connect() as conn:
            yield conn

    def _check_file(self) -> None:
        path = self.location.path
        assert path is not None
        try:
            if self.readonly:
                if not path.is_file():
                    raise StoreError(f"{path}: no such store; pass --store with a results "
                                     "file, or start a run with: offlab run")
                path.open("rb").close()  # the permission error, as one line, before SQLite's
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise StoreError(f"{path}: cannot open the store ({err.strerror}); pass --store "
                             "with a file you can read") from None

    def close(self) -> None:
        self._release()
        if not self.readonly and self.location.path is not None:
            # WAL lets reports read while a run writes; a closed store goes back to a
            # rollback journal so that read-only openers (another user, a read-only
            # mount) need no -wal/-shm files beside it and create none.
            conn = sqlite3.connect(self.location.path, timeout=0.1)
            try:
                conn.execute("PRAGMA journal_mode = DELETE")
            except sqlite3.OperationalError:
                pass  # another connection still has it open: it stays in WAL for now
            finally:
                conn.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _upsert_ignore(self, table, values: dict[str, Any]):
        dialect = postgresql if self.location.dialect == "postgresql" else sqlite
        return dialect.insert(table).values(**values).on_conflict_do_nothing()

    # --- writing -------------------------------------------------------------------

    def begin_run(self, info: RunInfo, campaign: tuple[str, str] | None = None) -> str:
        """Record a new run (status "running") and return its id; `campaign`: the
        (campaign id, pair name) it belongs to."""
        try:
            with self._engine.begin() as conn:
                self._insert_run(conn, info, "running", None, campaign, writer.current())
        except IntegrityError as err:
            raise StoreError(f"run {info.run_id!r} already exists in {self.path}") from err
        return info.run_id

    def _insert_run(self, conn: Connection, info: RunInfo, status: str, finished_at: float | None,
                    campaign: tuple[str, str] | None, writer_doc: dict[str, object] | None, if_absent: bool = False) -> bool:
        """Insert the run's row (with `if_absent`, unless the run is there: ON CONFLICT DO
        NOTHING); whether it was inserted."""
        values = dict(
            id=info.run_id, plan=info.plan, started_at=info.started_at, finished_at=finished_at,
            status=status, command_line=mask_command_line(info.command_line), kernel=info.kernel,
            cpu_model=info.cpu_model, cores=info.cores, host=info.host, notes=info.notes,
            tool_versions=codec.mapping_to_doc(info.tool_versions),
            settings=codec.settings_to_doc(info.settings),
            host_facts={k: codec.mapping_to_doc(v) for k, v in codec.mapping_to_doc(info.host_facts).items()},
            writer=writer_doc,
        )
        if if_absent:
            if conn.execute(self._upsert_ignore(run, values).returning(run.c.id)).first() is None:
                return False
        else:
            conn.execute(run.insert().values(**values))
        if campaign is not None:
            conn.execute(run_campaign.insert().values(run_id=info.run_id, campaign=campaign[0],
                                                      pair=campaign[1]))
        return True

    def import_run(self, results: RunResults) -> bool:
        """Write a whole run read from another store, in one transaction: all of it or,
        on any failure, nothing (runcopy.py checks for clashes first). A run already
        there (INSERT … ON CONFLICT DO NOTHING: a copy running at the same time) is left
        as it is; whether this wrote it."""
        if results.status == "running":
            raise StoreError(f"run {results.info.run_id} is still running; copy it when it has ended")
        try:
            with self._engine.begin() as conn:
                if not self._insert_run(conn, results.info, results.status, results.finished_at,
                                        results.campaign, None, if_absent=True):
                    return False
                for case in results.cases:
                    self._insert_case(conn, results.info.run_id, case)
                    for one in results.samples.get(case.key, ()):
                        self._insert_sample(conn, results.info.run_id, case, one)
                for outcome in results.adaptive.values():
                    self._insert_adaptive(conn, results.info.run_id, outcome)
                self._insert_stack(conn, results.info.run_id, results.stack)
        except IntegrityError as err:
            raise StoreError(f"run {results.info.run_id!r} already exists in {self.path}") from err
        return True

    def add_case(self, run_id: str, case: CaseSpec) -> None:
        """Record a plan cell; adding the same case twice is a no-op."""
        try:
            retry.in_transaction(self._engine, lambda conn: self._insert_case(conn, run_id, case))
        except IntegrityError as err:  # the foreign key: no such run
            raise StoreError(f"no run {run_id!r} in {self.path}") from err
        self._cases_known.add((run_id, case.key))

    def _insert_case(self, conn: Connection, run_id: str, case: CaseSpec) -> None:
        """The case at the end of the run's order, unless it is there, and the run's count."""
        position = (select(func.count()).select_from(case_table)
                    .where(case_table.c.run_id == run_id).scalar_subquery())
        added = conn.execute(self._upsert_ignore(case_table, dict(
            run_id=run_id, key=case.key, position=position, scenario=case.scenario, mtu=case.mtu,
            profile_name=case.profile.name, profile_side=case.profile.side,
            profile_features=codec.mapping_to_doc(case.profile.features),
            traffic=codec.traffic_to_doc(case.traffic), topology=codec.params_to_doc(case.topology),
            params=codec.params_to_doc(case.params), datapath=codec.datapath_to_doc(case.datapath),
            label=case.label)).returning(case_table.c.key)).first()
        if added is not None:
            conn.execute(run.update().where(run.c.id == run_id).values(case_count=run.c.case_count + 1))

    def add_sample(self, run_id: str, case: CaseSpec, sample_: Sample) -> None:
        """Store one repetition and commit at once; a connection lost on the way is
        reconnected and the transaction run again (storage/retry.py)."""
        if sample_.case_key != case.key:
            raise StoreError(f"sample for {sample_.case_key!r} given with case {case.key!r}")
        if (run_id, case.key) not in self._cases_known:
            self.add_case(run_id, case)
        stored = (select(sample.c.id).where(sample.c.run_id == run_id, sample.c.case_key == case.key,
                                            sample.c.repetition == sample_.repetition))
        try:
            retry.in_transaction(self._engine, lambda conn: self._insert_sample(conn, run_id, case, sample_),
                                 done_already=lambda conn: conn.execute(stored).first() is not None)
        except IntegrityError as err:
            raise StoreError(
                f"repetition {sample_.repetition} of {case.key} is already stored in run {run_id}"
            ) from err

    def _insert_sample(self, conn: Connection, run_id: str, case: CaseSpec, s: Sample) -> None:
        from ..measure.headline import sample_headline  # a writer's import: reading commands start without it
        cpu_timed, cpu_per_gbps = sample_headline(case, s)
        result = conn.execute(sample.insert().values(
            run_id=run_id, case_key=s.case_key, repetition=s.repetition, started_at=s.started_at,
            duration_s=s.duration_s, throughput_bps=s.throughput_bps, sender_bps=s.sender_bps,
            retransmits=s.retransmits, lost_packets=s.lost_packets, total_packets=s.total_packets,
            roles=codec.mapping_to_doc(s.roles), role_hosts=codec.mapping_to_doc(s.role_hosts),
            cpu_timed=cpu_timed, cpu_per_gbps=cpu_per_gbps))
        (sample_id,) = result.inserted_primary_key
        conn.execute(run.update().where(run.c.id == run_id).values(sample_count=run.c.sample_count + 1))
        rows = {
            sample_cpu: [dict(sample_id=sample_id, ordinal=ordinal, core=share.core, percent=pct,
                              host=share.host, **{"class": cls})
                         for ordinal, share in enumerate(s.cpu) for cls, pct in share.percent.items()],
            sample_offload: [dict(sample_id=sample_id, iface=iface, feature=feature, is_on=st.on,
                                  is_fixed=st.fixed, requested=st.requested, layer=layer)
                             for layer, states in zip(LAYERS, (s.offloads, s.datapath))
                             for iface, features in states.items() for feature, st in features.items()],
            sample_counter: [dict(sample_id=sample_id, name=name, value=value)
                             for name, value in s.counters.items()],
            sample_interval: [dict(sample_id=sample_id, ordinal=n, start_s=i.start_s, end_s=i.end_s,
                                   bps=i.bps, warmup=i.warmup) for n, i in enumerate(s.intervals)],
            sample_probe: [dict(sample_id=sample_id, ordinal=n, offered_bps=p.offered_bps,
                                sent_bps=p.sent_bps, received_bps=p.received_bps,
                                loss_percent=p.loss_percent) for n, p in enumerate(s.probes)],
        }
        for table, values in rows.items():
            if "seq" in table.c:  # the measured order, which reports keep
                values = [dict(row, seq=n) for n, row in enumerate(values)]
            if values:
                conn.execute(table.insert(), values)

    def record_adaptive(self, run_id: str, outcome: AdaptiveOutcome) -> None:
        """Store (or replace, on resume) how a case's adaptive repetitions ended."""
        key = (case_adaptive.c.run_id == run_id) & (case_adaptive.c.case_key == outcome.case_key)

        def replace(conn: Connection) -> None:
            conn.execute(case_adaptive.delete().where(key))
            self._insert_adaptive(conn, run_id, outcome)
        retry.in_transaction(self._engine, replace)

    @staticmethod
    def _insert_adaptive(conn: Connection, run_id: str, outcome: AdaptiveOutcome) -> None:
        conn.execute(case_adaptive.insert().values(
            run_id=run_id, case_key=outcome.case_key, target=outcome.target,
            min_runs=outcome.min_runs, max_runs=outcome.max_runs, runs=outcome.runs,
            half_width=outcome.half_width, reached=outcome.reached))

    def record_stack(self, run_id: str, place: str, host: str, config: Mapping[str, str]) -> None:
        """Store (or replace, on resume) one host's stack configuration for a topology."""
        key = ((run_stack.c.run_id == run_id) & (run_stack.c.place == place)
               & (run_stack.c.host == host))

        def replace(conn: Connection) -> None:
            self._require_run(conn, run_id)
            conn.execute(run_stack.delete().where(key))
            self._insert_stack(conn, run_id, {place: {host: config}})
        retry.in_transaction(self._engine, replace)

    @staticmethod
    def _insert_stack(conn: Connection, run_id: str,
                      stack: Mapping[str, Mapping[str, Mapping[str, str]]]) -> None:
        rows = [dict(run_id=run_id, place=place, host=host, key=k, value=v)
                for place, hosts in stack.items() for host, config in hosts.items()
                for k, v in config.items()]
        if rows:
            # seq after the run's last keeps the reading order on both engines; the run's
            # row locked (PostgreSQL; SQLite's writer holds the file) so that two hosts
            # recording at once draw distinct ones (unique per run)
            conn.execute(select(run.c.id).where(run.c.id == run_id).with_for_update())
            first = conn.execute(select(func.coalesce(func.max(run_stack.c.seq), -1) + 1)
                                 .where(run_stack.c.run_id == run_id)).scalar_one()
            conn.execute(run_stack.insert(), [dict(r, seq=first + i) for i, r in enumerate(rows)])

    def finish_run(self, run_id: str, status: str, finished_at: float | None = None, note: str = "") -> None:
        """Mark a run "complete", "interrupted" or "failed"; `note`: why, added to its notes."""
        if status not in RUN_STATUSES[1:]:
            raise StoreError(f"unknown run status {status!r} (want one of {RUN_STATUSES[1:]})")
        ended = time.time() if finished_at is None else finished_at

        def mark(conn: Connection) -> None:
            self._require_run(conn, run_id)
            values = dict(status=status, finished_at=ended)
            if note:
                notes = conn.execute(select(run.c.notes).where(run.c.id == run_id)).scalar_one()
                values["notes"] = f"{notes}; {note}" if notes else note
            conn.execute(run.update().where(run.c.id == run_id).values(**values))
        retry.in_transaction(self._engine, mark)

    def close_killed_runs(self) -> list[str]:
        """Mark as "interrupted" the runs still "running" whose offlab was killed on this
        machine (writer.py); runs other machines or live instances write are left alone.
        Their ids."""
        with self._engine.begin() as conn:
            killed = self._dead_runs(conn)
            if killed:
                conn.execute(run.update().where(run.c.id.in_(killed), run.c.status == "running")
                             .values(status="interrupted"))
        return killed

    def has_run(self, run_id: str) -> bool:
        with self._reading() as conn:
            return conn.execute(select(run.c.id).where(run.c.id == run_id)).first() is not None

    def dead_runs(self) -> list[str]:
        """Runs still "running" whose offlab on this machine is gone (read only: `list`)."""
        with self._reading() as conn:
            return self._dead_runs(conn)

    @staticmethod
    def _dead_runs(conn: Connection) -> list[str]:
        me = writer.current()
        rows = conn.execute(select(run.c.id, run.c.writer, run.c.host)
                            .where(run.c.status == "running").order_by(run.c.id)).all()
        return [r.id for r in rows if writer.killed_here(r.writer, r.host, me)]

    def may_be_written(self, run_id: str) -> bool:
        """Whether a run's writer may still be writing it: "running", or marked
        "interrupted" by another offlab (no end time: close_killed_runs) while its writer
        is not known to be gone — one on another machine, or a clone of this one."""
        with self._reading() as conn:
            row = conn.execute(select(run.c.status, run.c.finished_at, run.c.writer, run.c.host)
                               .where(run.c.id == run_id)).first()
        if row is None or row.status in ("complete", "failed"):
            return False
        if row.status == "interrupted" and row.finished_at is not None:
            return False  # its own offlab ended it
        return writer.gone(row.writer, row.host, writer.current()) is not True

    def _require_run(self, conn: Connection, run_id: str) -> None:
        if conn.execute(select(run.c.id).where(run.c.id == run_id)).first() is None:
            raise StoreError(f"no run {run_id!r} in {self.path}")

    # --- reading -------------------------------------------------------------------

    def runs(self) -> list[RunSummary]:
        """Every run, oldest first, with how many cases and samples it holds: one query of
        the run table, both read from the run's own counters (counting a team store's case
        and sample rows would read all of them)."""
        query = (select(run.c.id, run.c.plan, run.c.started_at, run.c.status, run.c.case_count, run.c.sample_count)
                 .order_by(run.c.started_at, run.c.id))
        with self._reading() as conn:
            return [RunSummary(*row) for row in conn.execute(query)]

    def runs_with_cases(self, wanted: Callable[[str], bool]) -> Iterator[RunAggregates | RunResults]:
        """The runs that measured a case whose key is `wanted`, oldest first, one at a time,
        each with only the cases a history of those keys reads: the matching ones and the
        others of their group (scenario, MTU, traffic: where the baseline comes from).
        A run comes as the database's aggregates of those cases (RunAggregates) where they
        give every figure a history prints, else with their samples (RunResults)."""
        with self._reading() as conn:
            keys = [k for k in conn.execute(select(case_table.c.key).distinct()).scalars() if wanted(k)]
            if not keys:
                return
            matched = (select(case_table.c.run_id, case_table.c.scenario, case_table.c.mtu, case_table.c.traffic)
                       .where(case_table.c.key.in_(keys)).subquery())
            group = (select(run.c.id, run.c.started_at, case_table.c.key)
                     .join(case_table, case_table.c.run_id == run.c.id)
                     .join(matched, (matched.c.run_id == case_table.c.run_id)
                           & (matched.c.scenario == case_table.c.scenario) & (matched.c.mtu == case_table.c.mtu)
                           & (matched.c.traffic == case_table.c.traffic))
                     .distinct().order_by(run.c.started_at, run.c.id))
            per_run: dict[str, set[str]] = {}
            for run_id, _, key in conn.execute(group):
                per_run.setdefault(run_id, set()).add(key)
            batch = list(per_run.items())
            for first in range(0, len(batch), HISTORY_BATCH):  # memory flat however many runs
                wanted_runs = dict(batch[first:first + HISTORY_BATCH])
                aggregated = aggregate_runs(conn, wanted_runs)
                short = {a.info.run_id: wanted_runs[a.info.run_id] for a in aggregated if not a.sufficient}
                whole = {r.info.run_id: r for r in load_runs(conn, short)} if short else {}
                yield from (whole.get(a.info.run_id, a) for a in aggregated)

    def run_count(self) -> tuple[int, int]:
        """(runs, runs still "running"), counted by the database."""
        query = select(func.count(), func.count().filter(run.c.status == "running"))
        with self._reading() as conn:
            total, running = conn.execute(query.select_from(run)).one()
        return total, running

    def run_ids(self) -> list[str]:
        with self._reading() as conn:
            return list(conn.execute(select(run.c.id).order_by(run.c.started_at, run.c.id)).scalars())

    def latest_run_id(self) -> str | None:
        with self._reading() as conn:
            return conn.execute(select(run.c.id).order_by(run.c.started_at.desc(), run.c.id.desc())
                                .limit(1)).scalar()

    def completed_counts(self, run_id: str) -> dict[str, int]:
        """case key → samples stored (cases with none are included with 0)."""
        query = (select(case_table.c.key, func.count(sample.c.id))
                 .select_from(case_table.outerjoin(sample, (sample.c.run_id == case_table.c.run_id)
                                                   & (sample.c.case_key == case_table.c.key)))
                 .where(case_table.c.run_id == run_id)
                 .group_by(case_table.c.key, case_table.c.position).order_by(case_table.c.position))
        with self._reading() as conn:
            self._require_run(conn, run_id)
            return {key: count for key, count in conn.execute(query).all()}

    def load_run(self, run_id: str) -> RunResults:
        with self._reading() as conn:
            results = load_run(conn, run_id)
        if results is None:
            raise StoreError(f"no run {run_id!r} in {self.path}")
        return results

    def outline(self, run_id: str) -> RunOutline | None:
        """A run's environment, status, case keys, sample count and throughput total,
        without its samples' rows (what `copy` compares a run already in the destination by)."""
        with self._reading() as conn:
            found = load_runs(conn, {run_id: ()})
            if not found:
                return None
            keys = conn.execute(select(case_table.c.key).where(case_table.c.run_id == run_id)
                                .order_by(case_table.c.position)).scalars().all()
            count, total = conn.execute(select(func.count(), func.coalesce(func.sum(sample.c.throughput_bps), 0.0))
                                        .where(sample.c.run_id == run_id)).one()
        return RunOutline(found[0].info, found[0].status, tuple(keys), count, total)

    def campaign_runs(self, campaign: str) -> list[tuple[str, str]]:
        """(run id, pair) of every run of a campaign, by pair name (then start, for a pair
        run again under the same campaign)."""
        query = (select(run_campaign.c.run_id, run_campaign.c.pair)
                 .join(run, run.c.id == run_campaign.c.run_id)
                 .where(run_campaign.c.campaign == campaign)
                 .order_by(run_campaign.c.pair, run.c.started_at, run.c.id))
        with self._reading() as conn:
            return [tuple(row) for row in conn.execute(query).all()]


