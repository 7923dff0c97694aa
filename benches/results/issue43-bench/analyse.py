import json, statistics, collections
rows = collections.defaultdict(dict)
for l in open("/tmp/up43-bench.jsonl"):
    d = json.loads(l)
    rows[(d["side"], d["workload"])][(d["tree"], d["pair"])] = (d["value"], d["unit"])
W = ["gro_tcp4_f1_burst","gro_tcp4_f8_burst","gro_tcp4_f64_burst","gro_tcp4_f64_flush4","gro_tcp4_f64_flush32",
     "gro_vxlan_tcp4_f8_burst","gso_tcp4_partial","gso_tcp4_full","gso_vxlan_tcp4_partial","csum_1500","csum_65536",
     "gro_tcp6_f8_burst","gro_geneve6_tcp6_f8_burst","gro_udp4_f8_burst","gso_tcp6_partial","gso_tcp6_full",
     "gso_vxlan_tcp4_full","gso_udp4_partial","gso_udp4_full"]
keys = [("engine", w) for w in W] + [("engine_avx2", "csum_1500"), ("engine_avx2", "csum_65536")]
print(f"{'row':42} {'before':>9} {'after':>9} unit      after/before median [min–max] of {len({p for k in rows.values() for (_, p) in k})} pairs")
for k in keys:
    r = rows[k]; pairs = sorted({p for (_, p) in r})
    b = [r[("before", p)][0] for p in pairs]; a = [r[("after", p)][0] for p in pairs]
    ratios = [x / y for x, y in zip(a, b)]
    unit = r[("before", pairs[0])][1]
    print(f"{k[0]+' '+k[1]:42} {statistics.median(b):9.2f} {statistics.median(a):9.2f} {unit:9} {statistics.median(ratios):.3f} [{min(ratios):.2f}–{max(ratios):.2f}]")
