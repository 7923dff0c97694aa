"""The seeds' claims answered from a run (issue #30, item 7; issue #37, item 4)."""

import dataclasses

from offlab.records import CaseSpec, CpuShare, FeatureState, OffloadProfile, RunInfo, RunSettings, Sample, TrafficSpec
from offlab.report.claims import CLAIMS, answers, claims_sections
from offlab.report.document import build_report_model
from offlab.store.store import RunResults

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
    # TSO is the only feature off alone here (GSO never is): nothing to rank it against.
    assert boost.verdict.startswith("not comparable here (the profiles with one feature off measure TSO:")
    assert "GSO never turned off alone here" in boost.verdict and boost.measured.startswith("TSO +45%")
    assert not any(a.claim.scenario == "vxlan" for a in found.values())  # no VXLAN measured


def test_no_difference_is_not_reproduced_and_the_table_quotes_the_seed():
    results = _results({TCP: (10.0, 10.0, 10.0)})
    model = build_report_model(results)
    tcp = next(a for a in answers(model) if a.claim.metric == "throughput" and a.claim.side == "tx")
    assert tcp.verdict.startswith("not reproduced (no difference that holds across the report's tests")
    (section,) = claims_sections(model)
    (_, table), = section.tables
    assert table.rows[0][0].startswith("seed 000 §6.10.1.1 Baseline physical: “on a transmitter with MTU 1500")
    assert [c.metric for c in CLAIMS[:4]] == ["throughput"] * 4  # the per-scenario percentages first


GSO_OFF = OffloadProfile("gso-off", "tx", {GSO: False})


def _boost_results(tso_off: list[float], gso_off: list[float], hosts: str = "ssh"):
    """Bare transmitter, TCP: all on at 10 Gbit/s, TSO alone off and GSO alone off."""
    cases, samples = [], {}
    for profile, rates in ((ALL_ON, [10.0, 10.2, 9.8, 10.1]), (TSO_OFF, tso_off), (GSO_OFF, gso_off)):
        case = CaseSpec("bare", 1500, profile, TCP)
        off = {f for f, on in profile.features.items() if not on}
        state = {"tx:ofl-v0": {f: FeatureState(f not in off) for f in (TSO, CSUM, GSO)}}
        cases.append(case)
        samples[case.key] = tuple(Sample(case.key, i, 0.0, 1.5, g * 1e9, g * 1e9, retransmits=0,
                                         cpu=(CpuShare(0, {"sys": 50.0, "idle": 50.0}),), roles={"sender": 0},
                                         offloads=state) for i, g in enumerate(rates))
    info = RunInfo("r", "quick", 0.0, "offlab run", "6.18", "cpu", 2, settings=RunSettings(4, hosts=hosts))
    return RunResults(info, "complete", tuple(cases), samples)


def _boost(results):
    return next(a for a in answers(build_report_model(results))
                if a.claim.metric == "highest boost" and a.claim.side == "tx")


def test_overlapping_cis_are_a_tie_not_a_winner():
    """The issue's +126 % vs +106 % with ±55–66 % CIs: the old code picked the larger
    point estimate and gave a verdict; overlapping CIs are a tie, and the verdict says so."""
    boost = _boost(_boost_results([4.0, 5.5, 3.6, 4.6], [4.4, 6.0, 3.8, 5.2]))
    assert boost.verdict.startswith("tie: TSO and GSO (95% CIs overlap; the claim's among them, none ahead)")


def test_cis_apart_give_a_winner():
    boost = _boost(_boost_results([5.0, 5.1, 4.9, 5.05], [8.0, 8.1, 7.9, 8.05]))
    assert boost.verdict == "reproduced (TSO ahead of the others, CIs apart)"
    assert boost.measured.startswith("TSO +100%") and "GSO +25%" in boost.measured


