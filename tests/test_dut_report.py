"""Seed-002 DUT tables on deterministic results (the article's VXLAN TCP "DUT rcv")."""

import pytest

from fixtures.seed_views import dut_results
from offlab.report.write import write_report
from offlab.report.studies.dut import dut_cpu_table, dut_rates_table, dut_studies, encapsulation_table
from offlab.report.model import build_rows

SEED_ROWS = [f"CPU {core} %{cls}" for core in ("App", "S-IRQ")
             for cls in ("usr", "sys", "irq", "soft", "idle")]


@pytest.fixture(scope="module")
def studies():
    return dut_studies(build_rows(dut_results()).values())


def study(studies, scenario, traffic):
    return next(s for s in studies if s.scenario == scenario and s.traffic == traffic)


def test_directions_are_paired_per_scenario_and_workload(studies):
    assert [(s.scenario, s.traffic) for s in studies] == [
        ("vxlan", "tcp"), ("vxlan", "udp18"), ("bare", "tcp"), ("bare", "udp18")]
    assert all([d for d, _ in s.columns] == ["rcv", "snd"] for s in studies)


def test_cpu_table_has_the_articles_rows_and_cells(studies):
    table = dut_cpu_table(study(studies, "vxlan", "tcp"))
    assert table.header == ("", "DUT rcv", "DUT snd")
    assert [row[0] for row in table.rows] == SEED_ROWS
    cells = {row[0]: row[1] for row in table.rows}
    assert cells["CPU App %usr"] == "1.8±0.3"
    assert cells["CPU App %sys"] == "54.2±0.0"
    assert cells["CPU App %idle"] == "44.0±0.3"
    assert cells["CPU S-IRQ %soft"] == "99.9±0.0"


def test_rates_table_pairs_generated_and_received(studies):
    rows = {r[0]: r[1:] for r in dut_rates_table(study(studies, "vxlan", "udp18")).rows}
    assert rows["Generated (Mbit/s)"] == ("90.0±0.0", "90.0±0.0")
    assert rows["Received (Mbit/s)"] == ("60.0±0.0", "60.0±0.0")
    assert rows["Loss %"] == ("25.0±0.0", "25.0±0.0")
    # App core 56 % busy + S-IRQ core 99.9 %, over 60 Mbit/s
    busy = (100.0 - 44.0) + 99.9
    assert float(rows["CPU % per Mbps, both cores"][0].split("±")[0]) == pytest.approx(
        busy / 60, abs=0.01)
    assert float(rows["CPU % per Mbps, both cores − generator process"][0].split("±")[0]) == \
        pytest.approx((busy - 40) / 60, abs=0.01)
    assert rows["Generator process %usr+%sys (its core)"] == ("40.0±0.0", "40.0±0.0")
    assert float(rows["CPU % per Mbps, both cores − foreign load"][0].split("±")[0]) == \
        pytest.approx((busy - 1.0) / 60, abs=0.01)  # the fixture's other_busy_pct is 1 %


def test_tcp_rates_are_in_gbit(studies):
    rows = {r[0]: r[1:] for r in dut_rates_table(study(studies, "bare", "tcp")).rows}
    assert rows["Received (Gbit/s)"] == ("30.0±0.0", "30.0±0.0")
    assert "Loss %" not in rows


def test_encapsulation_cost_against_bare(studies):
    table = encapsulation_table(studies)
    tcp = [r for r in table.rows if r[0].startswith("tcp")]
    assert [(r[1], r[2], r[-1]) for r in tcp] == [("DUT rcv", "vxlan", "60%"),
                                                 ("DUT snd", "vxlan", "60%")]


def test_no_reference_no_encapsulation_table():
    only_vxlan = dut_studies(build_rows(dut_results(("vxlan",))).values())
    assert encapsulation_table(only_vxlan) is None


def test_report_has_the_dut_section(tmp_path):
    md, html = write_report(dut_results(), tmp_path)
    text = md.read_text()
    assert "## DUT CPU study (seed 002 shape)" in text
    assert "| CPU S-IRQ %soft | 99.9±0.0 | 99.9±0.0 |" in text
    assert (tmp_path / "charts" / "dut-study.png").read_bytes()[:4] == b"\x89PNG"
    assert "Encapsulation cost" in html.read_text()
