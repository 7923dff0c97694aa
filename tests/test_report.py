"""Report generation from a fixture store with known effects."""

import re
from html.parser import HTMLParser

import pytest

from fixtures.make_store import build_store
from offlab.report.document import build_report_model
from offlab.report.write import write_report
from offlab.report.page import markdown_table as render_table
from offlab.report.tables import cpu_table
from offlab.store.store import Store
from offlab.warnings import HighVariation, OffloadNotAsRequested


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    path = tmp_path_factory.mktemp("store") / "fixture.sqlite"
    run_id = build_store(path)
    with Store(path) as store:
        return store.load_run(run_id)


@pytest.fixture(scope="module")
def written(results, tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    md, html = write_report(results, out)
    return out, md.read_text(), html.read_text()


def _section(markdown: str, heading: str) -> str:
    start = markdown.index(heading)
    rest = markdown[start + len(heading):]
    end = re.search(r"\n#{1,3} ", rest)
    return rest[: end.start()] if end else rest


def _signed(sign: str, number: str) -> float:
    return (-1.0 if sign == "−" else 1.0) * float(number)


def _percent_after(line: str, prefix: str) -> tuple[float, float]:
    """The effect and the larger distance to an end of its CI, "+65% [CI +58%, +73%]"."""
    m = re.search(re.escape(prefix) + r" — ([+−])([\d.]+)% \[CI ([+−])([\d.]+)%, ([+−])([\d.]+)%\]", line)
    assert m, line
    value, low, high = (_signed(m.group(i), m.group(i + 1)) for i in (1, 3, 5))
    return value, max(value - low, high - value)


def test_tso_recommendation_has_the_right_sign_and_size(written):
    _, md, _ = written
    tcp = _section(md, "### To increase TCP throughput")
    line = next(l for l in tcp.splitlines() if l.startswith("- keep TSO on at the transmitter"))
    gain, half = _percent_after(line, "keep TSO on at the transmitter")
    # truth: 20 → 12 Gbit/s when TSO goes off, i.e. keeping it on is +66.7 %
    assert 60 <= gain <= 73 and abs(gain - 66.7) <= half + 3
    assert "n=5" in line and "p<0.001" in line and "veth, MTU 1500, tcp" in line
    cpu = _section(md, "### To improve TCP CPU performance")
    cpu_line = next(l for l in cpu.splitlines() if l.startswith("- keep TSO on"))
    assert _percent_after(cpu_line, "keep TSO on at the transmitter")[0] < 0
    assert "CPU per Gbps" in cpu_line


def test_cumulative_steps_are_credited_to_the_feature_turned_off(written):
    _, md, _ = written
    tcp = _section(md, "### To increase TCP throughput")
    gso, _ = _percent_after(next(l for l in tcp.splitlines() if l.startswith("- keep GSO on")),
                            "keep GSO on at the transmitter")
    assert 75 <= gso <= 95  # 11 → 6 Gbit/s after TSO and tx-csum are already off
    assert "keep GRO on at the receiver" in tcp


def test_no_effect_feature_is_listed_as_such(written):
    _, md, _ = written
    none = _section(md, "### No measurable effect here")
    assert "Rx checksumming at the receiver (TCP)" in none
    assert "TSO at the transmitter (UDP)" in none
    recs = md[md.index("## Recommendations"):md.index("### No measurable effect here")]
    assert "Rx checksumming" not in recs


def test_fixed_feature_is_reported_not_applied(written, results):
    _, md, _ = written
    assert "rx-vlan-offload at the receiver (rxvlan-off" in _section(
        md, "### Requested but not in force")
    assert "rx-vlan-offload" not in _section(md, "### No measurable effect here")
    model = build_report_model(results)
    fixed = [w for w in model.warnings if isinstance(w, OffloadNotAsRequested)]
    assert {(w.feature, w.wanted, w.got, w.fixed) for w in fixed} == {
        ("rx-vlan-offload", False, True, True)}


def test_noisy_case_is_flagged_with_advice(results):
    model = build_report_model(results)
    noisy = [w for w in model.warnings if isinstance(w, HighVariation)]
    keys = {w.case_key for w in noisy if w.metric == "throughput"}
    assert "veth/mtu1500/rx:gro-off/tcp" in keys
    assert "veth/mtu1500/tx:all-on/tcp" not in keys
    gro = next(w for w in noisy if w.case_key == "veth/mtu1500/rx:gro-off/tcp")
    assert f"~{gro.runs_suggested} runs" in gro.message and gro.runs_suggested > 5
    assert "--runs" in gro.advice


def test_cpu_table_has_the_seed_shape(results):
    model = build_report_model(results)
    group = next(g for g in model.groups if g.slug == "veth-mtu1500-tcp-tx")
    table = cpu_table(group)
    assert table.header == ("", "all-on", "tso-off", "tso-csum-off", "tso-csum-gso-off")
    assert [r[0] for r in table.rows] == [
        f"CPU {role} %{cls}" for role in ("sender", "receiver")
        for cls in ("usr", "sys", "irq", "soft", "idle")
    ] + ["CPU total % (all cores)", "CPU % per Gbps"]
    for row in table.rows:
        assert all(re.fullmatch(r"\d+\.\d+±\d+\.\d+", cell) for cell in row[1:]), row
    sender_sys = dict((r[0], r[1:]) for r in table.rows)["CPU sender %sys"]
    assert [float(c.split("±")[0]) for c in sender_sys] == pytest.approx(
        [55, 80, 85, 95], abs=1.0)
    assert render_table(table).splitlines()[1] == "| :--- | ---: | ---: | ---: | ---: |"


def test_markdown_throughput_table_rows(written):
    _, md, _ = written
    section = _section(md, "### veth · MTU 1500 · tcp · transmitter")
    rows = [l for l in section.splitlines() if l.startswith("| ")]
    assert rows[0].startswith("| Profile | Offloads off | n | Throughput (Gbit/s) mean ± std (CV%)")
    names = [r.split(" | ")[0].lstrip("| ") for r in rows[2:6]]
    assert names == ["all-on (baseline)", "tso-off", "tso-csum-off", "tso-csum-gso-off"]
    tso = rows[3].split(" | ")
    assert tso[1] == "TSO" and tso[2] == "5"
    assert re.fullmatch(r"1[12]\.\d ± 0\.\d \(\d\.\d%\)", tso[3])
    assert tso[5].startswith("+") and "*" in tso[5]  # the effect of having TSO on
    assert "![veth · MTU 1500 · tcp · transmitter](charts/veth-mtu1500-tcp-tx.png)" in section


def test_charts_are_written_beside_the_markdown(written):
    out, md, _ = written
    for name in re.findall(r"\]\((charts/[^)]+\.png)\)", md):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


class _Resources(HTMLParser):
    def __init__(self):
        super().__init__()
        self.refs = []

    def handle_starttag(self, tag, attrs):
        self.refs += [(tag, k, v) for k, v in attrs if k in ("src", "href") and v is not None]


def test_html_is_self_contained(written):
    _, _, html = written
    parser = _Resources()
    parser.feed(html)
    assert parser.refs, "expected images and anchors"
    for tag, attr, value in parser.refs:
        assert value.startswith("#") or value.startswith("data:image/png;base64,"), (tag, value)
    assert sum(1 for t, a, v in parser.refs if t == "img") == 5  # 4 charts and the forest plot
    assert "<link" not in html and "<script" not in html and "@import" not in html
    assert "keep TSO on at the transmitter" in html
    assert "6.18.0-fixture" in html and "Fixture CPU" in html


def test_single_run_report_does_not_claim_significance(tmp_path):
    path = tmp_path / "one.sqlite"
    run_id = build_store(path, runs=1)
    with Store(path) as store:
        results = store.load_run(run_id)
    md_path, html_path = write_report(results, tmp_path / "out")
    md = md_path.read_text()
    assert "No offload had a significant effect in this run." in md
    assert "one run per profile" in md
    assert "(1 run)" in md and html_path.exists()


def test_interrupted_run_reports_missing_repetitions(tmp_path, results):
    from dataclasses import replace

    samples = dict(results.samples)
    first = results.cases[0].key
    samples[first] = samples[first][:2]
    cut = replace(results, samples=samples, status="interrupted")
    md_path, _ = write_report(cut, tmp_path)
    md = md_path.read_text()
    assert "Missing repetitions (1)" in md and f"{first}: 2 of 5 repetitions stored" in md
    assert "| Status | interrupted |" in md


def test_planned_repetitions_from_run_settings(tmp_path, results):
    from dataclasses import replace

    from offlab.records import RunSettings

    planned = replace(results, info=replace(results.info, settings=RunSettings(repetitions=6)))
    model = build_report_model(planned)
    missing = [w for w in model.warnings if type(w).__name__ == "IncompleteCase"]
    assert len(missing) == len(results.cases) and all(w.wanted == 6 for w in missing)


def test_run_without_samples_still_gives_a_report(tmp_path, results):
    from dataclasses import replace

    empty = replace(results, samples={c.key: () for c in results.cases}, status="failed")
    md_path, html_path = write_report(empty, tmp_path)
    md = md_path.read_text()
    assert "| Status | failed |" in md and "Nothing was compared" in md
    assert "0 of 5 repetitions stored" in md  # the run recorded that it planned 5
    assert "<img" not in html_path.read_text()


def test_samples_without_cpu_or_offload_state(tmp_path, results):
    from dataclasses import replace

    bare = {
        key: tuple(replace(s, cpu=(), roles={}, offloads={}) for s in samples)
        for key, samples in results.samples.items()
    }
    model = build_report_model(replace(results, samples=bare))
    titles = dict(model.recommendations.goals)
    assert "To increase TCP throughput" in titles
    assert "To improve TCP CPU performance" not in titles
    # without read-back, the request is taken at its word: rx-vlan is now "no effect"
    assert any("rx-vlan-offload" in n.sentence() for n in model.recommendations.no_effect)
    md_path, _ = write_report(replace(results, samples=bare), tmp_path)
    assert "CPU % per Gbps" in md_path.read_text()


def test_each_goal_starts_with_the_seed_style_digest(written):
    _, md, _ = written
    tcp = _section(md, "### To increase TCP throughput")
    digest = next(l for l in tcp.splitlines() if l.startswith("**"))
    assert digest.startswith("**Keep GSO on at the transmitter; keep TSO on at the transmitter")
    assert "keep GRO on at the receiver" in digest


def test_adaptive_runs_report_only_cases_stopped_before_their_rule(results):
    """With adaptive repetitions cases stop at different counts by design: one stored
    outcome per case means it finished; a case without one (the run was cut) is short,
    and so is a capacity search (the rule's minimum, no outcome) below that minimum."""
    from dataclasses import replace

    from offlab.analysis.adaptive import AdaptiveOutcome
    from offlab.records import RunSettings

    settings = RunSettings(repetitions=3, ci_target=0.1, min_runs=3, max_runs=6)
    cases = list(results.cases)
    keys = [c.key for c in cases]
    samples = dict(results.samples)
    samples[keys[0]] = samples[keys[0]][:3]  # narrow enough after 3; the others took 5
    capacity = replace(cases[3], traffic=replace(cases[3].traffic, mode="capacity"))
    cases[3] = capacity
    samples[capacity.key] = samples.pop(keys[3])[:3]
    outcomes = {k: AdaptiveOutcome(k, 0.1, 3, 6, len(samples[k]), 0.05, True)
                for k in keys if k != keys[3]}
    finished = replace(results, cases=tuple(cases), samples=samples, adaptive=outcomes,
                       info=replace(results.info, settings=settings))

    def missing(run):
        return {w.case_key: w for w in build_report_model(run).warnings if type(w).__name__ == "IncompleteCase"}

    assert missing(finished) == {}
    samples = dict(samples)
    samples[keys[1]] = samples[keys[1]][:2]
    samples[capacity.key] = samples[capacity.key][:2]
    cut = replace(finished, samples=samples, status="interrupted",
                  adaptive={k: o for k, o in outcomes.items() if k not in keys[1:3]})
    short = missing(cut)
    assert set(short) == {keys[1], keys[2], capacity.key}
    assert (short[keys[1]].got, short[keys[1]].wanted, short[keys[1]].up_to) == (2, 3, False)
    assert (short[keys[2]].got, short[keys[2]].wanted, short[keys[2]].up_to) == (5, 6, True)
    assert "5 repetitions stored, of up to 6" in short[keys[2]].message
    assert (short[capacity.key].got, short[capacity.key].wanted) == (2, 3)


def test_a_case_that_missed_its_precision_target_is_labelled_and_advises_nothing(results):
    """GRO off (CV ~6 %) stopped at its maximum runs above a ±2 % target: its row says so,
    its step is listed as measured less precisely than asked, and GRO gets no advice."""
    import dataclasses

    from offlab.analysis.adaptive import AdaptiveOutcome
    from offlab.report.markdown import render_markdown

    key = "veth/mtu1500/rx:gro-off/tcp"
    missed = AdaptiveOutcome(key, 0.02, 3, 5, 5, 0.071, reached=False)
    model = build_report_model(dataclasses.replace(results, adaptive={key: missed}))
    md = render_markdown(model, {})
    row = next(l for l in _section(md, "### veth · MTU 1500 · tcp · receiver").splitlines()
               if l.startswith("| gro-off"))
    assert "⚠ precision target missed" in row
    held = _section(md, "### Measured less precisely than the run asked (shown, not advised)")
    assert "GRO at the receiver" in held and "±7.1% after 5 runs, target ±2%" in held
    assert "keep GRO on" not in _section(md, "### To increase TCP throughput")