def test_a_difference_set_apart_as_against_the_mechanism_gets_no_verdict():
    """On one machine all off measured faster than all on: the recommendations set that
    apart (validity.contention); the old claims code checked only exclusion() and read a
    verdict ("the opposite direction") from it."""
    results = _results({TCP: (10.0, 11.0, 12.0)})
    local = dataclasses.replace(results, info=dataclasses.replace(results.info, settings=RunSettings(3, hosts="local")))
    model = build_report_model(local)
    assert any(why.label == "against the mechanism" for _, why in model.recommendations.excluded)
    tcp = next(a for a in answers(model) if a.claim.metric == "throughput" and a.claim.side == "tx"
               and a.claim.protocol == "tcp")
    assert tcp.verdict == "not comparable here (against the mechanism)"
    boost = next(a for a in answers(model) if a.claim.metric == "highest boost" and a.claim.side == "tx")
    assert boost.verdict.startswith("not comparable here (TSO set apart: against the mechanism")


def test_every_verdict_names_its_medium_from_the_recorded_run():
    results = _results({TCP: (16.0, 11.0, 10.0)})
    local = dataclasses.replace(results, info=dataclasses.replace(results.info, settings=RunSettings(3, hosts="local"),
                                                                  kernel="6.12.7-test"))
    found = answers(build_report_model(local))
    assert found and all(a.medium.endswith("namespaces on one machine, kernel 6.12.7-test") for a in found)
    tcp = next(a for a in found if a.claim.metric == "throughput" and a.claim.side == "tx" and a.claim.protocol == "tcp")
    assert tcp.medium.startswith("veth pair, super-packet wire;")
    (section,) = claims_sections(build_report_model(local))
    (_, table), = section.tables
    assert table.header[4:] == ("Medium", "Verdict")


def test_cpu_claims_use_the_one_sign():
    """The seed's "55 % CPU performance gain" is CPU per Gbit/s off relative to on; the
    report's one sign is on relative to off: 1/1.55 − 1 = −35 %."""
    claim = next(c for c in CLAIMS if c.metric == "cpu" and c.percent == 55)
    assert abs(claim.target - (1 / 1.55 - 1)) < 1e-12
    assert claim.claimed.startswith("CPU per Gbit/s −35%")


def test_nested_profiles_rank_as_one_finding_and_an_unmeasured_feature_is_not_judged():
    """The issue's vxlan transmitter: Tx checksumming off (+207 %) also turned TSO off
    (+204 %), and tx-udp_tnl-segmentation was never off alone; the old code called the
    claim "reproduced"."""
    csum_off = OffloadProfile("txcsum-off", "tx", {CSUM: False})
    cases, samples = [], {}
    for profile, gbps, off in ((ALL_ON, 3.0, set()), (TSO_OFF, 1.0, {TSO}), (csum_off, 0.98, {TSO, CSUM})):
        case = CaseSpec("vxlan", 1500, profile, TCP)
        state = {"tx:ofl-v0": {f: FeatureState(f not in off) for f in (TSO, CSUM, GSO)}}
        cases.append(case)
        samples[case.key] = tuple(Sample(case.key, i, 0.0, 1.5, (gbps + 0.02 * i) * 1e9, gbps * 1e9, retransmits=0,
                                         cpu=(CpuShare(0, {"sys": 50.0, "idle": 50.0}),), roles={"sender": 0},
                                         offloads=state) for i in range(4))
    info = RunInfo("r", "quick", 0.0, "offlab run", "6.18", "cpu", 2, settings=RunSettings(4, hosts="ssh"))
    model = build_report_model(RunResults(info, "complete", tuple(cases), samples))
    boost = next(a for a in answers(model) if a.claim.metric == "highest boost" and a.claim.scenario == "vxlan")
    assert boost.verdict.startswith("not comparable here (the profiles with one feature off measure TSO and "
                                    "Tx checksumming as one finding (nested profiles)")
    assert boost.verdict.endswith("tx-udp_tnl-segmentation never turned off alone here, not judged")
