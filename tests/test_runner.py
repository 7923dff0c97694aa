"""The runner's bookkeeping: what is left to measure (resume) and one build per topology."""

from offlab import plan
from offlab.runner import by_topology, pending

GOOD = """
name = "t"
runs = 3
duration = 1.5
warmup = 0.5
scenarios = ["bare", "vxlan"]
mtus = [1500, 9000]
traffic = ["tcp"]
sequences = ["rx"]
"""


def test_pending_skips_finished_cases_and_starts_at_the_next_repetition():
    cases = plan.parse(GOOD, "t.toml").cases
    done = {cases[0].key: 3, cases[1].key: 1}
    work = pending(cases, 3, done)
    assert cases[0] not in [c for c, _ in work]
    assert (cases[1], 1) in work and (cases[2], 0) in work
    assert len(work) == len(cases) - 1


def test_one_group_per_scenario_and_mtu_in_plan_order():
    cases = plan.parse(GOOD, "t.toml").cases
    groups = list(by_topology(pending(cases, 3, {})))
    assert [key for key, _ in groups] == [("bare", 1500), ("bare", 9000), ("vxlan", 1500), ("vxlan", 9000)]
    assert all(len(members) == 3 for _, members in groups)  # all-on, gro-off, gro+rxcsum-off
