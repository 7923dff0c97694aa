"""W5: offlab-fwd against DPDK testpmd as the vhost-user backend between two guests.

The guests are `offlab-vhostload` (crates/vhostload): guest A sends prepared frames,
guest B receives, verifies a sample and counts. Each backend runs its forwarding on
CPU 1 (offlab-fwd `--cpu 1`; testpmd `-l 0-1`, whose forwarding lcore is 1 and main
lcore 0 idles at its prompt), the source/sink on CPU 0. For every pair, every row runs
on testpmd and then on offlab-fwd, with the same frames (the source prints their
digest). Called by run.py; Python standard library only.
"""

from __future__ import annotations

import json
import os
import queue
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TESTPMD = "dpdk-testpmd"
BUILD = ["cargo", "build", "--release", "-p", "offlab-fwd", "-p", "offlab-vhostload"]
FWD_BIN = ROOT / "target" / "release" / "offlab-fwd"
LOAD_BIN = ROOT / "target" / "release" / "offlab-vhostload"
FWD_CPU, LOAD_CPU = "1", "0"
# Seed 004's testpmd as the issue ran it: two net_vhost ports, no hugepages, csum
# forwarding. `tso=1` lets the guests negotiate host_tso4/6 (the PMD removes them
# otherwise); bursts of 64 frames, as offlab-fwd's batches.
TESTPMD_EAL = ["--no-huge", "-m", "1024", "--no-pci", "-l", "0-1", "--log-level=lib.eal:error"]
TESTPMD_APP = ["-i", "--total-num-mbufs=16384", "--burst=64"]
GSO_SEGMENT = 1514  # testpmd's `set gso segsz`: whole frame, 1448 B of TCP payload
SINK_TSO = "guest_csum,guest_tso4,guest_tso6,mrg_rxbuf"
SINK_CSUM = "guest_csum,mrg_rxbuf"
SINK_PLAIN = "mrg_rxbuf"
SOURCE_TSO = "csum,host_tso4,host_tso6"
SOURCE_CSUM = "csum"


@dataclass(frozen=True)
class Row:
    """One W5 workload: what the guests do and what each backend is asked to do."""
    key: str
    label: str
    load: tuple[str, ...]        # offlab-vhostload arguments beyond the sockets
    fwd_mode: str                # offlab-fwd --mode
    gro: bool = False            # testpmd: `set port 0 gro on`
    gso: bool = False            # testpmd: `set port 1 gso on`, `set gso segsz`
    goal: float | None = None    # minimum median offlab-fwd/testpmd ratio


def _mtu(flows: int, sink: str) -> tuple[str, ...]:
    return ("--shape", "mtu", "--flows", str(flows), "--source-features", SOURCE_CSUM,
            "--sink-features", sink)


def _tso(sink: str, flows: int = 1) -> tuple[str, ...]:
    return ("--shape", "tso", "--flows", str(flows), "--source-features", SOURCE_TSO,
            "--sink-features", sink)


ROWS: list[Row] = [
    Row("gro_f1", "W5 fwd GRO 1 flow: MTU segments in, guest_tso4 sink", _mtu(1, SINK_TSO),
        "gro", gro=True, goal=2.0),
    Row("gro_f8", "W5 fwd GRO 8 flows", _mtu(8, SINK_TSO), "gro", gro=True, goal=2.0),
    Row("gro_f64", "W5 fwd GRO 64 flows", _mtu(64, SINK_TSO), "gro", gro=True, goal=2.0),
    Row("gso_partial", "W5 fwd GSO 64 KiB TSO in, sink without guest_tso4, csum partial",
        _tso(SINK_CSUM), "gso", gso=True, goal=1.5),
    Row("gso_full", "W5 fwd GSO 64 KiB TSO in, sink without guest_csum, full csums",
        _tso(SINK_PLAIN), "gso", gso=True, goal=1.5),
    Row("pass_tso", "W5 fwd pass: TSO in, guest_tso4 sink (descriptor and copy floor)",
        _tso(SINK_TSO), "pass", goal=1.5),
    # Seed 004's own comparison: the same MTU frames without backend GRO, and the
    # guest segmenting itself (host_tso4 off) instead of backend GSO.
    Row("nogro_f8", "W5 fwd no GRO, 8 flows (seed 004 baseline)", _mtu(8, SINK_TSO), "pass",
        goal=1.5),
    Row("nogso", "W5 fwd no GSO: guest sends MTU frames (host_tso4 off)", _mtu(1, SINK_CSUM),
        "pass", goal=1.5),
    Row("vxlan_nogro_f8", "W5 fwd VXLAN MTU frames, 8 flows, forwarded (no VXLAN offload "
        "over vhost-user on either side)", ("--vxlan",) + _mtu(8, SINK_TSO), "pass", goal=1.5),
]

