"""A campaign over two server pairs (four OpenSSH servers in namespaces, sshrig.py's FLEET):
`offlab run --hosts fleet.toml` runs the plan on both pairs at once (they share no
host), each pair its own run tagged with the campaign, both hosts of each pair left
as they were, and a campaign report sets the pairs side by side."""

from __future__ import annotations

import subprocess

import pytest

from offlab.hosts.journal import JOURNAL_DIR
from offlab.run.plan import parse
from offlab.store.store import Store

from .runs import OFFLAB
from .sshrig import FLEET

PAIRS = FLEET.pair_servers()

# Two cases, all on and the transmitter's offloads all off: the campaign report's
# "vs all on" column needs no more, and each case over SSH costs seconds per pair.
PLAN = """
name = "campaign"
runs = 2
duration = 1.0
warmup = 1.0
scenarios = ["bare"]
mtus = [1500]
traffic = ["tcp"]
sequences = ["tx-all-off"]
"""


@pytest.fixture()
def fleet(ssh_rigs):
    with ssh_rigs.use(FLEET) as rig:
        yield rig


def test_a_campaign_runs_both_pairs_at_once_and_reports_them_side_by_side(fleet, tmp_path):
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN)
    out = tmp_path / "r"
    done = subprocess.run([*OFFLAB, "run", "--hosts", str(fleet.hosts_file), "--plan", str(plan),
                           "--out", str(out), "--no-progress", "--yes"], capture_output=True, text=True, timeout=400)
    assert done.returncode == 0, done.stderr + done.stdout
    assert "2 pairs in 1 waves" in done.stderr
    planned = parse(PLAN, "p").cases
    with Store(out / "offlab.sqlite", readonly=True) as store:
        runs = {r.id: store.load_run(r.id) for r in store.runs()}
    assert len(runs) == 2
    campaigns = {r.campaign[0] for r in runs.values()}
    assert len(campaigns) == 1 and campaigns.pop().startswith("campaign-")
    by_pair = {r.campaign[1]: r for r in runs.values()}
    assert set(by_pair) == set(PAIRS)
    for pair, results in by_pair.items():
        left, right = PAIRS[pair]
        assert results.status == "complete" and results.cases == planned
        assert results.info.host_facts["sender"]["ssh"] == f"fleet{left}"
        assert results.info.host_facts["receiver"]["ssh"] == f"fleet{right}"
        assert all(len(results.samples[c.key]) == 2 for c in planned)
    ab, cd = by_pair["pair-ab"], by_pair["pair-cd"]
    assert ab.info.started_at < cd.finished_at and cd.info.started_at < ab.finished_at  # at once
    assert not list(JOURNAL_DIR.glob("fleet[abcd]-*.json"))  # every host restored
    campaign = next(out.glob("campaign-*/campaign.md")).read_text()
    assert "pair-ab Gbit/s" in campaign and "pair-cd vs all on" in campaign and "fleetc" in campaign
    assert "test over software devices" in campaign  # the rig's test links are veth
