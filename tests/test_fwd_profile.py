"""Unit: a userspace datapath setting → offlab-fwd's argument list, and its stats JSON
(recorded from a real engine-GRO run) → flat sample counters named as offlab-fwd names
them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from offlab.studies.userspace.plan import PROFILES
from offlab.topology.fwd import (FwdConfig, FwdError, PortSpec, counters, delta, find_binary, fwd_args,
                                 parse_stats, port_roles)

FIXTURE = Path(__file__).parent / "fixtures" / "fwd_stats_engine_gro.json"
A_PORT = "tap:ofl-ta@ofl-19453-a"
B_PORT = "tap:ofl-tb@ofl-19453-b"


def config_for(name: str, cpu: int | None = 1) -> FwdConfig:
    setting = PROFILES[name].datapath
    a = PortSpec("tap", "ofl-ta", "ofl-1-a", setting.port("a").offloads)
    b = PortSpec("tap", "ofl-tb", "ofl-1-b", setting.port("b").offloads, setting.port("b").napi)
    return FwdConfig(setting.mode, (a, b), cpu)


def test_engine_gro_profile_gives_gro_mode_and_a_tso_egress():
    args = fwd_args("/bin/offlab-fwd", config_for("engine-gro"), "/tmp/s.json")
    assert args == [
        "/bin/offlab-fwd",
        "--port", "tap:ofl-ta@ofl-1-a,offloads=csum",
        "--port", "tap:ofl-tb@ofl-1-b,offloads=csum+tso4+tso6+ecn",
        "--mode", "gro", "--stats-file", "/tmp/s.json", "--cpu", "1",
    ]


def test_kernel_gro_profile_puts_napi_on_the_egress_tap_only():
    args = fwd_args("fwd", config_for("kernel-gro", cpu=None), "s")
    assert args[1:5] == ["--port", "tap:ofl-ta@ofl-1-a,offloads=csum",
                         "--port", "tap:ofl-tb@ofl-1-b,offloads=csum,napi"]
    assert "--cpu" not in args and args[args.index("--mode") + 1] == "pass"


def test_port_spec_refuses_napi_on_a_packet_port_and_unknown_offloads():
    with pytest.raises(ValueError):
        PortSpec("packet", "ofl-hm", "ns", frozenset({"csum"}), napi=True)
    with pytest.raises(ValueError):
        PortSpec("tap", "ofl-ta", "ns", frozenset({"lro"}))
    assert PortSpec("packet", "ofl-hm", "ns").argument() == "packet:ofl-hm@ns,offloads=none"


def test_recorded_stats_parse_into_role_named_counters():
    stats = parse_stats(FIXTURE.read_text())
    assert (stats.event, stats.mode) == ("stats", "gro")
    roles = port_roles({"ports": [{"port": A_PORT}, {"port": B_PORT}]})
    flat = counters(stats, roles)
    assert flat["fwd:a>b:merged_packets"] == 220481
    assert flat["fwd:a>b:merged_super_packets"] == 8423
    assert flat["fwd:a>b:gro_refused.psh"] == 58
    assert flat["fwd:b>a:rx_packets"] == 3175
    assert all(key.startswith("fwd:") for key in flat)


def test_drops_are_flattened_by_category_and_reason():
    doc = json.loads(FIXTURE.read_text())
    first = next(iter(doc["directions"].values()))
    first["drops"] = {"virtio": {"bad gso size": 3}, "egress": {"no buffer": 1}}
    flat = parse_stats(json.dumps(doc)).directions[f"{A_PORT} -> {B_PORT}"]
    assert flat["drop.virtio.bad gso size"] == 3 and flat["drop.egress.no buffer"] == 1


def test_delta_keeps_only_what_grew():
    assert delta({"x": 5.0, "y": 1.0}, {"x": 7.0, "y": 1.0, "z": 2.0}) == {"x": 2.0, "z": 2.0}


@pytest.mark.parametrize("text", ["not json", "[]", '{"directions": 3}'])
def test_malformed_stats_are_a_typed_error(text):
    with pytest.raises(FwdError):
        parse_stats(text)


def test_missing_binary_says_how_to_build_it(monkeypatch, tmp_path):
    monkeypatch.setenv("OFFLAB_FWD", str(tmp_path / "nope"))
    with pytest.raises(FwdError, match="not an executable"):
        find_binary()


def test_no_binary_anywhere_says_make_build(monkeypatch, tmp_path):
    monkeypatch.delenv("OFFLAB_FWD", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(FwdError, match="build it with `make build`"):
        find_binary(tmp_path / "target" / "release" / "offlab-fwd")




def test_counter_names_come_from_offlab_fwds_own_output():
    """No hand-kept list: a counter offlab-fwd adds is a sample counter at once."""
    doc = json.loads(FIXTURE.read_text())
    first = next(iter(doc["directions"].values()))
    first["tunnel_headers_added"] = 12
    first["gro_refusals"] = {"ttl": {"differs": 2}}
    flat = parse_stats(json.dumps(doc)).directions[f"{A_PORT} -> {B_PORT}"]
    assert flat["tunnel_headers_added"] == 12 and flat["gro_refused.ttl.differs"] == 2
