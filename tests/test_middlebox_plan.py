"""The middlebox plan: the 2³ offload matrix on the router, the paths, plan errors, and
the seed-003-shaped table with its pathology flags."""

import dataclasses
import random

import pytest

from offlab.run import plan
from offlab.measure.counters import is_pathology
from offlab.run.plan import PlanError, parse
from offlab.records import CaseSpec, OffloadProfile, Params, Sample, TrafficSpec
from offlab.report.model import profile_row
from offlab.studies.middlebox import plan as matrix
from offlab.report.studies.middlebox import (COLLAPSED, DEGRADED, NOT_REACHED, grown_pathologies,
                                             middlebox_sections, middlebox_tables, pathology_table,
                                             seed_table)
from offlab.topology.middlebox import PATHS
from offlab.analysis.adaptive import AdaptiveOutcome

PLAN = """
name = "mb"
runs = 2
duration = 1.5
warmup = 0.5
scenarios = ["middlebox"]
matrix = ["checksum", "tso", "gro"]
mtus = [1500]
traffic = ["tcp"]
"""


def _profiles(dimensions):
    return [p.offloads for p in matrix.matrix_profiles(dimensions)]


def test_matrix_is_all_eight_combinations_in_the_seed_row_order():
    profiles = _profiles(["checksum", "tso", "gro"])
    assert [p.name for p in profiles] == [
        "chkY-tsoY-groY", "chkY-tsoY-groN", "chkY-tsoN-groY", "chkY-tsoN-groN",
        "chkN-tsoY-groY", "chkN-tsoY-groN", "chkN-tsoN-groY", "chkN-tsoN-groN",
    ]
    assert len({tuple(sorted(p.features.items())) for p in profiles}) == 8
    assert all(p.side == "both" for p in profiles)


def test_each_dimension_switches_its_features_together():
    off = _profiles(["checksum", "tso", "gro"])[-1].features
    assert off == {"tx-checksumming": False, "rx-checksumming": False,
                   "tcp-segmentation-offload": False, "generic-receive-offload": False,
                   "large-receive-offload": False}
    first = _profiles(["checksum", "tso", "gro"])[0]
    assert all(first.features.values())  # the report's "all on" baseline


def test_the_combination_is_the_cases_parameters_and_names_its_profile():
    for profile in matrix.matrix_profiles(["checksum", "gro"]):
        assert matrix.combination(profile.params) == dict(profile.params)
        assert matrix.profile_name(matrix.combination(profile.params)) == profile.offloads.name
    assert matrix.combination(Params(path="a-b")) == {}


def test_paths_and_routers_are_topology_parameters_with_labels():
    p = parse(PLAN, "mb.toml")
    first = p.cases[0]
    assert (first.scenario, first.topology, first.label) == (
        "middlebox", Params(path="a-b", router="kernel"), "middlebox-ab")
    assert first.params == Params(checksum=True, tso=True, gro=True) and first.datapath is None
    assert [PATHS[n].forwarded for n in matrix.DEFAULT_PATHS] == [True, True, False, False]
    assert PATHS["r-a"].label == "R -> A"


def test_plan_expands_default_paths_times_matrix():
    p = parse(PLAN, "mb.toml")
    assert len(p.cases) == 4 * 8
    assert [c.label for c in p.cases[::8]] == ["middlebox-ab", "middlebox-ba", "middlebox-ar", "middlebox-ra"]
    assert p.cases[0].key == "middlebox-ab/mtu1500/both:chkY-tsoY-groY/tcp"


def test_builtin_middlebox_plan_has_both_routers_eight_profiles_two_workloads():
    p = plan.load("middlebox")
    assert len(p.cases) == (4 + 2) * 8 * 2  # offlab-fwd has the two forwarded paths
    assert {c.label for c in p.cases} == {"middlebox-ab", "middlebox-ba", "middlebox-ar",
                                             "middlebox-ra", "middlebox-fwd-ab", "middlebox-fwd-ba"}


def test_chosen_paths_in_order():
    p = parse(PLAN + 'paths = ["r-b", "a-b"]\n', "mb.toml")
    assert [c.label for c in p.cases[::8]] == ["middlebox-rb", "middlebox-ab"]


@pytest.mark.parametrize("change, key, hint", [
    (('matrix = ["checksum", "tso", "gro"]\n', ''), "matrix", "needs a matrix"),
    (('matrix = ["checksum", "tso", "gro"]', 'matrix = ["lro"]'), "matrix", "'checksum'"),
    (('traffic = ["tcp"]', 'traffic = ["tcp"]\nsequences = ["tx"]'), "sequences", "remove 'sequences'"),
    (('traffic = ["tcp"]', 'traffic = ["tcp"]\npaths = ["a-c"]'), "paths", "'a-b'"),
    (('scenarios = ["middlebox"]', 'scenarios = ["bare"]\npaths = ["a-b"]'), "paths", "only the 'middlebox'"),
])
def test_plan_errors_are_one_line_with_the_fix(change, key, hint):
    with pytest.raises(PlanError) as caught:
        parse(PLAN.replace(*change), "bad.toml")
    message = str(caught.value)
    assert "\n" not in message and message.startswith("bad.toml: ")
    assert f"'{key}'" in message and hint in message


