/* DPDK 22.11 side of the engine-vs-DPDK benchmark: librte_gro, librte_gso and
 * rte_raw_cksum on the workloads of benches/workloads.md, in memory on one lcore.
 * Prints one JSON line per workload on stdout; benches/run.py compares them with the
 * engine's lines. Usage: dpdk_bench [--seconds S] [--only PREFIX] [--rounds N]
 * (--rounds N: exactly N rounds per workload, for callgrind instruction counts) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rte_eal.h>
#include <rte_gro.h>
#include <rte_gso.h>
#include <rte_ip.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_net.h>
#include <rte_tcp.h>
#include <rte_ethdev.h>

#include "mbuf_pool.h"
#include "mbuf_tx.h"
#include "measure.h"
#include "packets.h"

#define ROUND 1024
#define BURST 32
#define BURSTS (ROUND / BURST)

static void die(const char *what)
{
	fprintf(stderr, "dpdk_bench: %s\n", what);
	exit(1);
}

/* Every line this program prints is DPDK's side. */
static void emit(const char *workload, const char *unit, double ops_per_round,
		 double depth, const struct measured *m, uint64_t digest, double reprime_ns)
{
	emit_line("dpdk", workload, unit, ops_per_round, depth, m, digest, reprime_ns);
}

/* ---- W1: GRO ------------------------------------------------------------------- */

enum gro_mode { GRO_LIGHT, GRO_HEAVY, GRO_REPRIME_ONLY };

struct gro_bench {
	struct rte_mbuf *mbufs[ROUND];
	uint8_t headers[ROUND][TCP4_HDRS];             /* templates for re-priming */
	uint8_t vxlan_headers[ROUND][VXLAN_TCP4_HDRS]; /* the same, TCP/IPv4 in VXLAN */
	int vxlan;                                     /* which of the two the round is */
	enum gro_mode mode;
	unsigned flush_every; /* bursts, heavyweight mode */
	struct rte_gro_param param;
	void *ctx;
	uint64_t inputs, outputs;
	uint64_t digest;
};

/* Undo what GRO did to mbuf `n` last round (chaining, adj, header rewrite). `vxlan` is
 * a constant where it matters (gro_round_of): the bare round's lengths and copy stay
 * compile-time constants, as they were before the VXLAN round existed. */
static inline __attribute__((always_inline)) void reprime(struct gro_bench *g, unsigned n,
							  const int vxlan)
{
	struct rte_mbuf *m = g->mbufs[n];
	uint16_t frame_len = vxlan ? VXLAN_OUTER_HDRS + GRO_FRAME : GRO_FRAME;

	m->next = NULL;
	m->nb_segs = 1;
	m->data_off = RTE_PKTMBUF_HEADROOM;
	m->data_len = frame_len;
	m->pkt_len = frame_len;
	m->ol_flags = 0;
	m->packet_type = 0;
	if (vxlan)
		memcpy(rte_pktmbuf_mtod(m, uint8_t *), g->vxlan_headers[n], VXLAN_TCP4_HDRS);
	else
		memcpy(rte_pktmbuf_mtod(m, uint8_t *), g->headers[n], TCP4_HDRS);
}

static inline void parse_ptype(struct rte_mbuf *m)
{
	struct rte_net_hdr_lens hl;

	m->packet_type = rte_net_get_ptype(m, &hl, RTE_PTYPE_L2_MASK |
					   RTE_PTYPE_L3_MASK | RTE_PTYPE_L4_MASK);
	m->l2_len = hl.l2_len;
	m->l3_len = hl.l3_len;
	m->l4_len = hl.l4_len;
}

/* The packet type and lengths DPDK's VXLAN GRO needs. rte_net_get_ptype (22.11) parses
 * the outer headers but knows no UDP tunnel, so the rest is read as testpmd's checksum
 * engine reads it: the UDP port names VXLAN, then the inner Ethernet type, IPv4 header
 * length and protocol, and TCP data offset (fewer checks than the engine makes). */
