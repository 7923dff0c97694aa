"""Results format 1 → 2: a store written by the format-1 release (tests/fixtures/
v1_store.sql.gz, made by make_v1_store.py) is upgraded on open; its cases become the
cases today's plans expand to, its reports are those of the same run written today,
and `offlab compare` matches a migrated run with a new one."""

from __future__ import annotations

import gzip
import sqlite3
from dataclasses import replace
from importlib import resources
from pathlib import Path

import pytest

from offlab.report.comparison import compare
from offlab.run.plan import load, parse
from offlab.records import Params, RunSettings
from offlab.report.document import build_report_model
from offlab.report.markdown import render_markdown
from offlab.store.schema import FORMAT_VERSION
from offlab.store.store import Store, StoreError

FIXTURE = Path(__file__).parent / "fixtures" / "v1_store.sql.gz"
RUNS = ("quick", "middlebox", "userspace", "vxlan", "msgsize")


@pytest.fixture()
def v1_path(tmp_path: Path) -> Path:
    path = tmp_path / "v1.sqlite"
    connection = sqlite3.connect(path)
    connection.executescript(gzip.decompress(FIXTURE.read_bytes()).decode())
    connection.close()
    return path


QUICK_V1 = """
name = "quick"
runs = 3
duration = 1.5
warmup = 0.5
scenarios = ["bare", "vxlan"]
mtus = [1500]
traffic = ["tcp", "udp1472"]
sequences = ["tx", "rx"]
transmitter_wire = "veth-superpackets"
"""
"""The quick plan as the format-1 release shipped it (today's adds an MTU wire for the
receiver, the UDP capacity search and the latency probe), on the wire it had: veth's own."""


def _on_veths_wire(cases):
    """Format-1 runs predate the `wire` parameter (issue 37): their cases are today's on
    veth's own wire, which they spelled with no parameter and no variant name."""
    out = []
    for case in cases:
        if case.topology.get("wire") == "veth-superpackets":
            case = replace(case, topology=Params({k: v for k, v in case.topology.items() if k != "wire"}),
                           label=case.label.removesuffix("-veth-superpackets").removeprefix(case.scenario))
        out.append(case)
    return tuple(out)


def _planned(name: str):
    """The cases the fixture's run was made of, as today's plan expands them."""
    if name == "quick":
        return _on_veths_wire(parse(QUICK_V1, "quick").cases)
    if name == "middlebox":
        text = (resources.files("offlab") / "plans" / "middlebox.toml").read_text()
        return parse(text.replace('router = ["kernel"]', 'router = ["kernel", "offlab-fwd"]'), "mb").cases
    cases = load(name).cases
    if name == "msgsize":
        text = (resources.files("offlab") / "plans" / "msgsize.toml").read_text()
        cases = _on_veths_wire(parse('transmitter_wire = "veth-superpackets"\n' + text, "msgsize").cases)
        cases = tuple(c for c in cases if c.traffic.message_size in (None, 64, 65536))
    return cases


def test_v1_store_opens_as_the_current_format(v1_path: Path):
    with Store(v1_path) as store:
        assert len(store.runs()) == len(RUNS)
    version = sqlite3.connect(v1_path).execute(
        "SELECT value FROM meta WHERE key = 'format_version'").fetchone()[0]
    assert int(version) == FORMAT_VERSION == 4


@pytest.mark.parametrize("name", RUNS)
def test_migrated_cases_are_todays_cases(v1_path: Path, name: str):
    with Store(v1_path) as store:
        results = store.load_run(f"v1-{name}")
    assert results.cases == tuple(_planned(name))
    for case in results.cases:
        assert not any(f.startswith(("fwd.", "port.", "veth.")) for f in case.profile.features)
        for sample in results.samples[case.key]:
            assert "fwd" not in sample.offloads and not any(i.startswith("tap:") for i in sample.offloads)
            assert ("fwd" in sample.datapath) == (case.datapath is not None)


def test_run_settings_leave_the_notes(v1_path: Path):
    with Store(v1_path) as store:
        quick = store.load_run("v1-quick").info
        middlebox = store.load_run("v1-middlebox").info
    assert quick.settings == RunSettings(repetitions=2, steer_rx_softirq=True)
    assert middlebox.settings == RunSettings(2, True, ci_target=0.05, min_runs=3, max_runs=5)
    assert quick.notes == "" and middlebox.notes == ""


@pytest.mark.parametrize("name", RUNS)
def test_migrated_run_reports_as_the_same_run_written_today(v1_path: Path, tmp_path: Path, name: str):
    with Store(v1_path) as store:
        migrated = store.load_run(f"v1-{name}")
    with Store(tmp_path / "today.sqlite") as store:
        store.begin_run(migrated.info)
        for case in migrated.cases:
            store.add_case(migrated.info.run_id, case)
            for sample in migrated.samples[case.key]:
                store.add_sample(migrated.info.run_id, case, sample)
        store.finish_run(migrated.info.run_id, migrated.status, migrated.finished_at)
        today = store.load_run(migrated.info.run_id)
    assert today == migrated
    # The whole Markdown report (charts are drawn from the same model, not compared).
    assert render_markdown(build_report_model(migrated), {}) == render_markdown(build_report_model(today), {})


def test_compare_a_migrated_run_with_a_new_one(v1_path: Path):
    with Store(v1_path) as store:
        migrated = store.load_run("v1-quick")
    faster = {k: tuple(replace(s, throughput_bps=s.throughput_bps * 1.5) for s in v)
              for k, v in migrated.samples.items()}
    new = replace(migrated, info=replace(migrated.info, run_id="new-quick"), samples=faster)
    comparison = compare(migrated, new)
    assert len(comparison.matched) == len(migrated.cases) and not comparison.only_a
    assert all(c.throughput is not None and c.throughput.ratio == pytest.approx(0.5, abs=0.01)
               for c in comparison.matched)


def test_a_newer_format_is_refused(v1_path: Path):
    sqlite3.connect(v1_path).execute("UPDATE meta SET value = '99' WHERE key = 'format_version'").connection.commit()
    with pytest.raises(StoreError, match="from a newer offlab"):
        Store(v1_path)
