"""Engine bench (engine_vs_dpdk, engine side only) of two builds, alternated ABBA per pair,
each run pinned to CPU 0 as benches/run.py runs it. Appends JSON lines to OUT."""
import json, os, subprocess, sys
BINS = {"before": "/work/wt-up43-before/target/release/deps/engine_vs_dpdk-c04f6bdf09cf5a23",
        "after": "/work/wt-up43/target/release/deps/engine_vs_dpdk-c04f6bdf09cf5a23"}
OUT = "/tmp/up43-bench.jsonl"
first, count = int(sys.argv[1]), int(sys.argv[2])
with open(OUT, "a") as out:
    for pair in range(first, first + count):
        order = ["before", "after"] if pair % 2 == 0 else ["after", "before"]
        for tree in order:
            # The dispatched rows, then the AVX2-dispatch side of W3 (benches/run.py's engine_avx2).
            for side, extra, env in (("engine", [], {}), ("engine_avx2", ["--only", "csum_"], {"OFFLAB_CSUM_KERNEL": "avx2"})):
                cmd = ["taskset", "-c", "0", BINS[tree], "--seconds", "0.3", *extra]
                text = subprocess.run(cmd, check=True, capture_output=True, text=True, env={**os.environ, **env}).stdout
                for line in text.splitlines():
                    if line.startswith("{"):
                        d = json.loads(line)
                        d.update(tree=tree, pair=pair, side=side)
                        out.write(json.dumps(d) + "\n")
            print(f"pair {pair} {tree} done", file=sys.stderr, flush=True)
