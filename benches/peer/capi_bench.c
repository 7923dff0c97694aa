/* The engine through its C API (crates/capi, libofflab_engine_c.a) on the workloads of
 * benches/workloads.md: W1 GRO, W2 GSO, W3 checksum. Same packets, same measuring
 * loop and the same JSON lines as dpdk_bench.c, with side "engine_c", so
 * benches/run.py can set engine-via-C beside engine-via-Rust and DPDK.
 * GRO runs twice without mbufs: frame by frame with ofl_gro_push, in the same loop as
 * the Rust side (side "engine_c": the cost of the C boundary), and a burst of 32 at a
 * time with ofl_gro_push_burst (side "engine_c_burst"). Both re-prime a burst's headers
 * first, then push the burst, and their callbacks only count: no mbuf work.
 * Side "engine_c_mbuf" (capi_mbuf.c) adds the mbuf work DPDK's rows do, on DPDK's own
 * librte_mbuf: GRO deliveries built into mbuf chains, GSO segments as a header mbuf plus
 * an indirect mbuf each, freed after. --no-mbuf skips it (and the EAL).
 * Usage: capi_bench [--seconds S] [--only PREFIX] [--rounds N] [--push single|burst|both]
 *                   [--no-mbuf | --mbuf-only]
 * (--mbuf-only: only side "engine_c_mbuf", e.g. for callgrind's per-packet counts) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "offlab_engine.h"
#include "capi_mbuf.h"
#include "measure.h"
#include "packets.h"

#define ROUND 1024
#define BURST 32
#define BURSTS (ROUND / BURST)
#define MAX_FLOWS 64 /* as the Rust side and DPDK's max_flow_num */

static void die(const char *what)
{
	fprintf(stderr, "capi_bench: %s\n", what);
	exit(1);
}

static int must(int rc, const char *what)
{
	if (rc < 0) {
		fprintf(stderr, "capi_bench: %s: %s (%d)\n", what, ofl_strerror(rc), rc);
		exit(1);
	}
	return rc;
}

static int push_modes = 3; /* bit 0: frame by frame (ofl_gro_push); bit 1: per burst */

/* Every line this program prints is the engine-via-C side. */
static void emit(const char *workload, const char *unit, double ops_per_round,
		 double depth, const struct measured *m, uint64_t digest, double reprime_ns)
{
	emit_line("engine_c", workload, unit, ops_per_round, depth, m, digest, reprime_ns);
}

/* ---- W1: GRO ------------------------------------------------------------------- */

struct gro_bench {
	uint8_t *frames[ROUND];
	ofl_rx_frame rx[ROUND];
	uint8_t headers[ROUND][TCP4_HDRS];
	ofl_gro *gro;
	unsigned flush_every;
	int reprime_only;
	int burst; /* push with ofl_gro_push_burst */
	uint64_t inputs, outputs, segments;
	uint64_t digest;
};

/* Counts what comes out and touches it, as the Rust side's black_box does. */
static void on_merged(void *user, const ofl_gro_merged *m)
{
	struct gro_bench *g = user;
	g->outputs++;
	g->segments += m->segments;
	__asm__ volatile("" : : "r"(m->header), "r"(m->parts) : "memory");
}

static void gro_round(void *arg)
{
	struct gro_bench *g = arg;
	unsigned b, n;
	uint32_t reason;

	for (b = 0; b < BURSTS; b++) {
		/* The burst is re-primed before it is pushed, as on the Rust and DPDK sides. */
		for (n = b * BURST; n < (b + 1) * BURST; n++)
			memcpy(g->frames[n], g->headers[n], TCP4_HDRS);
		for (n = b * BURST; n < (b + 1) * BURST; n++) {
			if (g->reprime_only || g->burst)
				break;
			if (ofl_gro_push(g->gro, n, g->frames[n], GRO_FRAME, OFL_RX_CSUM_VALIDATED,
					 b, on_merged, g, &reason) == OFL_GRO_REFUSED) {
				g->outputs++; /* forwarded as it is */
				g->segments++;
			}
		}
		if (!g->reprime_only && g->burst) {
			int refused = ofl_gro_push_burst(g->gro, &g->rx[b * BURST], BURST,
							 OFL_RX_CSUM_VALIDATED, b, on_merged, g,
							 NULL, NULL);
			g->outputs += (uint64_t)refused; /* forwarded as they are */
			g->segments += (uint64_t)refused;
		}
		if (!g->reprime_only && (b + 1) % g->flush_every == 0)
			ofl_gro_flush(g->gro, on_merged, g);
	}
	g->inputs += ROUND;
	if (g->reprime_only)
		__asm__ volatile("" : : "r"(g->frames) : "memory");
}

static void gro_reset(void *arg)
{
	struct gro_bench *g = arg;
	g->inputs = g->outputs = g->segments = 0;
}

