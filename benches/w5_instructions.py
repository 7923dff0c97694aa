"""W5's instructions per delivered segment, both backends, counted by callgrind.

The VM has no PMU (`perf stat -e instructions` prints `<not supported>`), so the count
comes from valgrind's callgrind, as the engine rows' do (benches/callgrind.py). Each
backend runs under `valgrind --tool=callgrind` in W5's own harness (fwd_w5), on the
same row, frames and settings as its timed runs (testpmd: W5's tuned setup for the row,
on 4 KiB pages: valgrind cannot follow EAL onto hugepages).

Both backends poll, so a whole-process count is mostly start-up and empty polls, whose
number depends on time, not on packets. The count is therefore taken around the load
only, and twice:

- the counters are zeroed (`callgrind_control -z`) when the ports can carry frames
  (offlab-fwd: before the load starts; testpmd: when it reports both vhost links up,
  since under valgrind its vhost-user set-up is seconds of refused polls) and dumped
  (`callgrind_control -d`) as soon as the load has exited;
- under valgrind the backend is many times slower than the (native) source and sink, so
  while the load runs it nearly always finds a full ring;
- what is left around the traffic (frames moved before the zeroing, the last polls,
  frames in flight when the load stops) does not grow with the load's length: two runs,
  `LOW` and `HIGH` seconds of load, and the difference of their counts divided by the
  difference of the segments the sink counted is the steady cost per delivered segment.

Segments are MSS-size TCP segments of payload the sink received (payload / MSS), the
unit of W5's other per-segment columns, so GRO rows (merged frames) and GSO rows (split
super-packets) compare. Python standard library only.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import fwd_w5

# Load seconds of the two runs whose difference is the steady cost. Both must reach past
# testpmd's link-up, which on this 2-core machine at a load average of ~10 came more than
# 10 s after its load started (its vhost-user set-up runs under valgrind).
SECONDS = (15.0, 30.0)
# The rows counted by default: GRO 8 flows, no GSO, GSO partial, pass (`make bench`).
ROWS = ("gro_f8", "nogso", "gso_partial", "pass_tso")
# valgrind runs one thread at a time; `--fair-sched=yes` hands its lock round in turn, so
# testpmd's spinning forwarding lcore cannot keep the vhost-user message thread waiting
# (valgrind's manual advises it for spinning threads; the default was not measured).
VALGRIND = ("valgrind", "--tool=callgrind", "--fair-sched=yes")
# testpmd's transmit retry waits in this function (`rte_delay_us`, by default a busy
# loop on the TSC): its instructions grow with time, not with packets, so they are
# counted apart and left out of instructions per segment.
BUSY_WAIT = "rte_delay_us_block"
# The load's niceness in the counting runs (see start_load).
LOAD_NICE = -10
# EAL's start-up under valgrind (mempools on 4 KiB pages) takes minutes, not seconds.
START_TIMEOUT = 600


def available() -> bool:
    return shutil.which("valgrind") is not None and shutil.which("callgrind_control") is not None


def dump_total(text: str) -> int:
    """Instructions in a callgrind dump (its `totals:` line, else `summary:`)."""
    found: dict[str, int] = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key in ("totals", "summary") and value.strip():
            found.setdefault(key, int(value.split()[0]))
    if not found:
        raise ValueError("callgrind dump has neither a totals: nor a summary: line")
    return found.get("totals", found.get("summary"))


def inclusive(annotated: str, function: str) -> int:
    """A function's inclusive instructions in `callgrind_annotate --inclusive=yes`'s
    output (0 when it never ran)."""
    for line in annotated.splitlines():
        match = re.match(r"\s*([\d,]+) \(.*?\)\s+(\S+) \[", line)
        if match and match.group(2).rsplit(":", 1)[-1] == function:
            return int(match.group(1).replace(",", ""))
    return 0


def busy_wait(dump: Path) -> int:
    """Instructions a dump has in the busy wait of testpmd's transmit retry."""
    proc = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", str(dump)],
                          capture_output=True, text=True, timeout=600, check=True)
    return inclusive(proc.stdout, BUSY_WAIT)


def segments(line: dict) -> float:
    """MSS-size segments of payload the sink counted in a run."""
    return line["payload_bytes"] / line["mss"]


def per_segment(lines: list[dict]) -> float | None:
    """Steady instructions per delivered segment from one side's runs of one row: the
    difference between its longest and shortest load's counts (without busy waits)
    over the difference of their segments (None with fewer than two lengths or no more
    segments)."""
    if len({l["load_seconds"] for l in lines}) < 2:
        return None
    low = min(lines, key=lambda l: l["load_seconds"])
    high = max(lines, key=lambda l: l["load_seconds"])
    extra = segments(high) - segments(low)
    worked = [l["instructions"] - l.get("busy_wait", 0) for l in (low, high)]
    return (worked[1] - worked[0]) / extra if extra > 0 else None


def control(pid: int, flag: str) -> None:
    """`callgrind_control` on the backend: -z zeroes the counters, -d dumps them."""
    proc = subprocess.run(["callgrind_control", flag, str(pid)], capture_output=True,
                          text=True, timeout=120)
    if proc.returncode != 0:
        raise RuntimeError(f"callgrind_control {flag} {pid}: {proc.stderr.strip()}")


