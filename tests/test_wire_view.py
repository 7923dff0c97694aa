"""Packets per second, bytes per packet at both ends and the receive path, from a
sample's recorded device counters and offload read-back (issue 37)."""

from types import SimpleNamespace as NS

from offlab.records import FeatureState
from offlab.report.wire_view import packet_cells, receive_path

GRO, TSO = "generic-receive-offload", "tcp-segmentation-offload"


def _row(counters, state):
    return NS(samples=[NS(counters=counters, roles={"sender": 0, "receiver": 1})], offload_state=state,
              case=NS(traffic=NS(protocol="tcp")))


def test_the_nic_wire_shows_super_packets_leaving_and_mtu_frames_arriving():
    # Recorded shape of a tx-sequence sample with TSO on, 2.0 s window.
    counters = {"cpu_window_s": 2.0,
                "window:tx:dev.ofl-v0.tx_packets": 40_000, "window:tx:dev.ofl-v0.tx_bytes": 40_000 * 54_349,
                "window:rx:dev.ofl-v1.rx_packets": 1_440_000, "window:rx:dev.ofl-v1.rx_bytes": 1_440_000 * 1_514}
    state = {"tx:ofl-v0": {TSO: FeatureState(True)}, "wire:ofl-w1": {TSO: FeatureState(False)},
             "rx:ofl-v1": {GRO: FeatureState(True)}}
    rates, sizes = packet_cells(_row(counters, state))
    assert rates == "20k · 720k" and sizes == "54,349 · 1,514"
    assert receive_path(_row(counters, state)) == "NAPI + GRO (threaded, core 1)"


def test_veths_own_wire_with_tso_on_is_the_backlog_and_says_why():
    state = {"tx:ofl-v0": {TSO: FeatureState(True)}, "rx:ofl-v1": {GRO: FeatureState(True)}}
    assert receive_path(_row({}, state)) == "backlog, no GRO (sender's TSO on; RPS, core 1)"
    state["rx:ofl-v1"] = {GRO: FeatureState(False)}
    assert receive_path(_row({}, state)).startswith("backlog, no GRO (GRO off")


def test_without_window_counters_the_size_is_over_the_whole_test():
    counters = {"tx:dev.ofl-v0.tx_packets": 100, "tx:dev.ofl-v0.tx_bytes": 150_000,
                "rx:dev.ofl-v1.rx_packets": 100, "rx:dev.ofl-v1.rx_bytes": 150_000}
    assert packet_cells(_row(counters, {})) == ("–", "1,500 · 1,500 (whole test)")
    assert packet_cells(_row({}, {})) == ("–", "–")