static void gro_setup(struct gro_bench *g, unsigned flows)
{
	unsigned n;

	g->digest = FNV_OFFSET;
	for (n = 0; n < ROUND; n++) {
		build_tcp4_frame(g->frames[n], n % flows, n / flows, GRO_PAYLOAD, TCP_ACK, 1);
		memcpy(g->headers[n], g->frames[n], TCP4_HDRS);
		g->digest = fnv1a(g->digest, g->frames[n], GRO_FRAME);
	}
}

static void run_gro(double seconds, const char *only)
{
	static const struct { const char *name; unsigned flows, flush_every; } cases[] = {
		{"gro_tcp4_f1_burst", 1, 1},    {"gro_tcp4_f8_burst", 8, 1},
		{"gro_tcp4_f64_burst", 64, 1},  {"gro_tcp4_f64_flush4", 64, 4},
		{"gro_tcp4_f64_flush32", 64, 32},
	};
	static struct gro_bench g;
	ofl_gro_config cfg;
	struct measured m;
	double reprime_ns = -1;
	unsigned i, n;

	for (n = 0; n < ROUND; n++) {
		if ((g.frames[n] = aligned_alloc(64, 1536)) == NULL)
			die("frame alloc");
		g.rx[n].id = n;
		g.rx[n].data = g.frames[n];
		g.rx[n].len = GRO_FRAME;
	}
	must(ofl_gro_config_default(&cfg), "ofl_gro_config_default");
	cfg.max_flows = MAX_FLOWS;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		unsigned mode;

		if (!wanted(cases[i].name, only))
			continue;
		gro_setup(&g, cases[i].flows);
		if (reprime_ns < 0 && !fixed_rounds) {
			g.reprime_only = 1;
			g.flush_every = 1;
			m = measure(gro_round, gro_reset, &g, seconds);
			reprime_ns = 1e9 / (m.best_rate * ROUND);
			g.reprime_only = 0;
		}
		for (mode = 0; mode < 2; mode++) {
			ofl_gro_stats stats;

			if (!(push_modes & (1u << mode)))
				continue;
			g.burst = mode == 1;
			must(ofl_gro_new(&cfg, &g.gro), "ofl_gro_new");
			g.flush_every = cases[i].flush_every;
			gro_reset(&g);
			gro_round(&g);
			must(ofl_gro_get_stats(g.gro, &stats), "ofl_gro_get_stats");
			if (g.segments != ROUND || stats.refused_total != 0)
				die("GRO check: every frame must come out once, none refused");
			m = measure(gro_round, gro_reset, &g, seconds);
			emit_line(g.burst ? "engine_c_burst" : "engine_c", cases[i].name, "Mpps",
				  ROUND / 1e6, (double)g.inputs / g.outputs, &m, g.digest, reprime_ns);
			ofl_gro_free(g.gro);
			g.gro = NULL;
		}
	}
	for (n = 0; n < ROUND; n++)
		free(g.frames[n]);
}

/* ---- W2: GSO ------------------------------------------------------------------- */

struct gso_bench {
	const uint8_t *frame;
	ofl_gso *gso;
	ofl_vnet_hdr vnet;
	uint32_t flags;
	uint64_t segments;
};

static void gso_round(void *arg)
{
	struct gso_bench *g = arg;
	const uint8_t *frame = g->frame;
	int n;

	__asm__ volatile("" : "+r"(frame) : : "memory");
	n = ofl_gso_segment(g->gso, frame, GSO_FRAME, &g->vnet, g->flags);
	if (n != GSO_SEGMENTS)
		die("ofl_gso_segment did not give 45 segments");
	g->segments += (uint64_t)n;
}

static void gso_reset(void *arg)
{
	((struct gso_bench *)arg)->segments = 0;
}

/* Proves the measured work is the real work: 45 segments of 54 + 1448 bytes, and with
 * full checksums each segment's IPv4 and TCP checksums verify. */
static void check_gso_output(struct gso_bench *g)
{
	static uint8_t seg[TCP4_HDRS + GSO_MSS];
	int n = must(ofl_gso_segment(g->gso, g->frame, GSO_FRAME, &g->vnet, g->flags), "gso");
	int i;

	if (n != GSO_SEGMENTS)
		die("ofl_gso_segment did not give 45 segments");
	for (i = 0; i < n; i++) {
		ofl_gso_seg s;
		uint32_t pseudo;

		must(ofl_gso_segment_get(g->gso, (size_t)i, &s), "ofl_gso_segment_get");
		if (s.header_len != TCP4_HDRS || s.payload_len != GSO_MSS)
			die("GSO segment of unexpected length");
		if (!(g->flags & OFL_GSO_FULL_CSUM))
			continue;
		memcpy(seg, s.header, s.header_len);
		memcpy(seg + s.header_len, g->frame + s.payload_offset, s.payload_len);
		must(ofl_csum_pseudo_v4(seg + 26, seg + 30, 6, TCP_LEN + GSO_MSS, &pseudo), "pseudo");
		if (ref_csum_fold(seg + ETH_LEN, IPV4_LEN, 0) != 0xffff ||
		    ref_csum_fold(seg + ETH_LEN + IPV4_LEN, TCP_LEN + GSO_MSS, pseudo) != 0xffff)
			die("checksum of a GSO segment does not verify");
	}
}

