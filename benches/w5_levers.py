"""W5 side by side for datapath changes: offlab-fwd binaries (and testpmd) alternated on
W5 rows with W5's own harness, or one binary under callgrind for instructions per frame
(the VM has no PMU, so `perf stat` counts nothing). Run under the measure lock:

    flock /tmp/offlab-measure.lock python3 benches/w5_levers.py alternate \\
        nogro_f8,gro_f8 testpmd,/path/old/offlab-fwd,/path/new/offlab-fwd --rounds 2
    flock /tmp/offlab-measure.lock python3 benches/w5_levers.py callgrind \\
        nogro_f8 /path/new/offlab-fwd --out /tmp/cg.out
    flock /tmp/offlab-measure.lock python3 benches/w5_levers.py callgrind \\
        nogro_f8 testpmd --out unused   # as `make bench` counts it (w5_instructions)

Python standard library only; prints one JSON object per run.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import signal
import subprocess
import tempfile
from pathlib import Path

import fwd_w5
import w5_instructions
import w5_testpmd


def row(key: str) -> fwd_w5.Row:
    return next(r for r in fwd_w5.ROWS if r.key == key)


def run_side(side: str, r: fwd_w5.Row, seconds: float, rnd: int) -> dict:
    """testpmd as W5 runs it; `testpmd-io`: DPDK's own vhost-to-vhost forwarding (`io`,
    `legacy-ol-flags=1`, w5_testpmd.IO_PASS) on hugepages; `testpmd-retry`: W5's testpmd
    with transmit retry (w5_testpmd.with_retry; `testpmd-retry:US:N` for
    `set burst tx delay US retry N`) on hugepages; `testpmd-noretry`: W5's testpmd
    without the retry TX_RETRY_ROWS gives some rows; else an offlab-fwd binary."""
    if side == "testpmd":
        return fwd_w5.run_one("testpmd", r, seconds, rnd)
    if side == "testpmd-noretry":
        with w5_testpmd.hugepages() as huge_dir:
            setup = w5_testpmd.tuned(r.fwd_mode, huge_dir)
            return fwd_w5.run_one("testpmd", r, seconds, rnd, setup)
    if side.startswith("testpmd-retry"):
        # testpmd-retry, or testpmd-retry:US:N for `set burst tx delay US retry N`
        retry = tuple(int(v) for v in side.split(":")[1:]) or w5_testpmd.TX_RETRY_DEFAULT
        with w5_testpmd.hugepages() as huge_dir:
            setup = w5_testpmd.with_retry(w5_testpmd.tuned(r.fwd_mode, huge_dir), retry)
            return fwd_w5.run_one("testpmd", r, seconds, rnd, setup)
    if side == "testpmd-io":
        with w5_testpmd.hugepages() as huge_dir:
            setup = dataclasses.replace(w5_testpmd.IO_PASS, huge_dir=huge_dir)
            return fwd_w5.run_one("testpmd", r, seconds, rnd, setup)
    fwd_w5.FWD_BIN = Path(side)
    return fwd_w5.run_one("fwd", r, seconds, rnd)


def alternate(rows: list[str], sides: list[str], rounds: int, seconds: float) -> None:
    """Each round runs every side on every row, the order of sides reversed in odd rounds."""
    for rnd in range(rounds):
        for key in rows:
            for side in sides if rnd % 2 == 0 else sides[::-1]:
                r = run_side(side, row(key), seconds, rnd)
                print(json.dumps({"round": rnd, "row": key, "side": side, "gbps": r["value"],
                                  "offered_gbps": r["offered_gbps"], "loss": r["loss"],
                                  "backend_ns_per_segment": r["backend_ns_per_segment"],
                                  "depth": r["depth"], "mismatches": r["mismatches"],
                                  "config": r["config"], "backend_dropped": r["backend_dropped"],
                                  "load_average": os.getloadavg()[0]}), flush=True)


def inclusive_ir(out: str) -> dict:
    """Inclusive instruction counts of the whole run and of the port's two calls."""
    text = subprocess.run(["callgrind_annotate", "--inclusive=yes", out],
                          capture_output=True, text=True, check=True).stdout
    wanted = {"total": "PROGRAM TOTALS", "receive": "Port>::recv_batch [",
              "send": "Port>::send [", "memcpy": "__memcpy_avx_unaligned_erms ["}
    found: dict = {}
    for line in text.splitlines():
        m = re.match(r"\s*([\d,]+) \(.*?\)\s+(.*)$", line)
        for key, pattern in wanted.items():
            if m and pattern in m.group(2) and key not in found:
                found[key] = int(m.group(1).replace(",", ""))
    return found


