/* The measuring loop and the JSON lines both C benchmark peers share (dpdk_bench.c,
 * capi_bench.c); the Rust side (crates/engine/benches/engine_vs_dpdk/measure.rs) measures
 * the same way, so benches/run.py can pair their figures. */
#ifndef OFFLAB_BENCH_MEASURE_H
#define OFFLAB_BENCH_MEASURE_H

#include <stdint.h>

typedef void (*round_fn)(void *state);

struct measured {
	uint64_t rounds;
	double elapsed;
	double best_rate; /* rounds per second at the fast decile of samples */
};

/* --rounds N: exactly N rounds per workload (for callgrind instruction counts). */
extern uint64_t fixed_rounds;

double now_s(void);

/* Whether workload `name` is selected by `--only PREFIX` (every one for ""). */
int wanted(const char *name, const char *only);

/* Runs `fn` for 20% of `seconds` untimed (warm caches, branch predictors; also sizes
 * a batch of rounds that takes about 50 us), calls `reset` so counters cover the timed
 * part only, then runs it for `seconds`, timing every batch as one sample. The figure
 * is the rate at the fast decile (10th percentile of time per round): this VM's cores
 * are shared, and preemption lands in whole samples, which a low percentile leaves
 * out. */
struct measured measure(round_fn fn, void (*reset)(void *), void *st, double seconds);

/* One JSON line for `side`; `ops_per_round` scales rounds/s to the unit (packets,
 * segments, bits; / 1e6 or 1e9); `depth` <= 0 and `reprime_ns` < 0 mean none. */
void emit_line(const char *side, const char *workload, const char *unit, double ops_per_round,
	       double depth, const struct measured *m, uint64_t digest, double reprime_ns);

#endif
