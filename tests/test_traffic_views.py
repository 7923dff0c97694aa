"""Latency and capacity views from recorded counters and probes."""

from offlab.measure import rtthist
from offlab.records import CaseSpec, OffloadProfile, RateProbe, Sample, TrafficSpec
from offlab.report.model import profile_row
from offlab.report.capacity_limits import buffer_bound, verdict
from offlab.report.capacity_view import HEADER, capacity_sections
from offlab.report.latency_view import latency_charts, latency_sections

ALL_ON = OffloadProfile("all-on", "both", {})
TSO_OFF = OffloadProfile("tso-off", "tx", {"tcp-segmentation-offload": False})


def _latency_row(profile, p99, with_histograms=True, per_run=600, p50=100.0):
    case = CaseSpec("bare", 1500, profile, TrafficSpec("tcp", 2.0, latency_probe=True))
    samples = []
    for i in range(3):
        rtts = [p50 + (i % 2)] * (per_run - 10) + [p99 + i] * 9 + [3 * p99]
        counters = {"rtt_p50_us": 100.0, "rtt_p99_us": p99 + i, "rtt_p999_us": 2 * p99, "rtt_lost": 1.0,
                    "rtt_samples": float(per_run)}
        if with_histograms:
            counters.update(rtthist.to_counters(rtthist.histogram(rtts), "rtt"))
        samples.append(Sample(case.key, i, 0.0, 2.0, 10e9, 10e9, counters=counters))
    return profile_row(case, tuple(samples))


def test_latency_table_pools_runs_shows_n_and_gives_a_tail_only_where_n_carries_it():
    rows = [_latency_row(ALL_ON, 900.0), _latency_row(TSO_OFF, 400.0, per_run=200)]
    (section,) = latency_sections(rows)
    (caption, table), = section.tables
    assert "bare · MTU 1500" in caption
    assert table.header[2:] == ("n", "p50 (µs)", "p99 (µs)", "p99.9 (µs)", "lost")
    on, off = (dict(zip(table.header, r)) for r in table.rows)
    assert on["Profile"] == "both:all-on" and on["n"] == "1800" and on["lost"] == "3"
    assert on["p99 (µs)"].startswith("9") and "[" in on["p99 (µs)"]  # value [CI]
    assert on["p99.9 (µs)"] != "n < 1000" and off["n"] == "600" and off["p99.9 (µs)"] == "n < 1000"
    assert set(latency_charts(rows)) == {"latency-rtt"}


def test_the_latency_sections_opening_sentence_follows_its_data():
    """Issue 37: the section opened "offloads trade latency for throughput" while its own
    tables gave all on the lowest p50."""
    lowest = [_latency_row(ALL_ON, 900.0, p50=45.0), _latency_row(TSO_OFF, 900.0, p50=60.0)]
    (section,) = latency_sections(lowest)
    assert section.intro.startswith("With every offload on, the median round trip was the lowest in 1 of 1 "
                                    "comparisons")
    assert "no latency cost" in section.intro and "traded latency" not in section.intro
    assert "trade latency for throughput" not in section.intro
    highest = [_latency_row(ALL_ON, 900.0, p50=80.0), _latency_row(TSO_OFF, 900.0, p50=45.0)]
    (section,) = latency_sections(highest)
    assert "the highest in 1 of 1" in section.intro and "intervals apart" in section.intro
    assert "the offloads traded latency for throughput" in section.intro
    (alone,) = latency_sections([_latency_row(TSO_OFF, 900.0)])
    assert alone.intro.startswith("No all-on profile")


def test_an_older_store_without_histograms_falls_back_to_per_run_percentiles():
    (section,) = latency_sections([_latency_row(ALL_ON, 900.0, with_histograms=False, per_run=100)])
    cells = dict(zip(section.tables[0][1].header, section.tables[0][1].rows[0]))
    assert cells["n"] == "300" and cells["p99 (µs)"].startswith("901") and cells["p99.9 (µs)"] == "n < 1000"
    assert latency_charts([_latency_row(ALL_ON, 900.0, with_histograms=False)]) == {}