# Seed 004's figures: (label, backend-offload row, baseline row).
SEED004 = [("GRO, 8 flows", "gro_f8", "nogro_f8"), ("GSO, csum partial", "gso_partial", "nogso")]


def build() -> None:
    proc = subprocess.run(BUILD, cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr[-4000:])
        raise SystemExit(f"command failed: {' '.join(BUILD)}")


def testpmd_available() -> bool:
    return shutil.which(TESTPMD) is not None


def testpmd_version() -> str:
    """The installed dpdk-dev package's version (testpmd prints none of its own)."""
    proc = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "dpdk-dev"],
                          capture_output=True, text=True)
    return proc.stdout.strip() or "unknown"


class Lines:
    """A child's stdout read on a thread, so waiting for a line can time out."""

    def __init__(self, proc: subprocess.Popen):
        self.queue: queue.Queue[str | None] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, args=(proc.stdout,), daemon=True).start()

    def _read(self, stream) -> None:
        for line in stream:
            self.queue.put(line)
        self.queue.put(None)

    def wait_for(self, needle: str, timeout: float) -> bool:
        while True:
            try:
                line = self.queue.get(timeout=timeout)
            except queue.Empty:
                return False
            if line is None:
                return False
            self.seen.append(line)
            if needle in line:
                return True

    def rest(self, timeout: float) -> str:
        self.wait_for("\0", timeout)
        return "".join(self.seen)


def testpmd_commands(row: Row) -> str:
    """Both ports check TCP checksums in 'hardware' (the vhost PMD marks them partial
    for the guest, or completes them itself for a guest without guest_csum)."""
    cmds = ["port stop all"]
    for port in (0, 1):
        cmds += [f"csum set ip sw {port}", f"csum set tcp hw {port}"]
    if row.gro:
        cmds += ["set port 0 gro on", "set gro flush 1"]
    if row.gso:
        cmds += ["set port 1 gso on", f"set gso segsz {GSO_SEGMENT}"]
    cmds += ["set fwd csum", "port start all", "start"]
    return "\n".join(cmds) + "\n"


def start_testpmd(row: Row, sockets: list[str], prefix: str):
    vdevs = [arg for i, s in enumerate(sockets)
             for arg in ("--vdev", f"net_vhost{i},iface={s},queues=1,tso=1")]
    # stdbuf: testpmd's stdout is a pipe here, and its prompt lines must arrive as printed.
    cmd = ["stdbuf", "-oL", TESTPMD, *TESTPMD_EAL, f"--file-prefix={prefix}", *vdevs, "--", *TESTPMD_APP]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    lines = Lines(proc)
    proc.stdin.write(testpmd_commands(row))
    proc.stdin.flush()
    if not lines.wait_for("packet forwarding - ports", 90):
        stop(proc)
        raise RuntimeError("testpmd did not start forwarding:\n" + "".join(lines.seen)[-3000:])
    return proc, lines


def stop_testpmd(proc, lines: Lines) -> dict:
    """Port byte counters, then stop and quit; returns what the copy count needs."""
    try:
        proc.stdin.write("show port stats all\nstop\nquit\n")
        proc.stdin.flush()
    except BrokenPipeError:
        pass
    out = lines.rest(30)
    stop(proc)
    rx = [int(v) for v in re.findall(r"RX-bytes:\s+(\d+)", out)]
    tx = [int(v) for v in re.findall(r"TX-bytes:\s+(\d+)", out)]
    dropped = [int(v) for v in re.findall(r"TX-dropped:\s+(\d+)", out)]
    # Port 0 receives from the source, port 1 sends to the sink. DPDK's vhost library
    # copies every received byte into mbufs and every sent byte into guest buffers
    # (GRO chains mbufs, GSO makes indirect ones: neither copies payload).
    return {"copied": (rx[0] + tx[1]) if len(rx) > 1 and len(tx) > 1 else None,
            "delivered": tx[1] if len(tx) > 1 else None,
            "dropped": max(dropped) if dropped else None}


def start_fwd(row: Row, sockets: list[str]):
    cmd = [str(FWD_BIN), "--port", f"vhost-user:{sockets[0]}", "--port",
           f"vhost-user:{sockets[1]}", "--mode", row.fwd_mode, "--cpu", FWD_CPU]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = Lines(proc)
    if not lines.wait_for('"ready"', 30):
        stop(proc)
        raise RuntimeError("offlab-fwd did not start:\n" + "".join(lines.seen)[-3000:])
    return proc, lines


