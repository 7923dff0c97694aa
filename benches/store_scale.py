"""The team store at scale (not a test): a PostgreSQL database filled with generated runs
(10 000 runs and 50 M samples by default, written with psycopg's COPY), then the reading
commands timed as a user runs them, each a new `offlab` process, with its peak RSS.

    sudo .venv/bin/python benches/store_scale.py [--runs 10000] [--samples 50000000]
    sudo .venv/bin/python benches/store_scale.py --samples 5000000 --lock /tmp/offlab-measure.lock
    sudo .venv/bin/python benches/store_scale.py --keep          # fill, time, leave the server up
    sudo .venv/bin/python benches/store_scale.py --url URL       # time again against that server

It starts its own server (tests/pgserver.py: a throw-away cluster on a free loopback
port, removed at the end). Goals (issue 39): `list` < 1 s, `history PATTERN` < 2 s for
100 matching runs, memory flat. Samples have no per-core CPU, offload or counter rows
(those would be tens of rows per sample), but each has the headline CPU figure an
offlab writes with it and each run its case count (revision 0005); `history` aggregates
its cases' samples in the database, `compare` reads the samples it prints. `--lock
FILE` holds that lock (flock) for the timing part only, not the fill. `--keep` leaves
the filled server running (its data directory and URL are printed; stop it with the
printed pg_ctl line), so that `--url` times a changed offlab again without a second fill.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from pgserver import PgServer, server_bindir  # noqa: E402

from offlab.run.store_health import upgrade_store  # noqa: E402
from offlab.store.location import parse  # noqa: E402

OFFLAB = [sys.executable, "-c", "from offlab.entry import main; main()"]
CASES_PER_RUN = 20
HISTORY_RUNS = 100
RARE_KEY = "bare/mtu9000/tx:tso-off/tcp"
"""The case only HISTORY_RUNS runs measured: what `history mtu9000` follows."""
TRAFFIC = json.dumps({"protocol": "tcp", "duration_s": 10.0})


def _run_id(n: int) -> str:
    return f"20260101-{n:06d}-bench"


def _case_keys(n: int) -> list[str]:
    keys = [f"bare/mtu1500/tx:profile{i}/tcp" for i in range(CASES_PER_RUN - 1)]
    return keys + [RARE_KEY if n % (RUNS // HISTORY_RUNS) == 0 else "bare/mtu1500/tx:all-on/tcp"]


def _profile(key: str) -> str:
    return key.split(":")[1].split("/")[0]


def fill(server: PgServer, database: str, runs: int, samples: int) -> None:
    per_case = max(1, samples // (runs * CASES_PER_RUN))
    with server.admin(database) as conn, conn.cursor() as cur:
        # The generated rows are consistent by construction; the foreign-key triggers
        # (one per row) would make most of a 50 M-row fill. The constraints stay declared.
        cur.execute("SET session_replication_role = replica")
        with cur.copy("COPY run (id, plan, started_at, finished_at, status, command_line, kernel, cpu_model,"
                      " cores, host, notes, tool_versions, settings, host_facts, case_count, sample_count)"
                      " FROM STDIN") as copy:
            for n in range(runs):
                start = 1.79e9 + n * 3600
                copy.write_row((_run_id(n), "bench", time.strftime("%Y-%m-%d %H:%M:%S+00", time.gmtime(start)),
                                time.strftime("%Y-%m-%d %H:%M:%S+00", time.gmtime(start + 1800)), "complete",
                                "offlab run --plan bench", "6.12.0", "cpu", 2, "bench", "", "{}", "{}", "{}",
                                CASES_PER_RUN, per_case * CASES_PER_RUN))
        with cur.copy('COPY "case" (run_id, key, position, scenario, mtu, profile_name, profile_side,'
                      " profile_features, traffic, topology, params, label) FROM STDIN") as copy:
            for n in range(runs):
                for position, key in enumerate(_case_keys(n)):
                    mtu = 9000 if "mtu9000" in key else 1500
                    copy.write_row((_run_id(n), key, position, "bare", mtu, _profile(key), "tx", "{}",
                                    TRAFFIC, "{}", "{}", ""))
        print(f"runs and cases written; samples ({runs * CASES_PER_RUN * per_case:,})…", flush=True)
        began = time.monotonic()
        # The headline CPU an offlab writes with each sample (headline.py): these samples'
        # CPU can be used (no window counter, no refusal) and, with no CPU rows, is 0 % per Gbit/s.
        with cur.copy("COPY sample (run_id, case_key, repetition, started_at, duration_s, throughput_bps,"
                      " sender_bps, retransmits, roles, role_hosts, cpu_timed, cpu_per_gbps) FROM STDIN") as copy:
            for n in range(runs):
                run_id, start = _run_id(n), 1.79e9 + n * 3600
                stamp = time.strftime("%Y-%m-%d %H:%M:%S+00", time.gmtime(start))
                for key in _case_keys(n):
                    for rep in range(per_case):
                        bps = 9e9 + ((n * 7919 + rep * 104729) % 1000) * 1e6
                        copy.write_row((run_id, key, rep, stamp, 10.0, bps, bps, rep % 7, "{}", "{}", True, 0.0))
                if n % 1000 == 999:
                    print(f"  {n + 1} runs, {time.monotonic() - began:.0f} s", flush=True)
    with server.admin(database) as conn:
        conn.execute("VACUUM ANALYZE")


def timed(*args: str, cwd: Path) -> tuple[float, int, str]:
    """(wall seconds, peak RSS in MiB, first line of stdout) of one offlab command."""
    began = time.monotonic()
    done = subprocess.run(["/usr/bin/time", "-f", "%M", *OFFLAB, *args], capture_output=True, text=True, cwd=cwd)
    elapsed = time.monotonic() - began
    if done.returncode != 0:
        raise SystemExit(f"offlab {' '.join(args)}: exit {done.returncode}: {done.stderr.strip()}")
    peak_kib = int(done.stderr.strip().splitlines()[-1])
    return elapsed, peak_kib // 1024, (done.stdout.splitlines() or [""])[0]


def in_process(url: str, repeat: int) -> None:
    """The store's part of `list` and `history`, without the process start and the report."""
    from offlab.report.history import build_history, matches
    from offlab.store.store import Store
    for name, work in (("Store.runs (list)", lambda s: len(s.runs())),
                       ("runs_with_cases + build_history",
                        lambda s: len(build_history(s.runs_with_cases(lambda k: matches("mtu9000", k)), "mtu9000")))):
        times = []
        for _ in range(repeat):
            began = time.monotonic()
            with Store(url, readonly=True) as store:
                work(store)
            times.append(time.monotonic() - began)
        print(f"{name:32s} median {sorted(times)[repeat // 2]:6.2f} s  (in process)", flush=True)


