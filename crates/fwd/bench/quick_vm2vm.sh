#!/bin/bash
# Quick vm2vm throughput of offlab-fwd per mode, side by side with a direct veth pair.
# Not the lab's benchmark (no CPU accounting, no statistics beyond a median); a sanity
# check of the goals in docs/fwd.md. Run as root from the repository root after
# `cargo build --release -p offlab-fwd`:
#   crates/fwd/bench/quick_vm2vm.sh [repetitions] [seconds]
# Configurations are interleaved per repetition so slow drifts in machine load hit all.
set -u
REPS=${1:-3}
T=${2:-5}
F=${FWD:-target/release/offlab-fwd}
A=ofl-$$-a
B=ofl-$$-b
RESULTS=$(mktemp)
FP=
cleanup() {
  [ -n "$FP" ] && kill "$FP" 2>/dev/null && wait "$FP" 2>/dev/null
  ip netns del "$A" 2>/dev/null; ip netns del "$B" 2>/dev/null
  rm -f "$RESULTS"
}
trap cleanup EXIT

namespaces() { ip netns add "$A"; ip netns add "$B"; ip -n "$A" link set lo up; ip -n "$B" link set lo up; }
teardown() { ip netns del "$A"; ip netns del "$B"; }

iperf_gbps() {
  ip netns exec "$B" iperf3 -s -1 -D >/dev/null; sleep 0.3
  ip netns exec "$A" iperf3 -c 10.210.0.2 -t "$T" -J |
    python3 -c "import json,sys; print(json.load(sys.stdin)['end']['sum_received']['bits_per_second']/1e9)"
}

through_fwd() { # name mode port-a-options port-b-options
  namespaces
  "$F" --port "tap:ofl-ta@$A,$3" --port "tap:ofl-tb@$B,$4" --mode "$2" >/dev/null & FP=$!
  sleep 0.3
  ip -n "$A" addr add 10.210.0.1/24 dev ofl-ta; ip -n "$B" addr add 10.210.0.2/24 dev ofl-tb
  echo "$1 $(iperf_gbps)" >>"$RESULTS"
  kill "$FP"; wait "$FP" 2>/dev/null; FP=
  teardown
}

direct() {
  namespaces
  ip -n "$A" link add ofl-va type veth peer name ofl-vb netns "$B"
  ip -n "$A" addr add 10.210.0.1/24 dev ofl-va; ip -n "$B" addr add 10.210.0.2/24 dev ofl-vb
  ip -n "$A" link set ofl-va up; ip -n "$B" link set ofl-vb up
  echo "direct-veth $(iperf_gbps)" >>"$RESULTS"
  teardown
}

TSO=offloads=csum+tso4+tso6
for rep in $(seq "$REPS"); do
  direct
  through_fwd tso-pass-through pass "$TSO" "$TSO"
  # MTU frames both ways; the sending namespace segments (kernel GSO).
  through_fwd none/kernel-gso pass offloads=csum offloads=csum
  through_fwd kernel-gro pass offloads=csum offloads=csum,napi
  through_fwd engine-gro gro offloads=csum "$TSO"
  through_fwd engine-gso gso "$TSO" offloads=csum
done
python3 - "$RESULTS" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    name, gbps = line.split()
    runs.setdefault(name, []).append(float(gbps))
med = {k: statistics.median(v) for k, v in runs.items()}
for k, v in runs.items():
    print(f"{k:18} median {med[k]:6.2f} Gbit/s   runs {' '.join(f'{x:.2f}' for x in v)}")
def ratio(a, b): return med[a] / med[b]
print(f"engine-gro / none       = {ratio('engine-gro', 'none/kernel-gso'):.2f}  (goal >= 2)")
print(f"engine-gro / kernel-gro = {ratio('engine-gro', 'kernel-gro'):.2f}  (goal > 1)")
print(f"engine-gso / kernel-gso = {ratio('engine-gso', 'none/kernel-gso'):.2f}  (goal >= 1.55)")
print(f"pass / direct veth      = {ratio('tso-pass-through', 'direct-veth'):.2f}  (goal >= 0.85)")
PY