static void run_gso(double seconds, const char *only)
{
	static const char *names[] = {"gso_tcp4_partial", "gso_tcp4_full"};
	static uint8_t frame[GSO_FRAME] __attribute__((aligned(64)));
	struct gso_bench g;
	struct measured m;
	uint64_t digest;
	int i;

	build_tcp4_frame(frame, 0, 0, GSO_MSS * GSO_SEGMENTS, TCP_ACK | TCP_PSH, 0);
	digest = fnv1a(FNV_OFFSET, frame, GSO_FRAME);
	memset(&g, 0, sizeof(g));
	g.frame = frame;
	must(ofl_gso_new(NULL, &g.gso), "ofl_gso_new");
	/* The virtio-net header a guest sends with this TSO super-packet. */
	g.vnet.flags = OFL_VNET_F_NEEDS_CSUM;
	g.vnet.gso_type = OFL_VNET_GSO_TCPV4;
	g.vnet.hdr_len = TCP4_HDRS;
	g.vnet.gso_size = GSO_MSS;
	g.vnet.csum_start = ETH_LEN + IPV4_LEN;
	g.vnet.csum_offset = 16;
	for (i = 0; i < 2; i++) {
		if (!wanted(names[i], only))
			continue;
		g.flags = i ? OFL_GSO_FULL_CSUM : 0;
		check_gso_output(&g);
		m = measure(gso_round, gso_reset, &g, seconds);
		emit(names[i], "Msegs/s", GSO_SEGMENTS / 1e6, 0, &m, digest, -1);
	}
	ofl_gso_free(g.gso);
}

/* ---- W3: checksum -------------------------------------------------------------- */

struct csum_bench {
	const uint8_t *buf;
	size_t len;
	volatile uint16_t sink;
};

static void csum_round(void *arg)
{
	struct csum_bench *c = arg;
	const uint8_t *buf = c->buf;
	uint32_t sum;

	__asm__ volatile("" : "+r"(buf) : : "memory");
	ofl_csum_sum(buf, c->len, 0, &sum);
	c->sink = ofl_csum_fold(sum);
}

static void csum_reset(void *arg)
{
	(void)arg;
}

static void run_csum(double seconds, const char *only)
{
	static const size_t lens[] = {1500, 65536};
	static uint8_t buf[65536] __attribute__((aligned(64)));
	struct csum_bench c;
	struct measured m;
	char name[32];
	int i;

	fill_csum_buffer(buf, sizeof(buf));
	for (i = 0; i < 2; i++) {
		snprintf(name, sizeof(name), "csum_%zu", lens[i]);
		if (!wanted(name, only))
			continue;
		memset(&c, 0, sizeof(c));
		c.buf = buf;
		c.len = lens[i];
		m = measure(csum_round, csum_reset, &c, seconds);
		if (c.sink != ref_csum_fold(buf, lens[i], 0))
			die("ofl_csum_sum disagrees with the reference sum");
		emit(name, "Gbit/s", lens[i] * 8 / 1e9, 0, &m, ref_csum_fold(buf, lens[i], 0), -1);
	}
}

int main(int argc, char **argv)
{
	double seconds = 0.3;
	const char *only = "";
	int i, mbufs = 1, plain = 1;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
			seconds = atof(argv[++i]);
		else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
			only = argv[++i];
		else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
			fixed_rounds = strtoull(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--push") == 0 && i + 1 < argc) {
			i++;
			push_modes = strcmp(argv[i], "single") == 0   ? 1
				     : strcmp(argv[i], "burst") == 0  ? 2
				     : strcmp(argv[i], "both") == 0   ? 3
								      : 0;
			if (!push_modes)
				die("--push takes single, burst or both");
		} else if (strcmp(argv[i], "--no-mbuf") == 0)
			mbufs = 0;
		else if (strcmp(argv[i], "--mbuf-only") == 0)
			plain = 0;
		else
			die("usage: capi_bench [--seconds S] [--only PREFIX] [--rounds N] "
			    "[--push single|burst|both] [--no-mbuf | --mbuf-only]");
	}
	if (!mbufs && !plain)
		die("--no-mbuf and --mbuf-only leave nothing to run");
	if (mbufs)
		capi_mbuf_init(argv[0]);
	if (plain)
		run_gro(seconds, only);
	if (mbufs)
		capi_mbuf_run_gro(seconds, only);
	if (plain)
		run_gso(seconds, only);
	if (mbufs)
		capi_mbuf_run_gso(seconds, only);
	if (plain)
		run_csum(seconds, only);
	if (mbufs)
		capi_mbuf_cleanup();
	return 0;
}
