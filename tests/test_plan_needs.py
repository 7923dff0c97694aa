"""scripts/plan-needs.py: what `make demo` builds for its plan — only the binaries and
the guest the plan runs (the quick plan: nothing, it runs the kernel's path with iperf3)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from hangguard import HANG_S

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "plan-needs.py"


def _needs(plan: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), plan], capture_output=True, text=True, timeout=HANG_S)


def test_the_quick_plan_needs_nothing_built():
    done = _needs("quick")
    assert done.returncode == 0 and done.stdout == "", done.stderr


def test_a_udp_capacity_plan_needs_only_offlab_udpload():
    done = _needs("udp")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["offlab-udpload"]


def test_guests_need_the_guest_and_offlab_fwd_for_vhost_user():
    done = _needs("guests")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["guest", "offlab-fwd"]


def test_a_plan_of_kernel_paths_needs_nothing_built(tmp_path):
    plan = tmp_path / "p.toml"
    plan.write_text('name = "p"\nruns = 1\nduration = 1.0\nscenarios = ["bare"]\nmtus = [1500]\n'
                    'traffic = ["tcp"]\nsequences = ["tx"]\n')
    done = _needs(str(plan))
    assert done.returncode == 0 and done.stdout == "", done.stderr


def test_an_unknown_plan_is_one_line_with_the_plans_and_exit_2():
    done = _needs("no-such-plan")
    assert done.returncode == 2 and done.stdout == ""
    assert len(done.stderr.splitlines()) == 1 and "quick" in done.stderr