def _capacity_row(payload, counters, throughput=2.0e9, runs=3, per_run=None):
    """A capacity row; `per_run` gives each run's (throughput, counters over `counters`)."""
    traffic = TrafficSpec("udp", 2.0, udp_payload=payload, mode="capacity")
    case = CaseSpec("bare", 1500, ALL_ON, traffic)
    probes = (RateProbe(0.0, 8e9, 2e9, 75.0), RateProbe(2.4e9, 2.4e9, 2.3e9, 4.0),
              RateProbe(2.0e9, 2.0e9, 2.0e9, 0.05), RateProbe(2.0e9, 2.0e9, 2.0e9, 0.0))
    per_run = per_run or [(throughput * (1 + 0.01 * i), {}) for i in range(runs)]
    samples = tuple(Sample(case.key, i, 0.0, 2.0, rate, rate, lost_packets=0, total_packets=1000,
                           probes=probes, counters={**counters, **own}) for i, (rate, own) in enumerate(per_run))
    return profile_row(case, samples)


VERIFIED = {"capacity_probes": 3.0, "capacity_verified": 1.0, "capacity_sender_bound": 0.0, "loss_lost": 0.0}


def test_capacity_table_names_the_verified_rate_the_loss_cause_and_the_limit():
    saturated = {**VERIFIED, "limit_loss_lost": 900.0, "limit_loss_rcvbuf": 880.0, "limit_receiver_app_pct": 99.0}
    (section,) = capacity_sections([_capacity_row(1472, saturated)])
    (_, table), = section.tables
    row = dict(zip(table.header, table.rows[0]))
    assert row["Traffic"] == "udp1472-capacity" and row["Capacity (Gbit/s)"].startswith("2.02")
    assert "\u26a0" not in row["Capacity (Gbit/s)"]  # a saturated receiver is the path's limit
    assert row["Verified"] == "3 of 3" and row["Loss % there: cause"].endswith(": none")
    assert row["Bounded by"] == "the receiving application at 99 % (3 of 3); packets fell at: receiver socket buffer (3 of 3)"
    assert row["Cores at the limit"] == "app 99 %" and row["Advice from it"] == "yes"
    assert row["Trials per run"] == "4.0" and row["Mpackets/s"] == "—" and row["CV"] == "1 %"
    assert "5%" in section.intro and "verification trial" in section.intro and "iperf3 3.12" in section.intro


def test_a_buffer_overflow_under_a_saturated_receiver_core_is_the_receivers_limit():
    """The receive softirq starves the application on its own core: the socket buffer
    overflows with the application far from busy, yet the core is saturated — the path's
    receive processing is the limit, not a scheduling hiccup."""
    starved = {**VERIFIED, "limit_loss_lost": 900.0, "limit_loss_rcvbuf": 880.0, "limit_receiver_app_pct": 30.0,
               "limit_sender_core_pct": 71.0, "limit_receiver_core_pct": 98.0, "limit_receiver_core_soft_pct": 64.0}
    row = _capacity_row(1472, starved)
    assert not buffer_bound(row)
    cells = dict(zip(HEADER, capacity_sections([row])[0].tables[0][1].rows[0]))
    assert cells["Cores at the limit"] == "tx 71 % · rx 98 % (soft 64 %) · app 30 %"
    assert cells["Bounded by"] == "the receiver's core at 98 % (3 of 3); packets fell at: receiver socket buffer (3 of 3)"
    assert "\u26a0" not in cells["Capacity (Gbit/s)"]
    udpload = TrafficSpec("udp", 2.0, udp_payload=1472, mode="capacity", generator="udpload")
    (section,) = capacity_sections([profile_row(CaseSpec("bare", 1500, ALL_ON, udpload), row.samples)])
    assert "offlab-udpload" in section.intro and "recvmmsg" in section.intro and "iperf3 3.12" not in section.intro


def test_a_capacity_bounded_by_a_buffer_under_an_idle_receiver_is_flagged_and_not_advice():
    hiccup = {**VERIFIED, "limit_loss_lost": 900.0, "limit_loss_rcvbuf": 880.0, "limit_receiver_app_pct": 30.0}
    row = _capacity_row(18, hiccup, throughput=0.1e9)
    assert buffer_bound(row)
    from offlab.report.model import is_all_on  # a profile turning UDP GRO forwarding on is no baseline
    gro_fwd = OffloadProfile("udp-gro-fwd-on", "rx", {"rx-udp-gro-forwarding": True})
    assert is_all_on(row.case) and not is_all_on(CaseSpec("bare", 1500, gro_fwd, row.case.traffic))
    (section,) = capacity_sections([row])
    cells = dict(zip(section.tables[0][1].header, section.tables[0][1].rows[0]))
    assert cells["Capacity (Gbit/s)"].endswith("\u26a0")
    assert cells["Mpackets/s"].startswith("0.70")  # 0.1 Gbit/s of 18 B payloads
    sender = _capacity_row(1472, {**VERIFIED, "capacity_sender_bound": 1.0})
    assert not buffer_bound(sender)
    assert dict(zip(HEADER, capacity_sections([sender])[0].tables[0][1].rows[0]))["Bounded by"] == \
        "the sender's maximum rate (3 of 3)"


