"""Latency and capacity views from recorded counters and probes."""

from offlab.records import CaseSpec, OffloadProfile, RateProbe, Sample, TrafficSpec
from offlab.report.model import profile_row
from offlab.report.traffic_views import capacity_sections, latency_charts, latency_sections

ALL_ON = OffloadProfile("all-on", "both", {})
TSO_OFF = OffloadProfile("tso-off", "tx", {"tcp-segmentation-offload": False})


def _latency_row(profile, p99):
    case = CaseSpec("bare", 1500, profile, TrafficSpec("tcp", 2.0, latency_probe=True))
    samples = tuple(Sample(case.key, i, 0.0, 2.0, 10e9, 10e9, counters={
        "rtt_p50_us": 100.0, "rtt_p99_us": p99 + i, "rtt_p999_us": 2 * p99, "rtt_lost": 1.0})
        for i in range(3))
    return profile_row(case, samples)


def test_latency_table_per_profile_with_percentiles_and_losses():
    rows = [_latency_row(ALL_ON, 900.0), _latency_row(TSO_OFF, 400.0)]
    (section,) = latency_sections(rows)
    (caption, table), = section.tables
    assert "bare · MTU 1500" in caption and table.header[2:] == ("p50 (µs)", "p99 (µs)", "p99.9 (µs)", "lost")
    assert table.rows[0][0] == "both:all-on" and table.rows[0][3].startswith("901")
    assert table.rows[1][-1] == "3"
    assert set(latency_charts(rows)) == {"latency-rtt"}


def test_capacity_table_names_the_knee_and_sender_bound_runs():
    traffic = TrafficSpec("udp", 2.0, udp_payload=1472, mode="capacity")
    case = CaseSpec("bare", 1500, ALL_ON, traffic)
    probes = (RateProbe(0.0, 8e9, 2e9, 75.0), RateProbe(2.4e9, 2.4e9, 2.3e9, 4.0),
              RateProbe(2.0e9, 2.0e9, 2.0e9, 0.05))
    samples = tuple(Sample(case.key, i, 0.0, 2.0, 2.0e9, 2.0e9, probes=probes) for i in range(3))
    (section,) = capacity_sections([profile_row(case, samples)])
    (_, table), = section.tables
    row = table.rows[0]
    assert row[1] == "udp1472-capacity" and row[3].startswith("2.00") and row[-1] == "no"
    assert row[5] == "3.0"