# --- the seed-shaped table ------------------------------------------------------------

def _samples(case: CaseSpec, gbps: float, counters: dict, rng: random.Random, n: int = 4):
    return tuple(
        Sample(case_key=case.key, repetition=i, started_at=float(i), duration_s=2.0,
               throughput_bps=gbps * 1e9 * rng.uniform(0.98, 1.02), sender_bps=gbps * 1e9,
               retransmits=0, counters=dict(counters))
        for i in range(n)
    )


DROPS = {"r:dev.ofl-rb0.tx_drop": 500, "a:Tcp.RetransSegs": 480}


def _rows(collapse_key: str | None = None, rate: float = 0.2, counters: dict = DROPS):
    """Two paths × four profiles at 10 Gbit/s; the profile `collapse_key` runs at
    `rate` with these counters growing."""
    rng = random.Random(7)
    p = parse(PLAN.replace('["checksum", "tso", "gro"]', '["checksum", "gro"]')
              + 'paths = ["a-b", "a-r"]\n', "mb.toml")
    rows = []
    for case in p.cases:
        bad = case.key == collapse_key
        grown = counters if bad else {"r:dev.ofl-rb0.rx_bytes": 10**9}
        rows.append(profile_row(case, _samples(case, rate if bad else 10.0, grown, rng)))
    return rows


def test_seed_table_has_combos_as_rows_paths_as_columns_and_ci_cells():
    (table,) = middlebox_tables(_rows())
    rendered = seed_table(table, {})
    assert rendered.header == ("chk", "gro", "A -> B (Gbit/s)", "A -> R (Gbit/s)")
    assert [r[:2] for r in rendered.rows] == [("Y", "Y"), ("Y", "N"), ("N", "Y"), ("N", "N")]
    assert all(" ± " in cell for row in rendered.rows for cell in row[2:])
    assert pathology_table(table) is None  # rx_bytes is not a pathology


def test_a_collapsed_profile_is_flagged_with_the_counters_that_grew():
    key = "middlebox-ab/mtu1500/both:chkN-groY/tcp"
    (table,) = middlebox_tables(_rows(collapse_key=key))
    rendered = seed_table(table, {})
    cell = rendered.rows[2][2]
    assert cell.endswith(COLLAPSED) and cell.startswith("0.20")
    assert all(COLLAPSED not in c for r in rendered.rows for c in r[2:] if c is not cell)
    flagged = pathology_table(table)
    assert flagged is not None and len(flagged.rows) == 1
    path, profile, flag, *_, counters = flagged.rows[0]
    assert (path, profile, flag) == ("A -> B", "chkN groY", "collapsed")
    assert counters.startswith("r:dev.ofl-rb0.tx_drop 500") and "a:Tcp.RetransSegs 480" in counters


def test_target_not_reached_is_marked_in_the_cell():
    rows = _rows()
    key = rows[0].case.key
    outcome = AdaptiveOutcome(key, 0.05, 3, 10, 10, 0.072, False)
    (table,) = middlebox_tables(rows)
    assert seed_table(table, {key: outcome}).rows[0][2].endswith(NOT_REACHED)
    ((title, _, tables),) = middlebox_sections(rows, {key: outcome})
    assert "seed 003" in title and len(tables) == 2
    assert "0 collapsed, 0 degraded" in tables[1][0]


def test_mbit_unit_when_every_cell_is_below_a_gigabit():
    rows = [dataclasses.replace(r, throughput=r.throughput.scaled(0.01)) for r in _rows()]
    (table,) = middlebox_tables(rows)
    assert seed_table(table, {}).header[2] == "A -> B (Mbit/s)"


def test_other_scenarios_are_not_middlebox_tables():
    case = CaseSpec("bare", 1500, OffloadProfile("all-on", "both", {}), TrafficSpec("tcp", 1.0))
    row = profile_row(case, _samples(case, 5.0, {}, random.Random(1)))
    assert middlebox_tables([row]) == []


def test_grown_pathologies_ignore_traffic_counters_and_average_per_sample():
    s = Sample("k", 0, 0.0, 1.0, 1.0, 1.0, counters={"r:Ip.InDiscards": 4, "b:Tcp.InSegs": 99,
                                                    "cpu_window_s": 1.0})
    t = dataclasses.replace(s, repetition=1, counters={"r:Ip.InDiscards": 2})
    assert grown_pathologies([s, t]) == {"r:Ip.InDiscards": 3.0}
    assert is_pathology("dev.ofl-rb0.tx_drop") and not is_pathology("Tcp.InSegs")


def test_slow_with_path_drops_is_degraded_but_socket_overflow_alone_is_not():
    key = "middlebox-ab/mtu1500/both:chkN-groY/tcp"
    (table,) = middlebox_tables(_rows(collapse_key=key, rate=3.0))
    assert seed_table(table, {}).rows[2][2].endswith(DEGRADED)
    assert pathology_table(table).rows[0][2] == "degraded"
    socket_only = {"b:Udp.RcvbufErrors": 10**5, "b:Udp.InErrors": 10**5}
    (table,) = middlebox_tables(_rows(collapse_key=key, rate=3.0, counters=socket_only))
    assert DEGRADED not in seed_table(table, {}).rows[2][2]
    assert pathology_table(table) is None
