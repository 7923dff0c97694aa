"""The middlebox with R as offlab-fwd: the `router` key, the fwd scenario names, each
matrix combination as the forwarder's mode and port offloads, and the report's router
column and kernel-vs-fwd table."""

import random

import pytest

from offlab.run.plan import PlanError, parse
from offlab.records import DatapathSetting, Params, PortSetting, Sample
from offlab.report.model import profile_row
from offlab.studies.middlebox import plan as matrix
from offlab.studies.middlebox.forwarder import FwdSettings, collapsed_with, fwd_settings
from offlab.report.studies.middlebox import (COLLAPSED, grown_pathologies, middlebox_sections,
                                             middlebox_tables, pathology_table, router_table, seed_table)

PLAN = """
name = "mbfwd"
runs = 2
duration = 1.5
warmup = 0.5
scenarios = ["middlebox"]
matrix = ["checksum", "tso", "gro"]
mtus = [1500]
traffic = ["tcp"]
"""


def _combos():
    return [matrix.combination(p.params) for p in matrix.matrix_profiles(["checksum", "tso", "gro"])]


def test_router_key_adds_the_forwarded_paths_through_offlab_fwd():
    p = parse(PLAN + 'router = ["kernel", "offlab-fwd"]\n', "mb.toml")
    assert [c.label for c in p.cases[::8]] == [
        "middlebox-ab", "middlebox-ba", "middlebox-ar", "middlebox-ra",
        "middlebox-fwd-ab", "middlebox-fwd-ba"]
    assert p.cases[-1].key == "middlebox-fwd-ba/mtu1500/both:chkN-tsoN-groN/tcp"
    fwd = [c for c in p.cases if c.topology["router"] == "offlab-fwd"]
    assert {c.topology["path"] for c in fwd} == {"a-b", "b-a"}  # the forwarder ends no traffic
    assert all(c.datapath is None for c in p.cases if c.topology["router"] == "kernel")


def test_without_router_key_only_the_kernel_is_measured():
    p = parse(PLAN, "mb.toml")
    assert {c.topology["router"] for c in p.cases} == {"kernel"}


@pytest.mark.parametrize("change, key, hint", [
    (('traffic = ["tcp"]', 'traffic = ["tcp"]\nrouter = ["offlab-fwd"]\npaths = ["a-r"]'),
     "paths", "'a-b' or 'b-a'"),
    (('traffic = ["tcp"]', 'traffic = ["tcp"]\nrouter = ["vpp"]'), "router", "'offlab-fwd'"),
    (('scenarios = ["middlebox"]', 'scenarios = ["bare"]\nrouter = ["kernel"]'), "router",
     "only the 'middlebox'"),
])
def test_router_errors_are_one_line_with_the_fix(change, key, hint):
    with pytest.raises(PlanError) as caught:
        parse(PLAN.replace(*change), "bad.toml")
    message = str(caught.value)
    assert "\n" not in message and f"'{key}'" in message and hint in message


def test_each_combination_maps_to_a_real_forwarder_setting():
    got = {matrix.profile_name(c): fwd_settings(c).label for c in _combos()}
    assert got == {
        "chkY-tsoY-groY": "gro, csum+tso4+tso6+ecn",
        "chkY-tsoY-groN": "pass, csum+tso4+tso6+ecn",
        "chkY-tsoN-groY": "gso, csum",
        "chkY-tsoN-groN": "gso, csum",
        "chkN-tsoY-groY": "csum, none",
        "chkN-tsoY-groN": "csum, none",
        "chkN-tsoN-groY": "csum, none",
        "chkN-tsoN-groN": "csum, none",
    }
    assert len({fwd_settings(c) for c in _combos()}) == 4


def test_collapsed_dimensions_are_named():
    assert collapsed_with({"checksum": True, "tso": True, "gro": True}) == []
    assert collapsed_with({"checksum": True, "tso": False, "gro": True}) == ["gro"]
    assert collapsed_with({"checksum": False, "tso": True, "gro": False}) == ["tso", "gro"]
    assert fwd_settings({"checksum": False}) == FwdSettings("csum", frozenset())
    assert fwd_settings({}).mode == "gro"  # a dimension left out is on, as in ethtool


def test_a_fwd_case_carries_its_combinations_forwarder_setting():
    p = parse(PLAN + 'router = ["offlab-fwd"]\n', "mb.toml")
    case = next(c for c in p.cases if c.profile.name == "chkY-tsoN-groN")
    port = PortSetting(frozenset({"csum"}))
    assert case.params == Params(checksum=True, tso=False, gro=False)
    assert case.datapath == DatapathSetting(True, "gso", (("a", port), ("b", port)))
    assert FwdSettings.of(case.datapath) == fwd_settings(matrix.combination(case.params))


