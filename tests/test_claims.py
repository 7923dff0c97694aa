"""The seeds' claims answered from a run (issue #30, item 7)."""

from offlab.records import CaseSpec, CpuShare, FeatureState, OffloadProfile, RunInfo, RunSettings, Sample, TrafficSpec
from offlab.report.claims import CLAIMS, answers, claims_sections
from offlab.report.document import build_report_model
from offlab.store import RunResults

TSO, CSUM, GSO = "tcp-segmentation-offload", "tx-checksumming", "generic-segmentation-offload"
TCP = TrafficSpec("tcp", 1.5)
UDP = TrafficSpec("udp", 1.5, udp_payload=1472, mode="capacity")
ALL_ON = OffloadProfile("all-on", "both", {})
TSO_OFF = OffloadProfile("tso-off", "tx", {TSO: False})
ALL_OFF = OffloadProfile("tso+txcsum+gso-off", "tx", {TSO: False, CSUM: False, GSO: False})


def _samples(case, gbps, off):
    state = {"tx:ofl-v0": {f: FeatureState(f not in off) for f in (TSO, CSUM, GSO)}}
    return tuple(Sample(case.key, i, 0.0, 1.5, (gbps + 0.05 * i) * 1e9, gbps * 1e9, retransmits=0,
                        cpu=(CpuShare(0, {"sys": 50.0, "idle": 50.0}),), roles={"sender": 0}, offloads=state)
                 for i in range(4))


PROFILES = (ALL_ON, TSO_OFF, ALL_OFF)


def _results(rates):
    cases, samples = [], {}
    for traffic, by_profile in rates.items():
        for profile, gbps in zip(PROFILES, by_profile):
            case = CaseSpec("bare", 1500, profile, traffic)
            cases.append(case)
            samples[case.key] = _samples(case, gbps, set(f for f, on in profile.features.items() if not on))
    info = RunInfo("r", "quick", 0.0, "offlab run", "6.18", "cpu", 2, settings=RunSettings(3, hosts="ssh"))
    return RunResults(info, "complete", tuple(cases), samples)


def test_each_claim_gets_its_measured_counterpart_and_a_verdict():
    results = _results({TCP: (16.0, 11.0, 10.0),  # all on vs all off: +60 %
                        UDP: (1.3, 1.3, 1.0)})    # +30 %, the seed says +5 %
    found = {(a.claim.protocol, a.claim.side, a.claim.mtu, a.claim.metric): a for a in answers(build_report_model(results))}
    tcp = found[("tcp", "tx", 1500, "throughput")]
    assert tcp.verdict.startswith("reproduced") and tcp.measured.startswith("+60%")
    assert found[("udp", "tx", 1500, "throughput")].verdict == "direction only (larger than claimed)"
    assert found[("tcp", "tx", 9000, "cpu")].verdict == "not comparable here (MTU 9000 is not in this plan)"
    assert "receiver's offloads off" in found[("tcp", "rx", 1500, "throughput")].verdict
    boost = found[("tcp", "tx", 1500, "highest boost")]
    assert boost.verdict == "reproduced" and boost.measured.startswith("TSO +45%")
    assert not any(a.claim.scenario == "vxlan" for a in found.values())  # no VXLAN measured


def test_no_difference_is_not_reproduced_and_the_table_quotes_the_seed():
    results = _results({TCP: (10.0, 10.0, 10.0)})
    model = build_report_model(results)
    tcp = next(a for a in answers(model) if a.claim.metric == "throughput" and a.claim.side == "tx")
    assert tcp.verdict == "not reproduced (no significant difference)"
    (section,) = claims_sections(model)
    (_, table), = section.tables
    assert table.rows[0][0].startswith("seed 000 §6.10.1.1 Baseline physical: “on a transmitter with MTU 1500")
    assert [c.metric for c in CLAIMS[:4]] == ["throughput"] * 4  # the per-scenario percentages first