static inline void parse_vxlan_ptype(struct rte_mbuf *m)
{
	struct rte_net_hdr_lens hl;
	const uint8_t *udp, *inner_ip;
	uint32_t ptype;
	unsigned ihl;

	ptype = rte_net_get_ptype(m, &hl, RTE_PTYPE_L2_MASK | RTE_PTYPE_L3_MASK |
					   RTE_PTYPE_L4_MASK);
	m->packet_type = ptype;
	if ((ptype & RTE_PTYPE_L4_MASK) != RTE_PTYPE_L4_UDP)
		return;
	udp = rte_pktmbuf_mtod_offset(m, const uint8_t *, hl.l2_len + hl.l3_len);
	inner_ip = udp + UDP_LEN + VXLAN_LEN + ETH_LEN;
	if (rte_be_to_cpu_16(*(const uint16_t *)(udp + 2)) != RTE_VXLAN_DEFAULT_PORT ||
	    rte_be_to_cpu_16(*(const uint16_t *)(inner_ip - 2)) != RTE_ETHER_TYPE_IPV4 ||
	    inner_ip[9] != IPPROTO_TCP)
		return;
	ihl = (inner_ip[0] & 0x0f) * 4;
	m->outer_l2_len = hl.l2_len;
	m->outer_l3_len = hl.l3_len;
	m->l2_len = UDP_LEN + VXLAN_LEN + ETH_LEN;
	m->l3_len = ihl;
	m->l4_len = (inner_ip[ihl + 12] >> 4) * 4;
	m->packet_type = ptype | RTE_PTYPE_TUNNEL_VXLAN | RTE_PTYPE_INNER_L2_ETHER |
			 RTE_PTYPE_INNER_L3_IPV4 | RTE_PTYPE_INNER_L4_TCP;
}

static inline __attribute__((always_inline)) void gro_round_of(struct gro_bench *g,
								  const int vxlan)
{
	struct rte_mbuf *pkts[BURST], *out[ROUND];
	unsigned b, i;

	for (b = 0; b < BURSTS; b++) {
		memcpy(pkts, &g->mbufs[b * BURST], sizeof(pkts));
		for (i = 0; i < BURST; i++) {
			reprime(g, b * BURST + i, vxlan);
			if (g->mode == GRO_REPRIME_ONLY)
				continue;
			if (vxlan)
				parse_vxlan_ptype(pkts[i]);
			else
				parse_ptype(pkts[i]);
		}
		g->inputs += BURST;
		if (g->mode == GRO_LIGHT) {
			g->outputs += rte_gro_reassemble_burst(pkts, BURST, &g->param);
		} else if (g->mode == GRO_HEAVY) {
			g->outputs += rte_gro_reassemble(pkts, BURST, g->ctx);
			if ((b + 1) % g->flush_every == 0)
				g->outputs += rte_gro_timeout_flush(g->ctx, 0, RTE_GRO_TCP_IPV4,
								    out, ROUND);
		} else {
			g->outputs += BURST;
		}
	}
}

static void gro_round(void *arg)
{
	struct gro_bench *g = arg;

	if (g->vxlan)
		gro_round_of(g, 1);
	else
		gro_round_of(g, 0);
}

static void gro_reset(void *arg)
{
	struct gro_bench *g = arg;
	g->inputs = g->outputs = 0;
}

/* Returns the round's mbufs to the pool; unchains them first, since GRO left merged
 * ones linked and freeing a chain would free its tail mbufs twice. */
static void gro_release(struct gro_bench *g)
{
	unsigned n;

	for (n = 0; n < ROUND; n++)
		reprime(g, n, g->vxlan);
	rte_pktmbuf_free_bulk(g->mbufs, ROUND);
}

static void gro_setup(struct gro_bench *g, struct rte_mempool *pool, unsigned flows, int vxlan)
{
	unsigned n;

	if (rte_pktmbuf_alloc_bulk(pool, g->mbufs, ROUND) != 0)
		die("mbuf alloc");
	g->vxlan = vxlan;
	g->digest = FNV_OFFSET;
	for (n = 0; n < ROUND; n++) {
		uint8_t *p = rte_pktmbuf_mtod(g->mbufs[n], uint8_t *);
		size_t len;

		if (vxlan) {
			len = build_vxlan_tcp4_frame(p, n % flows, n / flows, GRO_PAYLOAD, TCP_ACK, 1);
			memcpy(g->vxlan_headers[n], p, VXLAN_TCP4_HDRS);
		} else {
			len = build_tcp4_frame(p, n % flows, n / flows, GRO_PAYLOAD, TCP_ACK, 1);
			memcpy(g->headers[n], p, TCP4_HDRS);
		}
		g->digest = fnv1a(g->digest, p, len);
		g->mbufs[n]->data_len = g->mbufs[n]->pkt_len = (uint16_t)len;
	}
	g->param.gro_types = vxlan ? RTE_GRO_IPV4_VXLAN_TCP_IPV4 : RTE_GRO_TCP_IPV4;
	g->param.max_flow_num = 64;
	g->param.max_item_per_flow = 32;
	g->param.socket_id = rte_socket_id();
}