@contextmanager
def held(lock: str | None):
    if lock is None:
        yield
        return
    with open(lock, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def main() -> None:
    global RUNS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--samples", type=int, default=50_000_000)
    parser.add_argument("--repeat", type=int, default=3, help="timings per command (the median is printed)")
    parser.add_argument("--lock", help="flock this file while timing")
    parser.add_argument("--keep", action="store_true", help="leave the filled server running")
    parser.add_argument("--url", help="time against a store a --keep run filled (same --runs)")
    args = parser.parse_args()
    RUNS = args.runs
    if args.url:
        time_commands(args.url, args.repeat, args.lock)
        return
    bindir = server_bindir()
    if bindir is None:
        raise SystemExit("PostgreSQL's server is not installed: make setup")
    server = PgServer(bindir).start()
    try:
        database = server.create_database()
        url = server.url(database)
        upgrade_store(parse(url))
        began = time.monotonic()
        fill(server, database, args.runs, args.samples)
        with server.admin(database) as conn:
            rows = conn.execute("SELECT count(*) FROM sample").fetchone()[0]
            size = conn.execute("SELECT pg_size_pretty(pg_database_size(current_database()))").fetchone()[0]
        print(f"filled {args.runs:,} runs, {rows:,} samples ({size}) in {time.monotonic() - began:.0f} s",
              flush=True)
        if args.keep:
            print(f"kept: --url {url}\nstop: runuser -u postgres -- {bindir}/pg_ctl -D {server.data} "
                  f"-m fast stop && rm -rf {server.root}", flush=True)
        time_commands(url, args.repeat, args.lock)
    finally:
        if not args.keep:
            server.stop()


def time_commands(url: str, repeat: int, lock: str | None) -> None:
    with tempfile.TemporaryDirectory(prefix="offlab-scale-") as scratch:
        work = Path(scratch)
        commands = {
            "list": ("list", "--store", url),
            f"history {RARE_KEY.split('/')[1]} ({HISTORY_RUNS} runs)":
                ("history", "mtu9000", "--store", url, "--out", str(work / "history")),
            "doctor --store": ("doctor", "--store", url),
            "compare (two runs)": ("compare", _run_id(1), _run_id(2), "--store", url, "--out", str(work / "cmp")),
        }
        with held(lock):
            in_process(url, repeat)
            wall, rss, _ = sorted(timed("--help", cwd=work) for _ in range(repeat))[repeat // 2]
            print(f"{'offlab --help (start-up alone)':32s} median {wall:6.2f} s  peak RSS {rss} MiB", flush=True)
            for name, argv in commands.items():
                results = sorted(timed(*argv, cwd=work) for _ in range(repeat))
                wall, rss, _ = results[len(results) // 2]
                print(f"{name:32s} median {wall:6.2f} s  (of {', '.join(f'{r[0]:.2f}' for r in results)})"
                      f"  peak RSS {rss} MiB", flush=True)


RUNS = 10_000

if __name__ == "__main__":
    main()
