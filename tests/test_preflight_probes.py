"""The latency probes' tools are checked before a run starts: the quick plan's paced
streams carry sockperf and its saturated ones irtt, and `make demo` installed neither
sockperf nor said it was missing until a paced case failed mid-run (issue 40)."""

import pytest

from offlab.run import plan, preflight


def test_the_quick_plan_needs_irtt_and_sockperf():
    assert preflight.probe_tools(plan.load("quick").cases) == {"irtt", "sockperf"}


def test_a_missing_probe_tool_is_one_line_before_anything_starts(monkeypatch):
    real = preflight.shutil.which
    monkeypatch.setattr(preflight.shutil, "which", lambda tool: None if tool == "sockperf" else real(tool))
    with pytest.raises(preflight.PreflightError) as refused:
        preflight.check_tools(plan.load("quick").cases)
    assert str(refused.value) == "missing sockperf (apt-get install sockperf); or run: make setup-demo"