static void run_gro(struct rte_mempool *pool, double seconds, const char *only)
{
	static const unsigned light_flows[] = {1, 8, 64};
	static const unsigned heavy_flush[] = {4, 32};
	static struct gro_bench g; /* 1024 headers: keep off the stack */
	struct measured m;
	double reprime_ns;
	char name[64];
	unsigned i;

	memset(&g, 0, sizeof(g));
	gro_setup(&g, pool, 64, 0);
	reprime_ns = -1;
	if (!fixed_rounds) {
		g.mode = GRO_REPRIME_ONLY;
		m = measure(gro_round, gro_reset, &g, seconds);
		reprime_ns = 1e9 / (m.best_rate * ROUND);
	}

	for (i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "gro_tcp4_f%u_burst", light_flows[i]);
		if (!wanted(name, only))
			continue;
		gro_release(&g);
		gro_setup(&g, pool, light_flows[i], 0);
		g.mode = GRO_LIGHT;
		m = measure(gro_round, gro_reset, &g, seconds);
		emit(name, "Mpps", ROUND / 1e6,
		     (double)g.inputs / g.outputs, &m, g.digest, reprime_ns);
	}
	for (i = 0; i < 2; i++) {
		snprintf(name, sizeof(name), "gro_tcp4_f64_flush%u", heavy_flush[i]);
		if (!wanted(name, only))
			continue;
		gro_release(&g);
		gro_setup(&g, pool, 64, 0);
		g.param.max_flow_num = 64;
		g.param.max_item_per_flow = 32;
		g.ctx = rte_gro_ctx_create(&g.param);
		if (g.ctx == NULL)
			die("rte_gro_ctx_create");
		g.mode = GRO_HEAVY;
		g.flush_every = heavy_flush[i];
		m = measure(gro_round, gro_reset, &g, seconds);
		emit(name, "Mpps", ROUND / 1e6,
		     (double)g.inputs / g.outputs, &m, g.digest, reprime_ns);
		rte_gro_ctx_destroy(g.ctx);
		g.ctx = NULL;
	}
	/* W4's VXLAN row against DPDK's own VXLAN GRO (lightweight, 8 flows). DPDK leaves
	 * the merged packet's IPv4 header checksums stale; the engine rewrites them. */
	if (wanted("gro_vxlan_tcp4_f8_burst", only)) {
		gro_release(&g);
		gro_setup(&g, pool, 8, 1);
		g.mode = GRO_LIGHT;
		m = measure(gro_round, gro_reset, &g, seconds);
		emit("gro_vxlan_tcp4_f8_burst", "Mpps", ROUND / 1e6,
		     (double)g.inputs / g.outputs, &m, g.digest, reprime_ns);
	}
	gro_release(&g);
}

/* ---- W2: GSO ------------------------------------------------------------------- */

struct gso_bench {
	struct rte_mbuf *pkt;
	struct rte_gso_ctx ctx;
	uint64_t ol_flags; /* what the input asks for (rte_gso_segment clears TCP_SEG) */
	uint32_t headers;  /* header bytes of every segment */
	int software_csum;
	uint64_t segments;
};

static void checksum_segment(struct rte_mbuf *s)
{
	struct rte_ipv4_hdr *ip = rte_pktmbuf_mtod_offset(s, struct rte_ipv4_hdr *, ETH_LEN);
	struct rte_tcp_hdr *tcp = (struct rte_tcp_hdr *)(ip + 1);

	ip->hdr_checksum = 0;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	tcp->cksum = 0;
	tcp->cksum = rte_ipv4_udptcp_cksum_mbuf(s, ip, ETH_LEN + IPV4_LEN);
}

