#!/bin/bash
# Quick vm2vm-vxlan throughput of offlab-fwd per mode: a VXLAN device (VNI 42) in each
# namespace over the taps, iperf3 between the inner addresses, with the outer UDP
# checksum on (udpcsum) and off. A sanity check, not the lab's benchmark. Run as root
# from the repository root after `cargo build --release -p offlab-fwd`:
#   crates/fwd/bench/quick_vm2vm_vxlan.sh [repetitions] [seconds]
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

vxlan() { # namespace local remote inner checksum-option
  ip -n "$1" link add ofl-vx type vxlan id 42 local "$2" remote "$3" dstport 4789 "$5"
  ip -n "$1" link set ofl-vx mtu 1450 up
  ip -n "$1" addr add "$4/24" dev ofl-vx
}

csum_errors() { # namespace: UDP and TCP InCsumErrors
  ip netns exec "$1" nstat -az UdpInCsumErrors TcpInCsumErrors | awk 'NR>1 {s+=$2} END {print s+0}'
}

through_fwd() { # name mode offloads checksum-option
  ip netns add "$A"; ip netns add "$B"; ip -n "$A" link set lo up; ip -n "$B" link set lo up
  "$F" --port "tap:ofl-ta@$A,offloads=$3" --port "tap:ofl-tb@$B,offloads=$3" \
    --mode "$2" >/dev/null & FP=$!
  sleep 0.3
  ip -n "$A" addr add 10.210.0.1/24 dev ofl-ta; ip -n "$B" addr add 10.210.0.2/24 dev ofl-tb
  vxlan "$A" 10.210.0.1 10.210.0.2 10.211.0.1 "$4"
  vxlan "$B" 10.210.0.2 10.210.0.1 10.211.0.2 "$4"
  ip netns exec "$B" iperf3 -s -1 -D >/dev/null; sleep 0.3
  gbps=$(timeout $((T + 15)) ip netns exec "$A" iperf3 -c 10.211.0.2 -t "$T" -J 2>/dev/null |
    python3 -c "import json,sys; print(json.load(sys.stdin)['end']['sum_received']['bits_per_second']/1e9)" 2>/dev/null)
  echo "$1 ${gbps:-0} $(csum_errors "$B")" >>"$RESULTS"
  kill "$FP"; wait "$FP" 2>/dev/null; FP=
  ip netns del "$A"; ip netns del "$B"
}

TSO=csum+tso4+tso6
for rep in $(seq "$REPS"); do
  for csum in udpcsum noudpcsum; do
    through_fwd "pass/$csum" pass "$TSO" "$csum"
    through_fwd "csum/$csum" csum "$TSO" "$csum"
    through_fwd "gso/$csum" gso "$TSO" "$csum"
    through_fwd "gro/$csum" gro "$TSO" "$csum"
    through_fwd "none/$csum" pass none "$csum"
    # UDP-tunnel segmentation on the taps: whole VXLAN super-packets reach the forwarder.
    through_fwd "pass+udptnl/$csum" pass "$TSO+udptnl-csum" "$csum"
    through_fwd "gso+udptnl/$csum" gso "$TSO+udptnl-csum" "$csum"
  done
done
python3 - "$RESULTS" <<'PY'
import statistics, sys
runs, errors = {}, {}
for line in open(sys.argv[1]):
    name, gbps, errs = line.split()
    runs.setdefault(name, []).append(float(gbps))
    errors[name] = errors.get(name, 0) + int(errs)
for name, values in runs.items():
    print(f"{name:16} median {statistics.median(values):6.2f} Gbit/s   runs "
          f"{' '.join(f'{x:.2f}' for x in values)}   nsB csum errors {errors[name]}")
PY
