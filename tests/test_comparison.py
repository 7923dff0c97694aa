"""`offlab compare`: matching, significance and rendering, on fixture stores."""

import dataclasses
import random

import pytest

from offlab.report.comparison import compare, render_html, render_markdown, write_comparison
from offlab.store.store import RunResults, Store
from tests.fixtures.make_store import build_store, fixture_cases, make_samples

TCP_ALL_ON = "veth/mtu1500/tx:all-on/tcp"
UDP_GSO_OFF = "veth/mtu1500/tx:tso-csum-gso-off/udp1472"


@pytest.fixture
def base(tmp_path) -> RunResults:
    path = tmp_path / "a.sqlite"
    run_id = build_store(path)
    with Store(path) as store:
        return store.load_run(run_id)


def _variant(base: RunResults, *, scale: dict[str, float], drop: set[str], seed: int) -> RunResults:
    """A second result set from the same model with fresh noise: some cases scaled, some
    missing, and one case that only it has."""
    rng = random.Random(seed)
    samples = {}
    for case in fixture_cases():
        if case.key in drop:
            continue
        factor = scale.get(case.key, 1.0)
        samples[case.key] = tuple(
            dataclasses.replace(s, throughput_bps=s.throughput_bps * factor)
            for s in make_samples(case, rng)
        )
    extra = dataclasses.replace(fixture_cases()[0], mtu=9000)
    samples[extra.key] = tuple(make_samples(fixture_cases()[0], rng))
    cases = tuple(c for c in base.cases if c.key not in drop) + (extra,)
    info = dataclasses.replace(base.info, run_id="second-run", kernel="6.19.0-other")
    return dataclasses.replace(base, info=info, cases=cases, samples=samples)


def test_a_known_change_is_found_with_its_sign_and_size(base):
    other = _variant(base, scale={TCP_ALL_ON: 1.3}, drop=set(), seed=7)
    result = compare(base, other)
    by_key = {m.key: m for m in result.matched}
    change = by_key[TCP_ALL_ON].throughput
    assert change.significant
    assert 0.25 < change.ratio < 0.35
    assert change.ci95[0] < change.ratio < change.ci95[1]
    assert TCP_ALL_ON in {m.key for m in result.significant}


def test_same_model_with_fresh_noise_gives_no_significant_throughput_change(base):
    result = compare(base, _variant(base, scale={}, drop=set(), seed=11))
    assert len(result.matched) == len(base.cases)
    flagged = [m.key for m in result.matched if m.throughput and m.throughput.significant]
    # 5 % false positives are expected at p < 0.05; with 16 cases more than 3 means a bug.
    assert len(flagged) <= 3


def test_cases_in_only_one_set_are_listed(base):
    other = _variant(base, scale={}, drop={UDP_GSO_OFF}, seed=3)
    result = compare(base, other)
    assert result.only_a == (UDP_GSO_OFF,)
    assert result.only_b == ("veth/mtu9000/tx:all-on/tcp",)
    assert UDP_GSO_OFF not in {m.key for m in result.matched}


def test_reports_name_both_runs_and_every_case(base, tmp_path):
    other = _variant(base, scale={TCP_ALL_ON: 1.3}, drop={UDP_GSO_OFF}, seed=5)
    result = compare(base, other)
    md = render_markdown(result)
    assert "fixture-run" in md and "second-run" in md and "6.19.0-other" in md
    line = next(l for l in md.splitlines() if l.startswith(f"| {TCP_ALL_ON} "))
    assert "+" in line and "*" in line
    assert "## Only in A" in md and UDP_GSO_OFF in md
    html = render_html(result)
    assert html.lower().startswith("<!doctype html>")
    assert "src=\"http" not in html and "href=\"http" not in html
    md_path, html_path = write_comparison(result, tmp_path / "cmp")
    assert md_path.read_text() == md and html_path.exists()


def test_two_store_files_with_the_same_run_id_compare_case_by_case(tmp_path):
    # Two machines (or dates) each wrote their own store; ids may even coincide.
    path_a, path_b = tmp_path / "a.sqlite", tmp_path / "b.sqlite"
    run_a, run_b = build_store(path_a, seed=1), build_store(path_b, seed=2)
    with Store(path_a) as a, Store(path_b) as b:
        result = compare(a.load_run(run_a), b.load_run(run_b))
    assert run_a == run_b
    assert len(result.matched) == len(fixture_cases()) and not result.only_a and not result.only_b
    for m in result.matched:
        assert m.throughput is not None and m.throughput.ci95 is not None
        low, high = m.throughput.ci95
        # Same model, fresh noise: the change is small and its CI covers it.
        assert low <= m.throughput.ratio <= high and abs(m.throughput.ratio) < 0.2


def test_a_case_with_one_sample_is_compared_without_a_test(base):
    one = {k: v[:1] for k, v in base.samples.items()}
    other = dataclasses.replace(base, samples=one,
                                info=dataclasses.replace(base.info, run_id="single"))
    result = compare(base, other)
    assert result.matched and not result.significant
    md = render_markdown(result)
    assert "n.s." in md or "–" in md


def test_stack_settings_are_stored_and_their_differences_listed(tmp_path):
    path = tmp_path / "s.sqlite"
    run_id = build_store(path)
    with Store(path) as store:
        store.record_stack(run_id, "veth · MTU 1500", "rx", {"net.ipv4.tcp_congestion_control": "cubic",
                                                             "tool.iperf3": "iperf 3.12"})
        a = store.load_run(run_id)
    assert a.stack == {"veth · MTU 1500": {"rx": {"net.ipv4.tcp_congestion_control": "cubic",
                                                  "tool.iperf3": "iperf 3.12"}}}
    b = dataclasses.replace(a, info=dataclasses.replace(a.info, run_id="b"),
                            stack={"veth · MTU 1500": {"rx": {"net.ipv4.tcp_congestion_control": "bbr",
                                                              "tool.iperf3": "iperf 3.12"}}})
    found = compare(a, b)
    assert "veth · MTU 1500 rx net.ipv4.tcp_congestion_control: cubic → bbr" in found.environment
    assert "cubic → bbr" in render_markdown(found)
    with Store(path, readonly=True) as store:  # read-only readers see it too
        assert store.load_run(run_id).stack == a.stack