def test_bounded_by_names_the_saturated_core_before_where_the_packets_fell():
    """Issue 37: "bounded by: sender device queue" while the receiver's core was at
    99-100 % — a veth sender's queue overflows because the receiving CPU is behind."""
    spilled = {**VERIFIED, "limit_loss_lost": 900.0, "limit_loss_txqueue": 900.0, "limit_receiver_app_pct": 20.0,
               "limit_sender_core_pct": 60.0, "limit_receiver_core_pct": 99.5, "limit_receiver_core_soft_pct": 80.0}
    cells = dict(zip(HEADER, capacity_sections([_capacity_row(1472, spilled)])[0].tables[0][1].rows[0]))
    assert cells["Bounded by"] == ("the receiver's core at 100 % (3 of 3); "
                                   "packets fell at: sender device queue (3 of 3)")
    idle = {**spilled, "limit_receiver_core_pct": 40.0}
    cells = dict(zip(HEADER, capacity_sections([_capacity_row(1472, idle)])[0].tables[0][1].rows[0]))
    assert cells["Bounded by"] == "no core at its limit; packets fell at: sender device queue (3 of 3)"


def test_a_capacity_is_the_mean_of_its_verified_runs_only_and_a_failed_run_advises_nothing():
    """Issue 37: the bare mean included the run whose verification failed (at 3.31 Gbit/s)."""
    failed = {"capacity_verified": 0.0, "loss_lost": 600.0}
    row = _capacity_row(1472, VERIFIED, per_run=[(2.0e9, {}), (3.31e9, failed), (2.02e9, {})])
    assert row.throughput.values == (2.0, 2.02) and row.throughput.mean == 2.01
    judged = verdict(row)
    assert judged.verified == 2 and judged.runs == 3 and not judged.advisable
    assert judged.reason.startswith("1 of 3 runs lost more than 0.1 % in every verification trial")
    cells = dict(zip(HEADER, capacity_sections([row])[0].tables[0][1].rows[0]))
    assert cells["Capacity (Gbit/s)"] == "2.01±0.01 \u26a0" and cells["Verified"] == "2 of 3"
    assert cells["Advice from it"].startswith("no: 1 of 3 runs")


def test_a_capacity_row_above_the_cv_bound_says_why_and_advises_nothing():
    """Issue 37: tx:txcsum-off had CV 18 % and still gave advice; loss was not monotone in
    the offered rate (a probe passed above one that failed)."""
    knees = [(2.0e9, {"capacity_monotone": 0.0}), (2.6e9, {}), (1.9e9, {"capacity_monotone": 0.0})]
    row = _capacity_row(1472, {**VERIFIED, "capacity_monotone": 1.0}, per_run=knees)
    judged = verdict(row)
    assert row.throughput.cv > 0.15 and not judged.advisable
    assert judged.reason.startswith("CV 17 % above 15 %: loss was not monotone in the offered rate in 2 of 3 runs")
    steady = verdict(_capacity_row(1472, VERIFIED))
    assert steady.advisable and steady.reason is None


def test_the_advice_reads_the_capacity_verdict():
    """validity.exclusion sets a step apart when either capacity row is not advisable."""
    from offlab.report.model import CaseGroup
    from offlab.report.recommend import group_steps
    from offlab.report.validity import exclusion
    steady = _capacity_row(1472, VERIFIED)
    knees = [(2.0e9, {}), (2.6e9, {}), (1.9e9, {})]
    spread = _capacity_row(1472, VERIFIED, per_run=knees)
    spread = profile_row(CaseSpec("bare", 1500, TSO_OFF, spread.case.traffic), spread.samples)
    (step,) = group_steps(CaseGroup("bare", 1500, steady.case.traffic, "tx", steady, (steady, spread)))
    why = exclusion(step, virtual_devices=False)
    assert why.label == "capacity not advisable" and why.why.startswith("tso-off's UDP capacity: CV 17 %")
