"""QEMU never outlives the process that started it: the child asks the kernel, before
it execs, for SIGKILL when its parent goes (PR_SET_PDEATHSIG). `ip netns exec` execs
QEMU, so the request reaches QEMU itself; a `kill -9` of offlab or of pytest takes its
guests with it. The signal follows the launching *thread*, so launch from one that lasts."""

from __future__ import annotations

import ctypes
import signal

PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """For subprocess.Popen(preexec_fn=…)."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