def stop_fwd(proc, lines: Lines, sockets: list[str]) -> dict:
    proc.send_signal(signal.SIGTERM)
    out = lines.rest(30)
    stop(proc)
    exits = [json.loads(l) for l in out.splitlines() if l.startswith("{") and '"exit"' in l]
    if not exits:
        return {"copied": None, "delivered": None, "dropped": None}
    direction = exits[-1]["directions"].get(f"vhost-user:{sockets[0]} -> vhost-user:{sockets[1]}", {})
    return {"copied": direction.get("copied_bytes"), "delivered": direction.get("tx_bytes"),
            "dropped": direction.get("dropped")}


def stop(proc) -> None:
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def run_load(row: Row, sockets: list[str], seconds: float) -> dict:
    cmd = ["taskset", "-c", LOAD_CPU, str(LOAD_BIN), "--source", sockets[0], "--sink",
           sockets[1], *row.load, "--seconds", str(seconds), "--warmup", "0.5"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {proc.stderr.strip()}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run_one(side: str, row: Row, seconds: float, pair: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="ofl-w5-") as tmp:
        sockets = [os.path.join(tmp, "a.sock"), os.path.join(tmp, "b.sock")]
        if side == "testpmd":
            proc, lines = start_testpmd(row, sockets, f"ofl-w5-{os.getpid()}")
        else:
            proc, lines = start_fwd(row, sockets)
        try:
            result = run_load(row, sockets, seconds)
        finally:
            backend = (stop_testpmd(proc, lines) if side == "testpmd"
                       else stop_fwd(proc, lines, sockets))
    copies = (backend["copied"] / backend["delivered"]
              if backend["copied"] is not None and backend["delivered"] else None)
    return {"side": side, "workload": row.key, "pair": pair, "unit": "Gbit/s",
            "value": result["gbps"], "depth": result["merge_depth"],
            "digest": result["input_digest"], "verified": result["verified"],
            "mismatches": result["mismatches"], "gso_types": result["gso_types"],
            "over_mtu_without_gso": result["over_mtu_without_gso"],
            "copies_per_byte": copies, "backend_dropped": backend["dropped"],
            "negotiated": [result["source_negotiated"], result["sink_negotiated"]]}


def collect(pairs: int, seconds: float, only: str = "") -> list[dict]:
    rows = [r for r in ROWS if r.key.startswith(only)]
    lines = []
    for pair in range(pairs):
        for row in rows:
            for side in ("testpmd", "fwd"):
                print(f"W5 pair {pair + 1}/{pairs}: {row.key} on {side}", file=sys.stderr, flush=True)
                lines.append(run_one(side, row, seconds, pair))
    return lines


def _median(values: list[float]) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def _by(lines: list[dict]) -> dict[tuple[str, str], list[dict]]:
    groups: dict[tuple[str, str], list[dict]] = {}
    for line in lines:
        groups.setdefault((line["side"], line["workload"]), []).append(line)
    return groups


def refusal(dpdk: list[dict], fwd: list[dict]) -> str | None:
    """Why a row cannot be judged: different input frames, or frames that failed the
    sink's checks, on either side."""
    if {l["digest"] for l in dpdk} != {l["digest"] for l in fwd}:
        return "input digests differ"
    for side in (dpdk, fwd):
        bad = {k: v for l in side for k, v in l["mismatches"].items()}
        if bad:
            return f"{side[0]['side']}: sink found {bad}"
        if not all(l["verified"] for l in side):
            return f"{side[0]['side']}: nothing verified"
    return None


def _ratio_cells(dpdk: list[dict], fwd: list[dict]) -> list[float]:
    by_pair = {l["pair"]: l["value"] for l in dpdk}
    return [l["value"] / by_pair[l["pair"]] for l in fwd if by_pair.get(l["pair"])]


def table_rows(lines: list[dict]) -> list[list[str]]:
    """Same columns as W1-W4: DPDK side, offlab side, ratio, min-max, (no re-prime
    column here), merge depths, goal, verdict."""
    groups, out = _by(lines), []
    for row in ROWS:
        dpdk, fwd = groups.get(("testpmd", row.key)), groups.get(("fwd", row.key))
        goal = "–" if row.goal is None else f"≥ {row.goal}×"
        if not dpdk or not fwd:
            continue
        d, f = _median([l["value"] for l in dpdk]), _median([l["value"] for l in fwd])
        d_depth, f_depth = _median([l["depth"] for l in dpdk]), _median([l["depth"] for l in fwd])
        ratios = _ratio_cells(dpdk, fwd)
        why = refusal(dpdk, fwd)
        if why or not ratios:
            met = f"**refused** ({why or 'no pair'})"
        elif f_depth + 0.05 < d_depth:
            met = "**no** (merges less)"
        else:
            met = "yes" if row.goal is None or statistics.median(ratios) >= row.goal else "**no**"
        out.append([row.label, f"{d:.2f} Gbit/s", f"{f:.2f} Gbit/s",
                    f"{statistics.median(ratios):.2f}×" if ratios else "–",
                    f"{min(ratios):.2f}–{max(ratios):.2f}" if ratios else "–", "–",
                    f"{d_depth:.2f}", f"{f_depth:.2f}", goal, met])
    return out


def detail_rows(lines: list[dict]) -> list[list[str]]:
    """Per row and side: bytes copied per byte delivered, what the sink got marked."""
    groups, out = _by(lines), []
    for row in ROWS:
        for side in ("testpmd", "fwd"):
            runs = groups.get((side, row.key))
            if not runs:
                continue
            copies = _median([l["copies_per_byte"] for l in runs])
            gso = runs[-1]["gso_types"]
            out.append([row.key, "testpmd" if side == "testpmd" else "offlab-fwd",
                        "–" if copies is None else f"{copies:.2f}",
                        ", ".join(f"{'none' if k == '0' else 'tcpv4' if k == '1' else k}: {v}"
                                  for k, v in gso.items()),
                        str(runs[-1]["over_mtu_without_gso"]),
                        str(sum(l["verified"] for l in runs)),
                        str(_median([l["backend_dropped"] for l in runs]))])
    return out


def seed004_rows(lines: list[dict]) -> list[list[str]]:
    groups, out = _by(lines), []
    for label, offload, baseline in SEED004:
        for side, name in (("testpmd", "DPDK testpmd"), ("fwd", "offlab-fwd")):
            on, off = groups.get((side, offload)), groups.get((side, baseline))
            if not on or not off:
                continue
            a, b = _median([l["value"] for l in on]), _median([l["value"] for l in off])
            out.append([label, name, f"{a:.2f}", f"{b:.2f}", f"{(a / b - 1) * 100:+.0f} %"])
    return out


def section(lines: list[dict], pairs: int, seconds: float, markdown_table) -> str:
    return "\n".join([
        f"W5: offlab-fwd vs DPDK testpmd as the vhost-user backend, {pairs} pairs (testpmd, "
        f"offlab-fwd, in turn per row), {seconds} s measured after 0.5 s per run; backend on "
        f"CPU {FWD_CPU}, source/sink (`offlab-vhostload`) on CPU {LOAD_CPU}; figure = TCP "
        "payload delivered to the sink; medians; ratio = offlab-fwd/testpmd of the same pair. "
        "Merge depth = MSS segments per frame the sink received.",
        "",
        markdown_table(["workload", "DPDK testpmd", "offlab-fwd", "ratio (median)",
                        "ratio min–max", "ratio w/o re-prime", "depth DPDK", "depth offlab",
                        "goal", "met?"], table_rows(lines)),
        "",
        "Per side: bytes copied per byte delivered (offlab-fwd: its own count; testpmd: "
        "bytes its ports received plus sent, each copied once by DPDK's vhost library), the "
        "GSO types the sink saw (last run), frames over the MTU that carried no GSO type "
        "(last run), frames the sink verified (all runs), frames the backend dropped "
        "(median):",
        "",
        markdown_table(["row", "backend", "copies/byte", "sink saw", "over MTU, no GSO",
                        "verified", "dropped"], detail_rows(lines)),
        "",
        "Seed 004's comparison (Gbit/s of payload delivered, medians):",
        "",
        markdown_table(["offload", "backend", "with backend offload", "without", "gain"],
                       seed004_rows(lines)),
        "",
        "Commands (per run): `" + " ".join([TESTPMD, *TESTPMD_EAL, "--file-prefix=…",
        "--vdev net_vhost0,iface=A,queues=1,tso=1 --vdev net_vhost1,iface=B,queues=1,tso=1",
        "--", *TESTPMD_APP]) + "` fed `" + testpmd_commands(ROWS[0]).strip().replace("\n", "; ")
        + "` (GSO rows: `set port 1 gso on; set gso segsz 1514` instead of GRO); "
        f"`offlab-fwd --port vhost-user:A --port vhost-user:B --mode M --cpu {FWD_CPU}`; "
        f"`taskset -c {LOAD_CPU} offlab-vhostload --source A --sink B …` (arguments per row "
        "in benches/fwd_w5.py).",
    ])