def callgrind(key: str, binary: str, out: str, seconds: float) -> None:
    """One run of `binary` under callgrind; instructions per frame it received."""
    with tempfile.TemporaryDirectory(prefix="ofl-w5cg-") as tmp:
        wrapper = Path(tmp) / "offlab-fwd"
        wrapper.write_text(f"#!/bin/sh\nexec valgrind --tool=callgrind "
                           f"--callgrind-out-file={out} {binary} \"$@\"\n")
        wrapper.chmod(0o755)
        fwd_w5.FWD_BIN = wrapper
        exits: list[dict] = []

        def stop_fwd(proc, lines, sockets):
            proc.send_signal(signal.SIGTERM)
            text = lines.rest(60)
            fwd_w5.stop(proc)
            exits.extend(json.loads(l) for l in text.splitlines()
                         if l.startswith("{") and '"exit"' in l)
            direction = exits[-1]["directions"][
                f"vhost-user:{sockets[0]} -> vhost-user:{sockets[1]}"]
            return {"copied": direction["copied_bytes"], "delivered": direction["tx_bytes"],
                    "dropped": direction["dropped"], "frames": direction["rx_packets"]}

        fwd_w5.stop_fwd = stop_fwd
        fwd_w5.run_one("fwd", row(key), seconds, 0)
    frames = next(iter(exits[-1]["directions"].values()))["rx_packets"]
    ir = inclusive_ir(out)
    print(json.dumps({"row": key, "binary": binary, "frames": frames,
                      **{f"{k}_ir_per_frame": round(v / frames) for k, v in ir.items()}}))


def callgrind_testpmd(key: str) -> None:
    """W5's tuned testpmd under callgrind, counted as `make bench` counts it
    (benches/w5_instructions.py): one JSON line per load length, then instructions per
    delivered segment."""
    runs = [w5_instructions.count("testpmd", row(key), secs)
            for secs in w5_instructions.SECONDS]
    for run in runs:
        print(json.dumps(run))
    print(json.dumps({"row": key, "binary": "testpmd",
                      "instructions_per_segment": w5_instructions.per_segment(runs)}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    alt = sub.add_parser("alternate")
    alt.add_argument("rows", help="comma-separated W5 row keys")
    alt.add_argument("sides", help="comma-separated: testpmd, testpmd-retry[:US:N], testpmd-noretry, "
                     "testpmd-io or "
                     "paths to offlab-fwd")
    alt.add_argument("--rounds", type=int, default=2)
    alt.add_argument("--seconds", type=float, default=1.0)
    cg = sub.add_parser("callgrind")
    cg.add_argument("row")
    cg.add_argument("binary", help="an offlab-fwd binary, or testpmd (W5's tuned setup, "
                    "counted as make bench counts it; --out and --seconds unused)")
    cg.add_argument("--out", required=True)
    cg.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    if args.what == "alternate":
        alternate(args.rows.split(","), args.sides.split(","), args.rounds, args.seconds)
    elif args.binary == "testpmd":
        callgrind_testpmd(args.row)
    else:
        callgrind(args.row, os.path.abspath(args.binary), args.out, args.seconds)


if __name__ == "__main__":
    main()
