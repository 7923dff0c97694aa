"""The forest plot of every tested effect: one row per step with its change and CI, the
significant ones marked, the ones that are no offload effect greyed, first in both reports."""

import pytest

from fixtures.make_store import build_store
from offlab.report.document import build_report_model
from offlab.report.write import write_report
from offlab.report.forest import SLUG, forest_chart, forest_rows
from offlab.store.store import Store


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    path = tmp_path_factory.mktemp("store") / "fixture.sqlite"
    run_id = build_store(path)
    with Store(path) as store:
        return store.load_run(run_id)


def test_every_step_is_a_row_with_its_change_and_the_excluded_ones_say_why(results):
    model = build_report_model(results)
    rows = forest_rows(model)
    rec = model.recommendations
    assert len(rows) == sum(1 for s in rec.steps if s.credited) + sum(1 for s, _ in rec.excluded if s.credited)
    tso = [r for r in rows if "TSO on" in r.label and r.excluded is None]
    assert tso and tso[0].throughput is not None and tso[0].throughput.holds
    assert all(r.excluded for r in rows[len(rows) - len(rec.excluded):]) or not rec.excluded
    assert forest_chart(model)[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_forest_plot_opens_the_html_and_the_markdown_links_it(results, tmp_path):
    md_path, html_path = write_report(results, tmp_path)
    html, md = html_path.read_text(), md_path.read_text()
    assert html.index(f'id="{SLUG}"') < html.index('id="summary"')
    assert f"(charts/{SLUG}.png)" in md.split("\n\n")[1]  # right under the title
    assert (tmp_path / "charts" / f"{SLUG}.png").read_bytes()[:4] == b"\x89PNG"


def test_the_chart_plots_the_sign_the_summary_and_the_advice_use(results):
    """One sign: the effect of having the offload on. TSO off costs the fixture 40 % of its
    throughput, so the chart's point is +67 % (on relative to off), as in the advice and
    the case table — the old chart plotted −40 % (off relative to on) beside them."""
    model = build_report_model(results)
    (row,) = [r for r in forest_rows(model) if r.label == "veth · tcp · at the transmitter: TSO on"]
    advised = next(e for _, effects in model.recommendations.goals for e in effects
                   if e.step.off_row.profile.name == "tso-off" and e.metric == "throughput")
    assert row.throughput.keep_on.ratio == advised.keep_on.ratio > 0.5
    table = next(g for g in model.groups if g.slug == "veth-mtu1500-tcp-tx")
    tso_row = next(r for r in table.rows if r.profile.name == "tso-off")
    assert tso_row.vs_baseline_throughput.ratio == row.throughput.keep_on.ratio
