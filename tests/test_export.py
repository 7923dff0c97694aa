"""JSON and CSV exports of a stored run."""

import csv
import io
import json

import pytest

from fixtures.make_store import RUNS, build_store, fixture_cases
from offlab.store.export import export, export_text
from offlab.records import RESULTS_FORMAT_VERSION
from offlab.store.store import Store


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    path = tmp_path_factory.mktemp("export") / "fixture.sqlite"
    run_id = build_store(path)
    with Store(path) as store:
        return store.load_run(run_id)


def test_json_document_holds_every_sample_and_raw_state(results, tmp_path):
    dest = tmp_path / "out" / "run.json"
    export(results, "json", dest)
    doc = json.loads(dest.read_text())
    assert doc["document"] == "offlab-results"
    assert doc["format_version"] == RESULTS_FORMAT_VERSION
    assert doc["run"]["run_id"] == results.info.run_id and doc["run"]["status"] == "complete"
    assert [c["key"] for c in doc["cases"]] == [c.key for c in fixture_cases()]
    assert sum(len(c["samples"]) for c in doc["cases"]) == len(fixture_cases()) * RUNS
    first_case = results.cases[0]
    sample = results.samples[first_case.key][0]
    exported = doc["cases"][0]["samples"][0]
    assert exported["throughput_bps"] == sample.throughput_bps
    assert exported["cpu"][1] == {"core": 1, "percent": dict(sample.cpu[1].percent)}
    vlan = exported["offloads"]["rx:ofl-v1"]["rx-vlan-offload"]
    assert vlan == {"on": True, "fixed": True, "requested": None}
    assert doc["cases"][0]["traffic"]["label"] == "tcp"


def test_csv_has_one_flat_row_per_sample(results):
    text = export_text(results, "csv")
    rows = list(csv.DictReader(io.StringIO(text)))
    assert len(rows) == len(fixture_cases()) * RUNS
    header = text.splitlines()[0].split(",")
    assert header[:10] == ["run_id", "case_key", "scenario", "mtu", "profile", "side",
                           "profile_features", "traffic", "protocol", "repetition"]
    case = next(c for c in results.cases if c.profile.name == "tso-off")
    row = next(r for r in rows if r["case_key"] == case.key and r["repetition"] == "0")
    sample = results.samples[case.key][0]
    assert float(row["throughput_bps"]) == sample.throughput_bps
    assert row["profile_features"] == "tcp-segmentation-offload=off"
    assert row["offload_tx:ofl-v0_tcp-segmentation-offload"] == "off"
    assert row["offload_rx:ofl-v1_rx-vlan-offload"] == "on [fixed]"
    assert float(row["cpu0_sys"]) == sample.cpu[0].percent["sys"]
    assert row["role_receiver_core"] == "1"
    assert row["lost_packets"] == "" and row["counter_rx_dropped"] == "0"


def test_unknown_format_is_refused(results):
    with pytest.raises(ValueError, match="unknown export format"):
        export_text(results, "xml")