static void gso_round(void *arg)
{
	struct gso_bench *g = arg;
	struct rte_mbuf *out[64];
	int n, i;

	g->pkt->ol_flags = g->ol_flags;
	n = rte_gso_segment(g->pkt, &g->ctx, out, 64);
	if (n != GSO_SEGMENTS)
		die("rte_gso_segment did not give 45 segments");
	if (g->software_csum)
		for (i = 0; i < n; i++)
			checksum_segment(out[i]);
	tx_free_chains(out, (unsigned)n);
	g->segments += n;
}

static void gso_reset(void *arg)
{
	((struct gso_bench *)arg)->segments = 0;
}

/* Proves the measured work is the real work: 45 segments of their headers + 1448 bytes,
 * whose software checksums (W2b) verify, and (VXLAN) whose outer IPv4, outer UDP and
 * inner IPv4 lengths were rewritten for the segment. */
static void check_gso_output(struct gso_bench *g)
{
	struct rte_mbuf *out[64];
	int n, i;

	g->pkt->ol_flags = g->ol_flags;
	n = rte_gso_segment(g->pkt, &g->ctx, out, 64);
	if (n != GSO_SEGMENTS)
		die("rte_gso_segment did not give 45 segments");
	for (i = 0; i < n; i++) {
		struct rte_ipv4_hdr *ip;
		uint32_t len = out[i]->pkt_len;

		if (len != g->headers + GSO_MSS)
			die("GSO segment of unexpected length");
		if (g->ol_flags & RTE_MBUF_F_TX_TUNNEL_VXLAN) {
			uint8_t *h = rte_pktmbuf_mtod(out[i], uint8_t *);
			uint8_t *inner_ip = h + VXLAN_OUTER_HDRS + ETH_LEN;

			if (rte_be_to_cpu_16(*(uint16_t *)(h + ETH_LEN + 2)) != len - ETH_LEN ||
			    rte_be_to_cpu_16(*(uint16_t *)(h + ETH_LEN + IPV4_LEN + 4)) !=
				    len - ETH_LEN - IPV4_LEN ||
			    rte_be_to_cpu_16(*(uint16_t *)(inner_ip + 2)) !=
				    len - VXLAN_OUTER_HDRS - ETH_LEN)
				die("VXLAN GSO segment with lengths not rewritten");
		} else {
			checksum_segment(out[i]);
			ip = rte_pktmbuf_mtod_offset(out[i], struct rte_ipv4_hdr *, ETH_LEN);
			if (rte_ipv4_udptcp_cksum_mbuf_verify(out[i], ip, ETH_LEN + IPV4_LEN) != 0 ||
			    rte_raw_cksum(ip, IPV4_LEN) != 0xffff)
				die("software checksum of a GSO segment does not verify");
		}
		rte_pktmbuf_free(out[i]);
	}
}

