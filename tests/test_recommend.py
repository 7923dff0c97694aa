"""Attribution rules of the recommendations: predecessor choice and cascades."""

from offlab.records import CaseSpec, CpuShare, FeatureState, OffloadProfile, Sample, TrafficSpec
from offlab.report.model import CaseGroup, profile_row
from offlab.report.recommend import group_steps, recommend

TSO, CSUM, GSO = "tcp-segmentation-offload", "tx-checksumming", "generic-segmentation-offload"
TCP = TrafficSpec("tcp", duration_s=5.0)


def _row(name: str, features: dict, gbps: list[float], in_force: dict):
    case = CaseSpec("veth", 1500, OffloadProfile(name, "tx", features), TCP)
    state = {
        "tx:ofl-v0": {
            f: FeatureState(on=on, requested=features.get(f)) for f, on in in_force.items()
        }
    }
    samples = [
        Sample(case.key, i, 0.0, 5.0, g * 1e9, g * 1e9,
               cpu=(CpuShare(0, {"sys": 50.0, "idle": 50.0}),), roles={"sender": 0},
               offloads=state)
        for i, g in enumerate(gbps)
    ]
    return profile_row(case, samples)


ALL = {TSO: True, CSUM: True, GSO: True}


def _group(rows) -> CaseGroup:
    return CaseGroup("veth", 1500, TCP, "tx", rows[0], tuple(rows))


def test_one_off_profiles_are_compared_with_all_on_and_cascades_are_named():
    base = _row("all-on", {}, [20.0, 20.2, 19.8], ALL)
    tso = _row("only-tso-off", {TSO: False}, [12.0, 12.1, 11.9], {**ALL, TSO: False})
    # tx-checksumming off takes TSO with it (the kernel's feature dependency)
    csum = _row("only-txcsum-off", {CSUM: False}, [11.0, 11.2, 10.8],
                {**ALL, CSUM: False, TSO: False})
    steps = group_steps(_group([base, tso, csum]))
    assert [(s.on_row.profile.name, s.off_row.profile.name) for s in steps] == [
        ("all-on", "only-tso-off"), ("all-on", "only-txcsum-off")]
    assert steps[1].in_force == (CSUM,) and steps[1].cascaded == (TSO,)
    sentences = [e.sentence() for _, effects in recommend([_group([base, tso, csum])]).goals
                 for e in effects]
    assert any("keep Tx checksumming on" in s and "also turned TSO off" in s for s in sentences)


def test_cumulative_steps_use_the_previous_profile():
    base = _row("all-on", {}, [20.0, 20.2, 19.8], ALL)
    one = _row("tso-off", {TSO: False}, [12.0, 12.1, 11.9], {**ALL, TSO: False})
    two = _row("tso+csum-off", {TSO: False, CSUM: False}, [11.0, 11.2, 10.8],
               {**ALL, TSO: False, CSUM: False})
    three = _row("tso+csum+gso-off", {TSO: False, CSUM: False, GSO: False}, [6.0, 6.1, 5.9],
                 {TSO: False, CSUM: False, GSO: False})
    steps = group_steps(_group([base, one, two, three]))
    assert [(s.on_row.profile.name, s.in_force) for s in steps] == [
        ("all-on", (TSO,)), ("tso-off", (CSUM,)), ("tso+csum-off", (GSO,))]
    assert all(s.cascaded == () and s.not_applied == () for s in steps)


def test_a_feature_that_hurts_is_recommended_off():
    """On real hosts (on one machine such a gain is set apart: test_validity.py)."""
    base = _row("all-on", {}, [10.0, 10.1, 9.9], ALL)
    gso = _row("only-gso-off", {GSO: False}, [13.0, 13.1, 12.9], {**ALL, GSO: False})
    (title, (effect,)), = [
        (t, e) for t, e in recommend([_group([base, gso])], virtual_devices=False).goals
        if "throughput" in t]
    assert title == "To increase TCP throughput"
    assert effect.sentence().startswith("turn GSO off at the transmitter — having it on: −23%")


