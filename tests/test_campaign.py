"""Fleet files (`[[pair]]` tables) and the campaign report, without servers: parsing and
its one-line errors, the waves of pairs that share no host, and the pairs side by side
from stored runs. The live campaign is tests/integration/test_campaign_live.py."""

from __future__ import annotations

import random
import tomllib
from dataclasses import replace

import pytest

from fixtures.make_store import fixture_cases, fixture_run_info, make_samples
from offlab.run.campaign import load_hosts, parse_fleet
from offlab.report.campaign_report import group_tables, pairs_table, render_markdown
from offlab.hosts.hostsfile import HostsFileError
from offlab.store.store import Store


def _pair(name: str, sender: str, receiver: str) -> str:
    text = f'\n[[pair]]\nname = "{name}"\n'
    for role, ssh, address, peer in (("sender", sender, "10.0.0.1", "10.0.0.2"),
                                     ("receiver", receiver, "10.0.0.2", "10.0.0.1")):
        text += (f'[pair.{role}]\nssh = "{ssh}"\ninterface = "eth1"\naddress = "{address}"\n'
                 f'peer = "{peer}"\napp_core = 1\n')
    return text


def test_pairs_sharing_no_host_share_a_wave(tmp_path):
    path, config = tmp_path / "fleet.toml", tmp_path / "cfg"
    config.write_text("")
    path.write_text(f'ssh_config = "{config}"\n' + _pair("ab", "a", "b") + _pair("cd", "c", "d")
                    + _pair("ca", "c", "a") + _pair("ef", "e", "f"))
    fleet = load_hosts(path)
    assert [[p.name for p in wave] for wave in fleet.waves()] == [["ab", "cd", "ef"], ["ca"]]
    assert fleet.pair("cd").hosts.hosts["sender"].ssh == "c" and fleet.pair("cd").hosts.ssh_config == str(config)


@pytest.mark.parametrize("fleet", [False, True])
def test_an_ssh_config_others_could_write_is_refused_for_one_pair_and_for_a_fleet(tmp_path, fleet):
    path, config = tmp_path / "hosts.toml", tmp_path / "cfg"
    config.write_text("")
    config.chmod(0o666)
    pair = _pair("ab", "a", "b")
    if not fleet:
        pair = pair.replace("[[pair]]\nname = \"ab\"\n", "").replace("pair.", "")
    path.write_text(f'ssh_config = "{config}"\n' + pair)
    with pytest.raises(HostsFileError, match="writable by others"):
        load_hosts(path)


def test_a_plain_hosts_file_is_still_one_pair(tmp_path):
    path = tmp_path / "hosts.toml"
    path.write_text(_pair("x", "a", "b").replace("[[pair]]\nname = \"x\"\n", "").replace("pair.", ""))
    assert set(load_hosts(path).hosts) == {"sender", "receiver"}


@pytest.mark.parametrize("text, said", [
    (_pair("ab", "a", "b") + _pair("ab", "c", "d"), "two pairs are named 'ab'"),
    (_pair("ab", "a", "b").replace('name = "ab"\n', ""), "pair 1 needs name"),
    (_pair("ab", "a", "b").replace("[pair.receiver]", "[pair.other]"), "unknown key 'other'"),
    ('[sender]\nssh = "a"\n' + _pair("ab", "a", "b"), "[sender] beside [[pair]] tables"),
    (_pair("ab", "a", "b").replace("app_core = 1", "app_core = -1", 1), "pair ab: [sender]: app_core"),
    ('pair = "x"\n', "pair must be [[pair]] tables"),
])
def test_a_bad_fleet_file_is_one_line(text, said):
    with pytest.raises(HostsFileError) as refused:
        parse_fleet(tomllib.loads(text), "fleet.toml")
    assert said in str(refused.value) and "\n" not in str(refused.value)


def test_an_unknown_pair(tmp_path):
    path = tmp_path / "fleet.toml"
    path.write_text(_pair("ab", "a", "b"))
    with pytest.raises(HostsFileError, match="no pair named 'zz'; its pairs: ab"):
        load_hosts(path).pair("zz")


def test_the_campaign_report_sets_the_pairs_side_by_side(store_at):
    cases = fixture_cases()[:4]  # the transmitter sequence: all on and three profiles off
    with Store(store_at) as store:
        for pair, scale, driver in (("ice", 1.0, "ice"), ("mlx5", 1.3, "mlx5_core")):
            info = replace(fixture_run_info(), run_id=f"run-{pair}",
                           host_facts={"sender": {"ssh": f"{pair}-1", "nic driver": driver},
                                       "receiver": {"ssh": f"{pair}-2", "nic driver": driver}})
            store.begin_run(info, campaign=("campaign-x", pair))
            for case in cases:
                for sample in make_samples(case, random.Random(pair), runs=5):
                    store.add_sample(info.run_id, case, replace(sample, throughput_bps=sample.throughput_bps * scale))
            store.finish_run(info.run_id, "complete")
        assert store.campaign_runs("campaign-x") == [("run-ice", "ice"), ("run-mlx5", "mlx5")]
        runs = [(pair, store.load_run(run_id)) for run_id, pair in store.campaign_runs("campaign-x")]
    facts = pairs_table(runs)
    assert [row[:5] for row in facts.rows][:2] == [("ice", "run-ice", "complete", "sender", "ice-1"),
                                                    ("ice", "run-ice", "complete", "receiver", "ice-2")]
    (title, table), = group_tables(runs)
    assert table.header == ("profile", "ice Gbit/s", "ice vs all on", "mlx5 Gbit/s", "mlx5 vs all on")
    assert [row[0] for row in table.rows] == [c.profile.name for c in cases]
    assert table.rows[0][2] == "baseline" and table.rows[1][2].endswith("*")
    text = render_markdown("campaign-x", runs)
    assert text.startswith("# offlab campaign campaign-x") and "software devices" not in text
    veth = [(pair, replace(r, info=replace(r.info, host_facts={"sender": {"nic driver": "veth"}}))) for pair, r in runs]
    assert "Pairs ice, mlx5 test over software devices" in render_markdown("campaign-x", veth)


def test_file_wide_settings_apply_to_every_pair():
    fleet = parse_fleet(tomllib.loads("same_kernel = true\nwatchdog_s = 10\n" + _pair("ab", "a", "b")
                                      + _pair("cd", "c", "d")), "fleet.toml")
    assert all(p.hosts.same_kernel and p.hosts.watchdog_s == 10 for p in fleet.pairs)
    with pytest.raises(HostsFileError, match="watchdog_s"):
        parse_fleet(tomllib.loads("watchdog_s = -1\n" + _pair("ab", "a", "b")), "fleet.toml")
