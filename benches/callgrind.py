"""Instructions per operation of a bench binary, counted by callgrind.

This VM (and many others) exposes no performance counters (`perf stat -e instructions
true` prints `<not supported>`), so instruction counts come from valgrind's callgrind,
which is deterministic and independent of the machine's load. A workload runs twice,
with `--rounds LOW` and `--rounds HIGH`; the difference divided by the extra rounds and
the operations per round is the steady-state cost per packet / segment / byte, free of
start-up (the EAL alone is ~160 M instructions) and set-up.

Callgrind counts every iteration of a `rep stos`/`rep movs` as one instruction, and
valgrind runs no AVX-512: the DPDK side is profiled in its AVX2 build (`dpdk_bench_avx2`),
the C API's in `capi_bench_avx2`, and the engine takes its AVX2 kernel.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

# Operations per round, by workload prefix: packets, segments or bytes.
OPS = {"gro_": (1024, "packet"), "gso_": (45, "segment"),
       "csum_1500": (1500, "byte"), "csum_65536": (65536, "byte")}


def ops_of(workload: str) -> tuple[int, str]:
    """Operations per round of `workload` and their name."""
    for prefix, ops in OPS.items():
        if workload.startswith(prefix):
            return ops
    raise SystemExit(f"unknown workload {workload}")


def available() -> bool:
    return shutil.which("valgrind") is not None


def instructions(binary: Path, workload: str, rounds: int, keep: Path | None = None,
                 extra: tuple[str, ...] = ()) -> int:
    """Instructions callgrind counts for `rounds` rounds of `workload` (whole process)."""
    out_file = keep if keep is not None else Path("/dev/null")
    cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out_file}",
           str(binary), "--rounds", str(rounds), "--only", workload, *extra]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    match = re.search(r"Collected : (\d+)", proc.stderr)
    if proc.returncode != 0 or not match:
        raise SystemExit(f"callgrind run failed: {' '.join(cmd)}\n{proc.stderr[-3000:]}")
    return int(match.group(1))


def per_op(low_count: int, high_count: int, low: int, high: int, ops: int) -> float:
    """Steady-state instructions per operation from two runs' totals."""
    if high <= low:
        raise ValueError("the high run must have more rounds than the low one")
    return (high_count - low_count) / (high - low) / ops


def measure(binary: Path, workload: str, low: int, high: int, keep: Path | None = None,
            extra: tuple[str, ...] = ()) -> float:
    """Instructions per operation of `workload` on `binary` (two callgrind runs)."""
    ops, _ = ops_of(workload)
    low_count = instructions(binary, workload, low, None, extra)
    high_count = instructions(binary, workload, high, keep, extra)
    return per_op(low_count, high_count, low, high, ops)