def test_opposite_significant_effects_are_reported_as_contradictory():
    base = _row("all-on", {}, [10.0, 10.1, 9.9], ALL)
    gso = _row("only-gso-off", {GSO: False}, [13.0, 13.1, 12.9], {**ALL, GSO: False})
    other_base = _row("all-on", {}, [10.0, 10.1, 9.9], ALL)
    other_gso = _row("only-gso-off", {GSO: False}, [7.0, 7.1, 6.9], {**ALL, GSO: False})
    other = CaseGroup("vxlan", 1500, TCP, "tx", other_base, (other_base, other_gso))
    rec = recommend([_group([base, gso]), other], virtual_devices=False)
    (contradiction,) = [c for c in rec.contradictions if "throughput" in c.goal]
    assert contradiction.features == (GSO,)
    assert "helps in vxlan" in contradiction.sentence()
    assert rec.tested == 4 and abs(rec.expected_by_chance - 0.2) < 1e-9


def test_userspace_datapath_profiles_get_no_offload_advice():
    """fwd modes and port offloads are compared in the userspace section, never phrased
    as "keep <ethtool feature> on"."""
    import random

    from offlab.records import CaseSpec, DatapathSetting, OffloadProfile, PortSetting, TrafficSpec
    from offlab.report.model import build_groups, build_rows
    from offlab.report.recommend import recommend
    from offlab.store import RunResults
    from tests.fixtures.make_store import fixture_run_info, make_samples

    rng = random.Random(1)
    traffic = TrafficSpec("tcp", duration_s=10.0)
    cases = (
        CaseSpec("vm2vm", 1500, OffloadProfile("all-on", "tx", {}), traffic,
                 datapath=DatapathSetting(True, "pass", (("a", PortSetting(frozenset({"tso4"}))),))),
        CaseSpec("vm2vm", 1500, OffloadProfile("tso-off", "tx", {"tcp-segmentation-offload": False}),
                 traffic, datapath=DatapathSetting(True, "gso", (("a", PortSetting()),))),
    )
    samples = {}
    for case, template in zip(cases, ("all-on", "tso-off")):
        model_case = CaseSpec("veth", 1500, OffloadProfile(template, "tx", {}), traffic)
        samples[case.key] = tuple(
            s.__class__(**{**s.__dict__, "case_key": case.key})
            for s in make_samples(model_case, rng)
        )
    results = RunResults(fixture_run_info(), "complete", cases, samples)
    recs = recommend(build_groups(results, build_rows(results)))
    assert recs.effects == () and recs.goals == ()


def test_single_off_profiles_attribute_and_the_all_off_step_is_labelled():
    """The quick plan's shape: all on, TSO alone off, tx checksumming alone off (TSO goes
    with it), all off. TSO and tx checksumming are credited from their single-off rows;
    the all-off row's step comes from the nearest state in force (txcsum-off), credits
    GSO alone with TSO already off (not "not applied"), and is labelled as a step."""
    base = _row("all-on", {}, [20.0, 20.2, 19.8], ALL)
    tso = _row("tso-off", {TSO: False}, [12.0, 12.1, 11.9], {**ALL, TSO: False})
    csum = _row("txcsum-off", {CSUM: False}, [11.0, 11.2, 10.8], {**ALL, CSUM: False, TSO: False})
    every = _row("tso+txcsum+gso-off", {TSO: False, CSUM: False, GSO: False}, [6.0, 6.1, 5.9],
                 {TSO: False, CSUM: False, GSO: False})
    group = _group([base, tso, csum, every])
    last = group_steps(group)[-1]
    assert last.on_row is csum and last.in_force == (GSO,)
    assert last.already_off == (TSO,) and last.not_applied == ()
    assert last.cumulative and "with TSO and Tx checksumming already off" in last.label()
    rec = recommend([group])
    sentences = [e.sentence() for _, effects in rec.goals for e in effects]
    gso = next(s for s in sentences if s.startswith("keep GSO on"))
    assert "(cumulative step txcsum-off → tso+txcsum+gso-off" in gso
    tso_line = next(s for s in sentences if s.startswith("keep TSO on"))
    assert "cumulative" not in tso_line and tso_line.split(" — ")[1].startswith("+")


def test_a_cumulative_step_covered_by_single_offs_is_superseded():
    base = _row("all-on", {}, [20.0, 20.2, 19.8], ALL)
    tso = _row("tso-off", {TSO: False}, [12.0, 12.1, 11.9], {**ALL, TSO: False})
    gso = _row("gso-off", {GSO: False}, [19.0, 19.1, 18.9], {**ALL, GSO: False})
    both = _row("tso+gso-off", {TSO: False, GSO: False}, [6.0, 6.1, 5.9], {**ALL, TSO: False, GSO: False})
    rec = recommend([_group([base, tso, gso, both])])
    assert [s.off_row.profile.name for s in rec.superseded] == ["tso+gso-off"]
    assert all(not e.step.cumulative for e in rec.effects)
