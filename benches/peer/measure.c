/* The shared measuring loop of the C benchmark peers (see measure.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "measure.h"

double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}


uint64_t fixed_rounds;

#define MAX_SAMPLES (1u << 17)
static double samples[MAX_SAMPLES]; /* seconds per round, one per batch */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Time of one sample: long enough that the clock's cost does not matter, short
 * enough that most samples fit between two preemptions of this shared core. */
#define SAMPLE_SECONDS 50e-6

int wanted(const char *name, const char *only)
{
	return strncmp(name, only, strlen(only)) == 0;
}

struct measured measure(round_fn fn, void (*reset)(void *), void *st, double seconds)
{
	struct measured m = {0, 0, 0};
	double t0 = now_s(), ts, te;
	uint64_t warm_rounds = 0;
	unsigned i, n = 0, batch;

	if (fixed_rounds) {
		for (m.rounds = 0; m.rounds < fixed_rounds; m.rounds++)
			fn(st);
		m.elapsed = now_s() - t0 + 1e-9;
		m.best_rate = m.rounds / m.elapsed;
		return m;
	}
	do {
		fn(st);
		warm_rounds++;
	} while ((te = now_s()) - t0 < seconds * 0.2);
	batch = (unsigned)(SAMPLE_SECONDS / ((te - t0) / warm_rounds)) + 1;
	reset(st);
	t0 = ts = now_s();
	do {
		for (i = 0; i < batch; i++)
			fn(st);
		te = now_s();
		samples[n++] = (te - ts) / batch;
		m.rounds += batch;
		ts = te;
	} while (te - t0 < seconds && n < MAX_SAMPLES);
	m.elapsed = te - t0;
	qsort(samples, n, sizeof(samples[0]), cmp_double);
	m.best_rate = 1.0 / samples[n / 10];
	return m;
}

void emit_line(const char *side, const char *workload, const char *unit, double ops_per_round,
	       double depth, const struct measured *m, uint64_t digest, double reprime_ns)
{
	printf("{\"side\":\"%s\",\"workload\":\"%s\",\"unit\":\"%s\",\"value\":%.4f,"
	       "\"mean\":%.4f,", side, workload, unit, m->best_rate * ops_per_round,
	       m->rounds / m->elapsed * ops_per_round);
	if (depth > 0)
		printf("\"depth\":%.3f,", depth);
	else
		printf("\"depth\":null,");
	if (reprime_ns >= 0)
		printf("\"reprime_ns_per_pkt\":%.2f,", reprime_ns);
	printf("\"rounds\":%lu,\"elapsed_s\":%.4f,\"digest\":\"%016lx\",\"heap_allocs\":null}\n",
	       (unsigned long)m->rounds, m->elapsed, (unsigned long)digest);
	fflush(stdout);
}