# --- the report -----------------------------------------------------------------------

def _rows(fwd_gbps: float = 5.0, fwd_counters: dict | None = None):
    """Kernel at 10 Gbit/s on A→B and A→R, offlab-fwd at `fwd_gbps` on A→B; matrix chk × gro."""
    rng = random.Random(3)
    p = parse(PLAN.replace('["checksum", "tso", "gro"]', '["checksum", "gro"]')
              + 'paths = ["a-b", "a-r"]\nrouter = ["kernel", "offlab-fwd"]\n', "mb.toml")
    rows = []
    for case in p.cases:
        fwd = case.topology["router"] == "offlab-fwd"
        gbps = fwd_gbps if fwd else 10.0
        counters = (fwd_counters or {}) if fwd and case.profile.name == "chkN-groN" else {}
        samples = tuple(Sample(case.key, i, float(i), 2.0, gbps * 1e9 * rng.uniform(0.98, 1.02),
                               gbps * 1e9, counters=dict(counters)) for i in range(4))
        rows.append(profile_row(case, samples))
    return rows


def test_seed_table_has_a_router_column_and_fwd_rows_have_no_terminated_paths():
    (table,) = middlebox_tables(_rows())
    rendered = seed_table(table, {})
    assert rendered.header == ("router", "chk", "gro", "A -> B (Gbit/s)", "A -> R (Gbit/s)")
    assert [r[0] for r in rendered.rows] == ["kernel"] * 4 + [
        "offlab-fwd gro/csum+tso4+tso6+ecn", "offlab-fwd pass/csum+tso4+tso6+ecn",
        "offlab-fwd csum/none", "offlab-fwd csum/none"]
    assert all(r[4] == "–" for r in rendered.rows[4:]) and all(" ± " in r[3] for r in rendered.rows)
    # Half the kernel's speed is no collapse: each router is judged against its own best.
    assert all(COLLAPSED not in c for r in rendered.rows for c in r)


def test_router_table_compares_the_two_on_shared_paths():
    (table,) = middlebox_tables(_rows())
    versus = router_table(table)
    assert versus is not None
    assert versus.header[:3] == ("chk", "gro", "offlab-fwd mode / egress offloads")
    assert versus.header[3:] == ("A -> B kernel (Gbit/s)", "A -> B fwd (Gbit/s)", "A -> B fwd vs kernel")
    first = versus.rows[0]
    assert first[2] == "gro / csum+tso4+tso6+ecn"
    assert first[5].startswith("-50%") and first[5].endswith("*")
    ((_, _, tables),) = middlebox_sections(_rows(), {})
    assert len(tables) == 3 and "kernel router vs offlab-fwd" in tables[2][0]


def test_router_table_needs_both_routers():
    kernel_only = [r for r in _rows() if r.case.topology["router"] == "kernel"]
    (table,) = middlebox_tables(kernel_only)
    assert router_table(table) is None
    assert seed_table(table, {}).header[0] == "chk"


def test_forwarder_drops_flag_a_collapsed_fwd_profile():
    rows = _rows()
    rows = [r if r.case.profile.name != "chkN-groN" or r.case.datapath is None
            else _slow(r) for r in rows]
    (table,) = middlebox_tables(rows)
    flagged = pathology_table(table)
    assert flagged is not None and len(flagged.rows) == 1
    assert flagged.rows[0][:3] == ("A -> B (offlab-fwd)", "chkN groN", "collapsed")
    assert flagged.rows[0][-1].startswith("fwd:a>b:drop.egress.ENOBUFS 900")
    assert "fwd:a>b:dropped" not in flagged.rows[0][-1]


def _slow(row):
    samples = tuple(Sample(s.case_key, s.repetition, s.started_at, s.duration_s, 0.1e9, 0.1e9,
                           counters={"fwd:a>b:drop.egress.ENOBUFS": 900, "fwd:a>b:dropped": 900,
                                     "fwd:a>b:rx_packets": 10**6})
                    for s in row.samples)
    return profile_row(row.case, samples)


def test_fwd_traffic_counters_are_not_pathologies():
    s = Sample("k", 0, 0.0, 1.0, 1.0, 1.0, counters={"fwd:a>b:segments": 10**6,
                                                    "fwd:b>a:drop.parse.truncated": 2})
    assert grown_pathologies([s]) == {"fwd:b>a:drop.parse.truncated": 2.0}
