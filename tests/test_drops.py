"""Drops and retransmits on the path as validity (report/drops.py, validity.py)."""

from offlab.records import CaseSpec, FeatureState, OffloadProfile, Sample, TrafficSpec
from offlab.report.drops import drops_sections, drops_where_none_belong, path_drops
from offlab.report.model import CaseGroup, profile_row
from offlab.report.recommend import recommend
from offlab.report.tables import throughput_table

ALL_ON = OffloadProfile("all-on", "both", {})
TSO_OFF = OffloadProfile("tso-off", "tx", {"tcp-segmentation-offload": False})
TCP = TrafficSpec("tcp", 1.5)


def _row(profile, rate, drops=0.0, retrans=2.0, segments=1.5e6, traffic=TCP, extra=None):
    case = CaseSpec("bare", 1500, profile, traffic)
    samples = []
    for i in range(3):
        counters = {"tcp_segments": segments, "tcp_retrans_pct": 100.0 * retrans / segments,
                    "tx:Tcp.OutSegs": segments, **(extra or {})}
        if drops:
            counters["tx:dev.ofl-v0.tx_drop"] = drops + i
            counters["local:softnet.cpu0.squeezed"] = 3.0
        state = {"tx:ofl-v0": {"tcp-segmentation-offload": FeatureState(bool(profile.features.get(
            "tcp-segmentation-offload", True)))}}
        samples.append(Sample(case.key, i, 0.0, 1.5, rate + 0.1e9 * i, rate, retransmits=int(retrans),
                              counters=counters, offloads=state))
    return profile_row(case, samples)


def test_counters_named_per_host_with_share_and_efficiency():
    row = _row(TSO_OFF, 14e9, drops=1800.0, retrans=900.0)
    found = drops_where_none_belong(row)
    assert found is not None and found.drops[0].name == "tx:dev.ofl-v0.tx_drop"
    assert found.drops[0].per_sample == 1801.0 and found.drops[0].samples == 3
    assert found.pressure[0].counter == "softnet.cpu0.squeezed"
    assert abs(found.retrans_pct.mean - 0.06) < 1e-9 and abs(found.efficiency_pct - 99.94) < 1e-9
    assert "tx:dev.ofl-v0.tx_drop +1.8k per sample in 3 of 3 samples" in found.where()


def test_a_clean_path_and_a_stray_drop_are_not_flagged():
    assert drops_where_none_belong(_row(ALL_ON, 24e9)) is None
    assert drops_where_none_belong(_row(ALL_ON, 24e9, drops=3.0)) is None
    assert path_drops(_row(ALL_ON, 24e9, drops=3.0).samples).per_sample == 4.0


def test_udp_is_judged_by_its_own_loss_bound_not_here():
    udp = TrafficSpec("udp", 1.5, udp_payload=1472, mode="capacity")
    assert drops_where_none_belong(_row(ALL_ON, 1e9, drops=5000.0, traffic=udp)) is None


def _group(*rows):
    return CaseGroup("bare", 1500, TCP, "tx", rows[0], tuple(rows))


def test_a_lossy_case_is_set_apart_in_either_direction_and_marked_in_the_table():
    on = _row(ALL_ON, 24e9)
    for off in (_row(TSO_OFF, 14e9, drops=1800.0), _row(TSO_OFF, 30e9, drops=1800.0)):
        from offlab.report.model import _with_deltas
        group = _group(on, _with_deltas(off, on))
        rec = recommend([group], virtual_devices=False)
        assert not rec.goals
        (step, reason), = rec.excluded
        assert reason.label == "drops on the path" and "tx:dev.ofl-v0.tx_drop" in reason.why
        table = throughput_table(group)
        column = table.header.index("Path drops / sample")
        assert "⚠ drops on the path" in table.rows[1][0]
        assert table.rows[1][column] == "1.8k ⚠ tx:dev.ofl-v0.tx_drop" and table.rows[0][column] == "0"
        assert table.rows[1][6].endswith("(<0.001%)")


def test_section_lists_each_counter_and_a_clean_case_once():
    (section,) = drops_sections([_row(ALL_ON, 24e9), _row(TSO_OFF, 14e9, drops=1800.0)])
    (_, table), = section.tables
    assert table.rows[0][2] == "ok" and table.rows[0][3] == "none grew"
    assert table.rows[1][2].startswith("⚠") and table.rows[1][3] == "dev.ofl-v0.tx_drop (drop)"
    assert table.rows[1][4] == "tx" and table.rows[1][5] == "1.8k (3/3)"
    assert table.rows[2][3] == "softnet.cpu0.squeezed (pressure)" and table.rows[2][4] == "local"


def test_a_paced_case_is_judged_by_what_resending_costs_it():
    paced = TrafficSpec("tcp", 0.7, warmup_s=0.3, service_demand=0.8)
    assert drops_where_none_belong(_row(TSO_OFF, 7e9, drops=1800.0, traffic=paced)) is None  # 0.12 %
    assert drops_where_none_belong(_row(TSO_OFF, 7e9, drops=30000.0, traffic=paced)) is not None  # 2 %


def test_retransmit_cell_gives_the_share_of_segments():
    from offlab.report.drops import retrans_cell, share_text
    assert retrans_cell(_row(TSO_OFF, 14e9, retrans=900.0)) == "900±0 (0.06%)"
    assert share_text(0.0) == "0%" and share_text(7.8e-05) == "<0.001%" and share_text(3.8) == "3.8%"
