#!/bin/bash
# CPU cost per megabyte forwarded, per vm2vm configuration, at a fixed iperf3 rate.
# Unlike throughput, CPU time per byte barely depends on what else runs on the
# machine, so this compares the modes even on a shared 2-core box. "fwd" is the
# forwarder's own CPU (its tap writes also run the receiving namespace's stack);
# "total" adds both iperf3 processes (the sender's segmentation runs there).
# Run as root from the repository root after `cargo build --release -p offlab-fwd`:
#   crates/fwd/bench/cpu_per_mb.sh [repetitions] [rate, default 1G]
set -u
REPS=${1:-3}
RATE=${2:-1G}
F=${FWD:-target/release/offlab-fwd}
A=ofl-$$-a
B=ofl-$$-b
OUT=$(mktemp)
RESULTS=$(mktemp)
FP=
cleanup() {
  [ -n "$FP" ] && kill "$FP" 2>/dev/null && wait "$FP" 2>/dev/null
  ip netns del "$A" 2>/dev/null; ip netns del "$B" 2>/dev/null
  rm -f "$OUT" "$RESULTS"
}
trap cleanup EXIT

# Sum of run time (ns) of every thread of the given pids.
runtime() { for p in "$@"; do cat /proc/"$p"/task/*/schedstat; done 2>/dev/null | awk '{s += $1} END {print s}'; }
rx_bytes() { tail -1 "$OUT" | python3 -c "import json,sys; print(sum(d['rx_bytes'] for d in json.load(sys.stdin)['directions'].values()))"; }

measure() { # name mode port-a-options port-b-options
  ip netns add "$A"; ip netns add "$B"
  "$F" --port "tap:ofl-ta@$A,$3" --port "tap:ofl-tb@$B,$4" --mode "$2" >"$OUT" & FP=$!
  sleep 0.3
  ip -n "$A" addr add 10.210.0.1/24 dev ofl-ta; ip -n "$B" addr add 10.210.0.2/24 dev ofl-tb
  ip netns exec "$B" iperf3 -s -1 -D -I "$OUT.server"; sleep 0.3
  ip netns exec "$A" iperf3 -c 10.210.0.2 -t 5 -b "$RATE" >/dev/null & CP=$!
  sleep 1
  SP=$(cat "$OUT.server")
  kill -USR1 "$FP"; sleep 0.1
  f0=$(runtime "$FP"); t0=$(runtime "$FP" "$CP" "$SP"); b0=$(rx_bytes)
  sleep 3
  f1=$(runtime "$FP"); t1=$(runtime "$FP" "$CP" "$SP")
  kill -USR1 "$FP"; sleep 0.1; b1=$(rx_bytes)
  wait "$CP"
  echo "$1 $(( (f1 - f0) / ((b1 - b0) / 1000000) / 1000 )) $(( (t1 - t0) / ((b1 - b0) / 1000000) / 1000 ))" >>"$RESULTS"
  kill "$FP"; wait "$FP" 2>/dev/null; FP=
  rm -f "$OUT.server"
  ip netns del "$A"; ip netns del "$B"
}

TSO=offloads=csum+tso4+tso6
for rep in $(seq "$REPS"); do
  measure tso-pass-through pass "$TSO" "$TSO"
  measure none/kernel-gso pass offloads=csum offloads=csum
  measure kernel-gro pass offloads=csum offloads=csum,napi
  measure engine-gro gro offloads=csum "$TSO"
  measure engine-gso gso "$TSO" offloads=csum
done
python3 - "$RESULTS" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    name, fwd, total = line.split()
    runs.setdefault(name, []).append((int(fwd), int(total)))
print(f"{'configuration':18} {'fwd us/MB':>10} {'total us/MB':>12}   (medians)")
for name, v in runs.items():
    print(f"{name:18} {statistics.median(f for f, _ in v):10.0f} {statistics.median(t for _, t in v):12.0f}")
PY