def start(side: str, row: fwd_w5.Row, sockets: list[str], out: str):
    under = (*VALGRIND, f"--callgrind-out-file={out}")
    if side == "testpmd":
        setup = fwd_w5.testpmd_setup(row)
        proc, lines = fwd_w5.start_testpmd(setup, row, sockets, runtime_prefix(),
                                           under, START_TIMEOUT)
        return proc, lines, setup.name
    proc, lines = fwd_w5.start_fwd(row, sockets, under, START_TIMEOUT)
    return proc, lines, "offlab-fwd"


def runtime_prefix() -> str:
    """testpmd's --file-prefix: its EAL runtime directory is /var/run/dpdk/<prefix>."""
    return f"ofl-w5cg-{os.getpid()}"


def stop(side: str, proc, lines) -> None:
    """Ends the backend once its counts are dumped. testpmd is killed: its `quit` under
    valgrind polls on for minutes (and the window's counts are already on disk); the
    EAL runtime directory it would have removed is removed here."""
    if side == "testpmd":
        proc.kill()
        proc.wait()
        runtime = Path("/var/run/dpdk") / runtime_prefix()
        if runtime.exists():
            shutil.rmtree(runtime)
        return
    proc.send_signal(signal.SIGTERM)
    lines.rest(60)
    if proc.poll() is None:
        proc.kill()
    proc.wait()


def start_load(row: fwd_w5.Row, sockets: list[str], seconds: float) -> subprocess.Popen:
    """The source/sink for `seconds`, all of them counted (no warm-up: the backend's
    counts cover the whole load)."""
    # Raised priority: the count assumes the source is never the slow end. testpmd polls
    # without sleeping, so every moment the shared machine takes CPU 0 from the source
    # adds empty polls (tens of millions of instructions a second under valgrind) to its
    # count; offlab-fwd sleeps in poll() when idle and would not show it.
    cmd = ["nice", "-n", str(LOAD_NICE), "taskset", "-c", fwd_w5.LOAD_CPU, str(fwd_w5.LOAD_BIN),
           "--source", sockets[0],
           "--sink", sockets[1], *row.load, "--seconds", str(seconds), "--warmup", "0",
           "--connect-wait", "120"]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def load_result(proc: subprocess.Popen) -> dict:
    out, err = proc.communicate(timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(proc.args)}: {err.strip()}")
    return json.loads(out.strip().splitlines()[-1])


def wait_links(lines: fwd_w5.Lines) -> None:
    """Until testpmd says both vhost ports are up (the guests' vrings are ready)."""
    wanted = [f"Port {port}: link state change event" for port in (0, 1)]
    while not all(w in "".join(lines.seen) for w in wanted):
        if not lines.wait_for("link state change event", 120):
            raise RuntimeError("testpmd under callgrind: the vhost ports did not come up:\n"
                               + "".join(lines.seen)[-3000:])


def count(side: str, row: fwd_w5.Row, seconds: float) -> dict:
    """One callgrind run: the backend's instructions around `seconds` of load, and what
    the sink counted."""
    with tempfile.TemporaryDirectory(prefix="ofl-w5cg-") as tmp:
        sockets = [os.path.join(tmp, "a.sock"), os.path.join(tmp, "b.sock")]
        out = os.path.join(tmp, "callgrind.out")
        began = time.monotonic()
        proc, lines, config = start(side, row, sockets, out)
        try:
            # The window opens when the ports can carry frames: testpmd's vhost-user
            # set-up under valgrind takes seconds of empty polls (its ports refuse to
            # queue until the guests' rings are ready), which would not cancel
            # between two runs; offlab-fwd's takes milliseconds and says nothing.
            if side != "testpmd":
                control(proc.pid, "-z")
            load = start_load(row, sockets, seconds)
            if side == "testpmd":
                wait_links(lines)
                control(proc.pid, "-z")
            result = load_result(load)
            control(proc.pid, "-d")
        finally:
            stop(side, proc, lines)
        dumps = sorted(Path(tmp).glob("callgrind.out.*"))
        if not dumps:
            raise RuntimeError(f"{side} on {row.key}: callgrind wrote no dump")
        instructions = dump_total(dumps[0].read_text())
        waited = busy_wait(dumps[0]) if side == "testpmd" else 0
    return {"side": side, "workload": row.key, "config": config, "load_seconds": seconds,
            "instructions": instructions, "busy_wait": waited, "payload_bytes": result["payload_bytes"],
            "sent_payload_bytes": result["sent_payload_bytes"], "mss": result["mss"],
            "frames": result["frames"], "depth": result["merge_depth"],
            "digest": result["input_digest"], "verified": result["verified"],
            "mismatches": result["mismatches"], "wall_seconds": time.monotonic() - began}


def check_rows(keys: list[str]) -> None:
    """Refuses row keys W5 does not have, with the list of those it has."""
    unknown = set(keys) - {r.key for r in fwd_w5.ROWS}
    if unknown:
        raise SystemExit(f"unknown W5 rows for callgrind: {', '.join(sorted(unknown))} "
                         f"(rows: {', '.join(r.key for r in fwd_w5.ROWS)})")


def collect(keys: list[str], seconds: tuple[float, ...] = SECONDS) -> list[dict]:
    """Every row in `keys` on both backends, one run per load length, the order of the
    backends alternated between rows."""
    check_rows(keys)
    rows = [r for r in fwd_w5.ROWS if r.key in keys]
    lines = []
    for i, row in enumerate(rows):
        for side in fwd_w5.order(i):
            for secs in seconds:
                print(f"W5 callgrind: {row.key} on {side}, {secs} s of load", file=sys.stderr,
                      flush=True)
                lines.append(count(side, row, secs))
    return lines
