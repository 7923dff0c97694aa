"""Message-size curves (seed 001) on deterministic results with known ratios."""

import pytest

from fixtures.seed_views import msgsize_results
from offlab.report.document import build_report_model
from offlab.report.write import write_report
from offlab.report.studies.msgsize import curve_chart, curve_sets, curve_table, size_label
from offlab.report.model import build_rows


@pytest.fixture(scope="module")
def curves():
    (found,) = curve_sets(build_rows(msgsize_results()).values())
    return found


def test_one_set_with_a_uni_and_a_bidir_panel(curves):
    assert (curves.scenario, curves.mtu) == ("bare", 1500)
    assert [p.bidirectional for p in curves.panels] == [False, True]
    for panel in curves.panels:
        assert panel.sizes == (64, 256, 1024, 4096)
        assert [c.profile for c in panel.curves] == ["all-on", "both:all-off"]
        assert panel.curves[0].baseline and not panel.curves[1].baseline


def test_points_carry_the_measured_means(curves):
    uni = curves.panels[0].curves[0]
    assert [round(p.throughput.mean, 3) for p in uni.points] == [0.125, 0.5, 2.0, 8.0]
    assert uni.at(1024).cpu_per_gbps.mean == pytest.approx(150 / 2.0, rel=0.01)
    bidir = curves.panels[1].curves[0]
    assert bidir.at(4096).throughput.mean == pytest.approx(16.0)


def test_table_gives_all_on_over_each_profile(curves):
    table = curve_table(curves.panels[0])
    assert table.header == ("Message size", "all-on Gbit/s", "all-on CPU %/Gbps",
                            "both:all-off Gbit/s", "both:all-off CPU %/Gbps",
                            "all-on ÷ both:all-off")
    first, *_, last = table.rows
    assert first[0] == "64" and first[-1] == "2.00×"
    assert last[0] == "4K" and last[-1] == "1.00×"
    assert last[1] == "8.00±0.24"  # mean±std over the three runs (±3 %)


def test_a_single_size_is_no_curve():
    rows = build_rows(msgsize_results(sizes=(1024,))).values()
    assert curve_sets(rows) == ()


def test_sizes_are_labelled_in_binary_multiples():
    assert [size_label(s) for s in (64, 1024, 262144, 1 << 20, 1536)] == [
        "64", "1K", "256K", "1M", "1536"]


def test_chart_is_a_png(curves):
    assert curve_chart(curves)[:8] == b"\x89PNG\r\n\x1a\n"


def test_report_has_the_curve_section_and_chart(tmp_path):
    md, html = write_report(msgsize_results(), tmp_path)
    text = md.read_text()
    assert "## bare · MTU 1500 · TCP throughput and CPU vs message size" in text
    assert "(charts/curves-bare-mtu1500.png)" in text
    assert (tmp_path / "charts" / "curves-bare-mtu1500.png").stat().st_size > 0
    assert "bare · MTU 1500, bidirectional:" in text
    assert "TCP throughput and CPU vs message size" in html.read_text()
    assert build_report_model(msgsize_results()).samples == 4 * 2 * 2 * 3