static void run_gso(double seconds, const char *only)
{
	static const struct {
		const char *name;
		int vxlan, software_csum;
	} cases[] = {
		{"gso_tcp4_partial", 0, 0},
		{"gso_tcp4_full", 0, 1},
		{"gso_vxlan_tcp4_partial", 1, 0},
	};
	struct rte_mempool *big, *direct, *indirect;
	struct gso_bench g;
	struct measured m;
	uint64_t digest;
	uint8_t *p;
	size_t len;
	unsigned i;

	big = rte_pktmbuf_pool_create("gso_in", 7, 0, 0, UINT16_MAX, rte_socket_id());
	direct = rte_pktmbuf_pool_create("gso_direct", 1023, 256, 0,
					 RTE_PKTMBUF_HEADROOM + 128, rte_socket_id());
	indirect = rte_pktmbuf_pool_create("gso_indirect", 1023, 256, 0, 0, rte_socket_id());
	if (big == NULL || direct == NULL || indirect == NULL)
		die("gso pools");
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (!wanted(cases[i].name, only))
			continue;
		memset(&g, 0, sizeof(g));
		g.pkt = rte_pktmbuf_alloc(big);
		if (g.pkt == NULL)
			die("gso input alloc");
		p = rte_pktmbuf_mtod(g.pkt, uint8_t *);
		g.ctx.direct_pool = direct;
		g.ctx.indirect_pool = indirect;
		g.ctx.flag = 0; /* IP IDs incremented per segment */
		g.software_csum = cases[i].software_csum;
		g.pkt->l3_len = IPV4_LEN;
		g.pkt->l4_len = TCP_LEN;
		if (cases[i].vxlan) {
			len = build_vxlan_tcp4_frame(p, 0, 0, GSO_MSS * GSO_SEGMENTS,
						     TCP_ACK | TCP_PSH, 0);
			g.headers = VXLAN_TCP4_HDRS;
			g.pkt->outer_l2_len = ETH_LEN;
			g.pkt->outer_l3_len = IPV4_LEN;
			g.pkt->l2_len = UDP_LEN + VXLAN_LEN + ETH_LEN;
			g.ol_flags = RTE_MBUF_F_TX_TCP_SEG | RTE_MBUF_F_TX_IPV4 |
				     RTE_MBUF_F_TX_OUTER_IPV4 | RTE_MBUF_F_TX_TUNNEL_VXLAN;
			g.ctx.gso_types = RTE_ETH_TX_OFFLOAD_VXLAN_TNL_TSO;
		} else {
			len = build_tcp4_frame(p, 0, 0, GSO_MSS * GSO_SEGMENTS, TCP_ACK | TCP_PSH, 0);
			g.headers = TCP4_HDRS;
			g.pkt->l2_len = ETH_LEN;
			g.ol_flags = RTE_MBUF_F_TX_TCP_SEG | RTE_MBUF_F_TX_IPV4;
			g.ctx.gso_types = RTE_ETH_TX_OFFLOAD_TCP_TSO;
		}
		digest = fnv1a(FNV_OFFSET, p, len);
		g.pkt->data_len = g.pkt->pkt_len = (uint32_t)len;
		g.ctx.gso_size = (uint16_t)(g.headers + GSO_MSS);

		check_gso_output(&g);
		m = measure(gso_round, gso_reset, &g, seconds);
		if (rte_mbuf_refcnt_read(g.pkt) != 1)
			die("GSO input refcount drifted");
		emit(cases[i].name, "Msegs/s", GSO_SEGMENTS / 1e6, 0, &m, digest, -1);
		rte_pktmbuf_free(g.pkt);
	}
}

/* ---- W3: checksum -------------------------------------------------------------- */

struct csum_bench {
	const uint8_t *buf;
	size_t len;
	uint64_t bytes;
	volatile uint16_t sink;
};

static void csum_round(void *arg)
{
	struct csum_bench *c = arg;
	const uint8_t *buf = c->buf;

	/* Hide the buffer's contents from the optimiser so the sum is recomputed. */
	__asm__ volatile("" : "+r"(buf) : : "memory");
	c->sink = rte_raw_cksum(buf, c->len);
	c->bytes += c->len;
}

static void csum_reset(void *arg)
{
	((struct csum_bench *)arg)->bytes = 0;
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
		if (c.sink != ref_csum_fold(buf, lens[i], 0) &&
		    c.sink != (uint16_t)((ref_csum_fold(buf, lens[i], 0) >> 8) |
					 (ref_csum_fold(buf, lens[i], 0) << 8)))
			die("rte_raw_cksum disagrees with the reference sum");
		emit(name, "Gbit/s", lens[i] * 8 / 1e9, 0, &m,
		     ref_csum_fold(buf, lens[i], 0), -1);
	}
}

/* ---- main ---------------------------------------------------------------------- */

int main(int argc, char **argv)
{
	char *eal_argv[] = {argv[0], "--no-huge", "--no-pci", "--no-shconf",
			    "--no-telemetry", "--iova-mode=va", "-l", "0", "-m", "512",
			    "--log-level=error", NULL};
	double seconds = 0.3;
	const char *only = "";
	struct rte_mempool *pool;
	int i;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
			seconds = atof(argv[++i]);
		else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
			only = argv[++i];
		else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
			fixed_rounds = strtoull(argv[++i], NULL, 10);
		else
			die("usage: dpdk_bench [--seconds S] [--only PREFIX] [--rounds N]");
	}
	if (rte_eal_init(11, eal_argv) < 0)
		die("rte_eal_init failed");
	pool = bench_gro_pool("gro", 2047, 256, RTE_MBUF_DEFAULT_BUF_SIZE);
	if (pool == NULL)
		die("mbuf pool");
	run_gro(pool, seconds, only);
	run_gso(seconds, only);
	run_csum(seconds, only);
	rte_eal_cleanup();
	return 0;
}
