/* The engine through its C API with the mbuf work of DPDK's rows (side "engine_c_mbuf"),
 * on DPDK 22.11's own librte_mbuf: what an adopter's datapath pays around the engine.
 *
 * GRO: the frames sit in rte_mbufs from a pool, as DPDK's GRO rows' do, and are re-primed
 * the same way (the mbuf fields a merge touches reset, the 54 B header copied back). A
 * burst is pushed with ofl_gro_push_burst (id = the mbuf pointer); each delivery becomes
 * an mbuf chain as rte_gro_reassemble_burst leaves one: the merged header is written into
 * the first part's mbuf right before its payload, every further part's mbuf is trimmed to
 * its payload (data_off, data_len) and linked on, pkt_len and nb_segs are summed.
 *
 * GSO: the super-packet is one rte_mbuf, as in DPDK's rows. Its segments' mbufs come from
 * two bulk gets on the same pools as DPDK's (a direct pool for the header mbufs, the
 * indirect pool's buffer-less mbufs for the payloads), counted from the input's lengths;
 * one ofl_gso_segment_bulk call (ABI 1.4) segments it, the engine writing every header
 * straight into its header mbuf and every descriptor into an array; each payload mbuf is attached to the input's
 * buffer as an external buffer (rte_pktmbuf_attach_extbuf) narrowed to its payload
 * (zero-copy), all of them sharing one reference to the input through one shared-info
 * refcount set once (OFFLAB_GSO_MBUF_MODEL=own: a shared info per payload mbuf and no
 * atomic operation per segment). The header mbuf gets the input's metadata as DPDK's gso_do_segment
 * copies it. The 45 chains are freed as DPDK's rows free theirs; the last payload freed
 * gives the input's reference back (the shared info's free callback). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_eal.h>
#include <rte_ip.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_memcpy.h>
#include <rte_mbuf_dyn.h>

#include "capi_mbuf.h"
#include "mbuf_pool.h"
#include "mbuf_tx.h"
#include "measure.h"
#include "offlab_engine.h"
#include "packets.h"

#define SIDE "engine_c_mbuf"
#define ROUND 1024
#define BURST 32
#define BURSTS (ROUND / BURST)
#define MAX_FLOWS 64

static struct rte_mempool *gro_pool, *gso_big, *gso_direct, *gso_indirect;

static void gso_model_init(void);

static void die(const char *what)
{
	fprintf(stderr, "capi_bench (mbuf): %s\n", what);
	exit(1);
}

static int must(int rc, const char *what)
{
	if (rc < 0) {
		fprintf(stderr, "capi_bench (mbuf): %s: %s (%d)\n", what, ofl_strerror(rc), rc);
		exit(1);
	}
	return rc;
}

void capi_mbuf_init(const char *argv0)
{
	/* The EAL arguments of dpdk_bench: no hugepages, no devices, lcore 0. */
	char *eal_argv[] = {(char *)argv0, "--no-huge", "--no-pci", "--no-shconf",
			    "--no-telemetry", "--iova-mode=va", "-l", "0", "-m", "512",
			    "--log-level=error", NULL};

	if (rte_eal_init(11, eal_argv) < 0)
		die("rte_eal_init failed");
	gro_pool = bench_gro_pool("gro", 2047, 256, RTE_MBUF_DEFAULT_BUF_SIZE);
	gso_big = rte_pktmbuf_pool_create("gso_in", 7, 0, 0, UINT16_MAX, rte_socket_id());
	gso_direct = rte_pktmbuf_pool_create("gso_direct", 1023, 256, 0,
					     RTE_PKTMBUF_HEADROOM + 128, rte_socket_id());
	gso_indirect = rte_pktmbuf_pool_create("gso_indirect", 1023, 256, 0, 0, rte_socket_id());
	if (gro_pool == NULL || gso_big == NULL || gso_direct == NULL || gso_indirect == NULL)
		die("mbuf pools");
	gso_model_init();
}

void capi_mbuf_cleanup(void)
{
	rte_mempool_free(gro_pool);
	rte_mempool_free(gso_big);
	rte_mempool_free(gso_direct);
	rte_mempool_free(gso_indirect);
	rte_eal_cleanup();
}

/* ---- W1: GRO into mbuf chains ----------------------------------------------------- */

struct gro_mbuf_bench {
	struct rte_mbuf *mbufs[ROUND];
	uint8_t headers[ROUND][TCP4_HDRS]; /* templates for re-priming */
	ofl_rx_frame rx[BURST];
	uint8_t verdicts[BURST];
	struct rte_mbuf *out[ROUND]; /* merged chains and forwarded frames, for the TX side */
	unsigned n_out;
	ofl_gro *gro;
	unsigned flush_every;
	int reprime_only;
	uint64_t inputs, outputs, segments;
	uint64_t digest;
};

/* Undoes last round's chaining and trimming of mbuf `n`, as dpdk_bench's reprime. */
static inline void reprime(struct gro_mbuf_bench *g, unsigned n)
{
	struct rte_mbuf *m = g->mbufs[n];

	m->next = NULL;
	m->nb_segs = 1;
	m->data_off = RTE_PKTMBUF_HEADROOM;
	m->data_len = GRO_FRAME;
	m->pkt_len = GRO_FRAME;
	m->ol_flags = 0;
	m->packet_type = 0;
	memcpy(rte_pktmbuf_mtod(m, uint8_t *), g->headers[n], TCP4_HDRS);
}

static inline struct rte_mbuf *mbuf_of(uint64_t id)
{
	return (struct rte_mbuf *)(uintptr_t)id;
}

static void add_output(struct gro_mbuf_bench *g, struct rte_mbuf *m, unsigned segments)
{
	g->out[g->n_out++ % ROUND] = m;
	g->outputs++;
	g->segments += segments;
}

/* One delivered run -> one mbuf chain, built from the input mbufs in place. */
static void on_merged(void *user, const ofl_gro_merged *m)
{
	struct gro_mbuf_bench *g = user;
	const ofl_gro_part *part = &m->parts[0];
	struct rte_mbuf *head = mbuf_of(part->id), *last = head;
	long start;
	uint8_t *dst;
	size_t i;

	/* A run of one frame is that frame unchanged (its own header, its whole payload:
	 * docs/engine.md), so its mbuf goes out as it came in, untouched, as librte_gro
	 * leaves a packet it did not merge. */
	if (m->segments == 1) {
		add_output(g, head, 1);
		return;
	}
	start = (long)head->data_off + part->payload_offset - (long)m->header_len;
	if (start < 0)
		die("merged header does not fit the first mbuf's headroom");
	/* The merged header (lengths and checksums fixed) goes right before the first
	 * payload; a run of one frame hands back the frame's own header bytes. */
	dst = (uint8_t *)head->buf_addr + start;
	if (dst != m->header)
		rte_memcpy(dst, m->header, m->header_len);
	head->data_off = (uint16_t)start;
	head->data_len = (uint16_t)(m->header_len + part->payload_len);
	head->pkt_len = head->data_len;
	head->nb_segs = 1;
	for (i = 1; i < m->n_parts; i++) {
		struct rte_mbuf *seg = mbuf_of(m->parts[i].id);

		part = &m->parts[i];
		seg->data_off = (uint16_t)(seg->data_off + part->payload_offset);
		seg->data_len = (uint16_t)part->payload_len;
		last->next = seg;
		last = seg;
		head->pkt_len += part->payload_len;
		head->nb_segs++;
	}
	last->next = NULL;
	add_output(g, head, m->segments);
}

static void gro_push_burst(struct gro_mbuf_bench *g, unsigned b)
{
	unsigned i;
	int refused;

	for (i = 0; i < BURST; i++) {
		struct rte_mbuf *m = g->mbufs[b * BURST + i];

		g->rx[i].id = (uint64_t)(uintptr_t)m;
		g->rx[i].data = rte_pktmbuf_mtod(m, const uint8_t *);
		g->rx[i].len = m->data_len;
	}
	refused = must(ofl_gro_push_burst(g->gro, g->rx, BURST, OFL_RX_CSUM_VALIDATED, b,
					  on_merged, g, g->verdicts, NULL), "ofl_gro_push_burst");
	if (refused)
		for (i = 0; i < BURST; i++)
			if (g->verdicts[i] == OFL_GRO_REFUSED)
				add_output(g, mbuf_of(g->rx[i].id), 1); /* forwarded as it is */
}

static void gro_round(void *arg)
{
	struct gro_mbuf_bench *g = arg;
	unsigned b, n;

	g->n_out = 0;
	for (b = 0; b < BURSTS; b++) {
		for (n = b * BURST; n < (b + 1) * BURST; n++)
			reprime(g, n);
		g->inputs += BURST;
		if (g->reprime_only)
			continue;
		gro_push_burst(g, b);
		if ((b + 1) % g->flush_every == 0)
			must(ofl_gro_flush(g->gro, on_merged, g), "ofl_gro_flush");
	}
	__asm__ volatile("" : : "r"(g->out) : "memory");
}

static void gro_reset(void *arg)
{
	struct gro_mbuf_bench *g = arg;
	g->inputs = g->outputs = g->segments = 0;
}

/* Proves the measured work is the real work: one round gives every frame once, no frame
 * refused, and every chain's metadata agrees with its bytes (IPv4 total length =
 * pkt_len - 14, data_len summing to pkt_len, nb_segs = the links, the payload of each
 * link the frame's own payload). */
static void check_gro_chains(struct gro_mbuf_bench *g)
{
	ofl_gro_stats stats;
	unsigned i, n_out;

	gro_reset(g);
	gro_round(g);
	must(ofl_gro_get_stats(g->gro, &stats), "ofl_gro_get_stats");
	if (g->segments != ROUND || stats.refused_total != 0)
		die("GRO check: every frame must come out once, none refused");
	n_out = g->n_out < ROUND ? g->n_out : ROUND;
	for (i = 0; i < n_out; i++) {
		const struct rte_mbuf *head = g->out[i], *s;
		const uint8_t *ip = rte_pktmbuf_mtod_offset(head, const uint8_t *, ETH_LEN);
		uint32_t total = 0;
		unsigned links = 0;

		for (s = head; s != NULL; s = s->next, links++) {
			const uint8_t *payload = rte_pktmbuf_mtod(s, const uint8_t *) +
						 (s == head ? TCP4_HDRS : 0);

			total += s->data_len;
			if (s->data_len != (s == head ? TCP4_HDRS : 0) + GRO_PAYLOAD ||
			    payload != (const uint8_t *)s->buf_addr + RTE_PKTMBUF_HEADROOM + TCP4_HDRS)
				die("GRO check: a link of a chain is not its frame's payload");
		}
		if (total != head->pkt_len || links != head->nb_segs ||
		    (uint32_t)((ip[2] << 8) | ip[3]) != head->pkt_len - ETH_LEN ||
		    ref_csum_fold(ip, IPV4_LEN, 0) != 0xffff)
			die("GRO check: chain metadata disagrees with its header");
	}
}

static void gro_setup(struct gro_mbuf_bench *g, unsigned flows)
{
	unsigned n;

	g->digest = FNV_OFFSET;
	for (n = 0; n < ROUND; n++) {
		uint8_t *p = rte_pktmbuf_mtod(g->mbufs[n], uint8_t *);

		reprime(g, n);
		build_tcp4_frame(p, n % flows, n / flows, GRO_PAYLOAD, TCP_ACK, 1);
		memcpy(g->headers[n], p, TCP4_HDRS);
		g->digest = fnv1a(g->digest, p, GRO_FRAME);
	}
}

void capi_mbuf_run_gro(double seconds, const char *only)
{
	static const struct { const char *name; unsigned flows, flush_every; } cases[] = {
		{"gro_tcp4_f1_burst", 1, 1},    {"gro_tcp4_f8_burst", 8, 1},
		{"gro_tcp4_f64_burst", 64, 1},  {"gro_tcp4_f64_flush4", 64, 4},
		{"gro_tcp4_f64_flush32", 64, 32},
	};
	static struct gro_mbuf_bench g; /* 1024 headers and pointers: keep off the stack */
	ofl_gro_config cfg;
	struct measured m;
	double reprime_ns = -1;
	unsigned i, n;

	if (rte_pktmbuf_alloc_bulk(gro_pool, g.mbufs, ROUND) != 0)
		die("mbuf alloc");
	must(ofl_gro_config_default(&cfg), "ofl_gro_config_default");
	cfg.max_flows = MAX_FLOWS;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
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
		must(ofl_gro_new(&cfg, &g.gro), "ofl_gro_new");
		g.flush_every = cases[i].flush_every;
		check_gro_chains(&g);
		m = measure(gro_round, gro_reset, &g, seconds);
		emit_line(SIDE, cases[i].name, "Mpps", ROUND / 1e6, (double)g.inputs / g.outputs,
			  &m, g.digest, reprime_ns);
		ofl_gro_free(g.gro);
		g.gro = NULL;
	}
	/* Unchain before freeing: a chain freed whole would free its links twice. */
	for (n = 0; n < ROUND; n++)
		reprime(&g, n);
	rte_pktmbuf_free_bulk(g.mbufs, ROUND);
}

/* ---- W2: GSO into header mbufs + payload mbufs on the input as an external buffer -- */

struct gso_mbuf_bench {
	struct rte_mbuf *pkt;
	struct rte_mbuf *out[GSO_SEGMENTS];	 /* header mbufs: the segments' heads */
	struct rte_mbuf *payloads[GSO_SEGMENTS]; /* each chained after its header mbuf */
	uint8_t *header_bufs[GSO_SEGMENTS];	 /* the header mbufs' data rooms */
	ofl_gso_seg segs[GSO_SEGMENTS];
	struct rte_mbuf_ext_shared_info *shinfo; /* model "shared": the input's */
	struct gso_ticket *ticket;		 /* model "own": beside the input */
	ofl_gso *gso;
	ofl_vnet_hdr vnet;
	uint32_t flags;
	uint64_t segments;
};

/* How the payload mbufs hold the input (OFFLAB_GSO_MBUF_MODEL, default "shared", the
 * faster of the two on the 2026-11-28 run, docs/benchmarks.md):
 * - shared: one shared info for all of a super-packet's payload mbufs, its refcount set
 *   to the segment count once (rte_pktmbuf_attach would instead increment the input's
 *   refcount atomically per segment); any lcore may free the segments, each free is an
 *   atomic decrement but the last.
 * - own: each payload mbuf carries its own shared info (in a registered dynamic field,
 *   so the pools stay DPDK's) with refcount 1, which DPDK's free drops without an
 *   atomic; its free callback counts the super-packet's segments down in a plain
 *   counter beside the input. For the run-to-completion model, where the lcore that
 *   segments also frees what it transmitted: no atomic operation per segment at all. */
enum gso_model { GSO_SHARED_REFCNT, GSO_OWN_REFCNT };
static enum gso_model gso_model = GSO_SHARED_REFCNT;
static int shinfo_field = -1; /* offset of the payload mbufs' own shared info */

/* What the payload mbufs of one super-packet share, in the input's tailroom. */
struct gso_ticket {
	struct rte_mbuf *input;
	uint16_t left; /* payload mbufs not freed yet (model "own") */
};

/* Model "shared": the last payload mbuf of a super-packet was freed. */
static void on_payloads_freed(void *addr, void *input)
{
	rte_pktmbuf_free(input);
}

/* Model "own": one payload mbuf was freed; the last one gives the input back. */
static void on_payload_freed(void *addr, void *ticket)
{
	struct gso_ticket *t = ticket;

	if (--t->left == 0)
		rte_pktmbuf_free(t->input);
}

static void gso_model_init(void)
{
	static const struct rte_mbuf_dynfield shinfo_desc = {
		.name = "offlab_gso_payload_shinfo",
		.size = sizeof(struct rte_mbuf_ext_shared_info),
		.align = __alignof__(struct rte_mbuf_ext_shared_info),
	};
	const char *model = getenv("OFFLAB_GSO_MBUF_MODEL");

	if (model != NULL && strcmp(model, "own") == 0)
		gso_model = GSO_OWN_REFCNT;
	else if (model != NULL && strcmp(model, "shared") != 0)
		die("OFFLAB_GSO_MBUF_MODEL takes shared or own");
	if ((shinfo_field = rte_mbuf_dynfield_register(&shinfo_desc)) < 0)
		die("rte_mbuf_dynfield_register (payload shared info)");
}

/* The input's buffer lent to `n` payload mbufs, with one more reference to the input
 * for all of them together. Returns the buffer length left beside what sits in its
 * tailroom (the shared info, or the ticket). */
static uint16_t share_input(struct gso_mbuf_bench *g, unsigned n)
{
	struct rte_mbuf *pkt = g->pkt;
	uint16_t buf_len = pkt->buf_len;

	if (gso_model == GSO_SHARED_REFCNT) {
		g->shinfo = rte_pktmbuf_ext_shinfo_init_helper(pkt->buf_addr, &buf_len,
							       on_payloads_freed, pkt);
		if (g->shinfo != NULL)
			rte_mbuf_ext_refcnt_set(g->shinfo, (uint16_t)n);
	} else {
		buf_len = (uint16_t)RTE_ALIGN_FLOOR(buf_len - sizeof(struct gso_ticket),
						    __alignof__(struct gso_ticket));
		g->ticket = RTE_PTR_ADD(pkt->buf_addr, buf_len);
		g->ticket->input = pkt;
		g->ticket->left = (uint16_t)n;
	}
	if (pkt->data_off + pkt->data_len > buf_len)
		die("GSO input: no tailroom for what its segments share");
	rte_mbuf_refcnt_update(pkt, 1);
	return buf_len;
}

/* The shared info payload mbuf `m` is attached with. */
static struct rte_mbuf_ext_shared_info *payload_shinfo(struct gso_mbuf_bench *g,
						       struct rte_mbuf *m)
{
	struct rte_mbuf_ext_shared_info *own;

	if (gso_model == GSO_SHARED_REFCNT)
		return g->shinfo;
	own = RTE_MBUF_DYNFIELD(m, shinfo_field, struct rte_mbuf_ext_shared_info *);
	own->free_cb = on_payload_freed;
	own->fcb_opaque = g->ticket;
	rte_mbuf_ext_refcnt_set(own, 1);
	return own;
}

/* Segment i as a two-mbuf chain: its header mbuf (the engine wrote the header into it)
 * with the input's metadata, as DPDK's gso_do_segment copies it, then its payload mbuf
 * on the input's buffer. */
static void link_segment(struct gso_mbuf_bench *g, unsigned i, uint16_t buf_len)
{
	struct rte_mbuf *pkt = g->pkt, *hdr = g->out[i], *payload = g->payloads[i];
	const ofl_gso_seg *s = &g->segs[i];

	payload->ol_flags = 0;
	rte_pktmbuf_attach_extbuf(payload, pkt->buf_addr, rte_mbuf_iova_get(pkt), buf_len,
				  payload_shinfo(g, payload));
	payload->data_off = (uint16_t)(pkt->data_off + s->payload_offset);
	payload->data_len = (uint16_t)s->payload_len;
	payload->pkt_len = (uint32_t)s->payload_len;
	hdr->port = pkt->port;
	hdr->vlan_tci = pkt->vlan_tci;
	hdr->vlan_tci_outer = pkt->vlan_tci_outer;
	hdr->packet_type = pkt->packet_type;
	hdr->tx_offload = pkt->tx_offload;
	hdr->ol_flags = s->csum_partial ? RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_TCP_CKSUM : 0;
	hdr->data_len = (uint16_t)s->header_len;
	hdr->pkt_len = (uint32_t)(s->header_len + s->payload_len);
	hdr->nb_segs = 2;
	hdr->next = payload;
}

/* Segments the input into g->out; returns the count. The mbufs of all segments come
 * from two bulk allocations, sized from the super-packet's own lengths (as DPDK's
 * rte_gso_segment sizes its output); one call segments and writes every header straight
 * into its header mbuf. */
static int segment_into_mbufs(struct gso_mbuf_bench *g)
{
	struct rte_mbuf *pkt = g->pkt;
	ofl_iovec frame = {rte_pktmbuf_mtod(pkt, const uint8_t *), pkt->data_len};
	unsigned hdrs = pkt->l2_len + pkt->l3_len + pkt->l4_len;
	unsigned want = (pkt->pkt_len - hdrs + g->vnet.gso_size - 1) / g->vnet.gso_size;
	uint16_t buf_len;
	int n, i;

	if (want > GSO_SEGMENTS)
		die("GSO input: more segments than the bench holds");
	/* Raw allocation (the mbufs as the pool keeps them: refcount 1, one segment, no
	 * next): every field a segment needs is written below, as a PMD's receive path
	 * writes its own; rte_pktmbuf_alloc_bulk's reset would write most of them twice. */
	if (rte_mempool_get_bulk(gso_direct, (void **)g->out, want) != 0)
		die("GSO header pool empty");
	if (rte_mempool_get_bulk(gso_indirect, (void **)g->payloads, want) != 0)
		die("GSO payload pool empty");
	for (i = 0; i < (int)want; i++) {
		g->out[i]->data_off = RTE_PKTMBUF_HEADROOM;
		g->header_bufs[i] = rte_pktmbuf_mtod(g->out[i], uint8_t *);
	}
	n = must(ofl_gso_segment_bulk(g->gso, &frame, 1, &g->vnet, g->flags, g->segs, want,
				      g->header_bufs, rte_pktmbuf_tailroom(g->out[0])),
		 "ofl_gso_segment_bulk");
	if (n != GSO_SEGMENTS || (unsigned)n != want)
		die("ofl_gso_segment_bulk did not give 45 segments");
	buf_len = share_input(g, (unsigned)n);
	for (i = 0; i < n; i++)
		link_segment(g, (unsigned)i, buf_len);
	return n;
}

static void gso_round(void *arg)
{
	struct gso_mbuf_bench *g = arg;
	int n = segment_into_mbufs(g);

	tx_free_chains(g->out, (unsigned)n);
	g->segments += (uint64_t)n;
}

static void gso_reset(void *arg)
{
	((struct gso_mbuf_bench *)arg)->segments = 0;
}

/* Whether the header mbuf of segment i holds other bytes than the header ofl_gso_segment
 * gives for the same input (a second handle, so the measured one is left as it was). */
static int header_differs(struct gso_mbuf_bench *g, int i, const struct rte_mbuf *seg)
{
	static ofl_gso *ref_gso;
	ofl_gso_seg ref;

	if (ref_gso == NULL)
		must(ofl_gso_new(NULL, &ref_gso), "ofl_gso_new (reference)");
	if (i == 0 && must(ofl_gso_segment(ref_gso, rte_pktmbuf_mtod(g->pkt, const uint8_t *),
					    g->pkt->data_len, &g->vnet, g->flags),
			   "ofl_gso_segment (reference)") != GSO_SEGMENTS)
		die("GSO check: the reference segmentation differs in count");
	must(ofl_gso_segment_get(ref_gso, (size_t)i, &ref), "ofl_gso_segment_get");
	return seg->data_len != ref.header_len || g->segs[i].header != rte_pktmbuf_mtod(seg, uint8_t *) ||
	       memcmp(rte_pktmbuf_mtod(seg, const uint8_t *), ref.header, ref.header_len) != 0;
}

/* Proves the measured work is the real work: 45 two-mbuf chains of 54 + 1448 bytes whose
 * payload link is the input's payload (no copy, an external buffer sharing one reference
 * to the input), whose full checksums (W2b) verify over the chain, and whose freeing
 * gives the input's reference back. */
static void check_gso_chains(struct gso_mbuf_bench *g)
{
	int n = segment_into_mbufs(g), i;

	if (rte_mbuf_refcnt_read(g->pkt) != 2 ||
	    (gso_model == GSO_SHARED_REFCNT ? rte_mbuf_ext_refcnt_read(g->shinfo)
					    : g->ticket->left) != GSO_SEGMENTS)
		die("GSO check: the payload mbufs must share one reference to the input");
	for (i = 0; i < n; i++) {
		struct rte_mbuf *seg = g->out[i];
		const uint8_t *payload = rte_pktmbuf_mtod(seg->next, const uint8_t *);
		struct rte_ipv4_hdr *ip = rte_pktmbuf_mtod_offset(seg, struct rte_ipv4_hdr *, ETH_LEN);

		if (seg->pkt_len != TCP4_HDRS + GSO_MSS || seg->nb_segs != 2 ||
		    !RTE_MBUF_HAS_EXTBUF(seg->next) ||
		    seg->next->shinfo != (gso_model == GSO_SHARED_REFCNT ? g->shinfo :
					  RTE_MBUF_DYNFIELD(seg->next, shinfo_field, void *)) ||
		    header_differs(g, i, seg) ||
		    payload != rte_pktmbuf_mtod(g->pkt, const uint8_t *) + TCP4_HDRS + i * GSO_MSS)
			die("GSO check: a segment is not header mbuf + indirect payload");
		if ((g->flags & OFL_GSO_FULL_CSUM) &&
		    (rte_raw_cksum(ip, IPV4_LEN) != 0xffff ||
		     rte_ipv4_udptcp_cksum_mbuf_verify(seg, ip, ETH_LEN + IPV4_LEN) != 0))
			die("GSO check: checksum of a segment chain does not verify");
		rte_pktmbuf_free(seg);
	}
	if (rte_mbuf_refcnt_read(g->pkt) != 1)
		die("GSO check: freeing the segments did not give the input's references back");
}

void capi_mbuf_run_gso(double seconds, const char *only)
{
	static const char *names[] = {"gso_tcp4_partial", "gso_tcp4_full"};
	struct gso_mbuf_bench g;
	struct measured m;
	uint64_t digest;
	uint8_t *p;
	int i;

	memset(&g, 0, sizeof(g));
	if ((g.pkt = rte_pktmbuf_alloc(gso_big)) == NULL)
		die("gso input alloc");
	p = rte_pktmbuf_mtod(g.pkt, uint8_t *);
	build_tcp4_frame(p, 0, 0, GSO_MSS * GSO_SEGMENTS, TCP_ACK | TCP_PSH, 0);
	digest = fnv1a(FNV_OFFSET, p, GSO_FRAME);
	g.pkt->data_len = g.pkt->pkt_len = GSO_FRAME;
	g.pkt->l2_len = ETH_LEN;
	g.pkt->l3_len = IPV4_LEN;
	g.pkt->l4_len = TCP_LEN;
	must(ofl_gso_new(NULL, &g.gso), "ofl_gso_new");
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
		check_gso_chains(&g);
		m = measure(gso_round, gso_reset, &g, seconds);
		if (rte_mbuf_refcnt_read(g.pkt) != 1)
			die("GSO input refcount drifted");
		emit_line(SIDE, names[i], "Msegs/s", GSO_SEGMENTS / 1e6, 0, &m, digest, -1);
	}
	ofl_gso_free(g.gso);
	rte_pktmbuf_free(g.pkt);
}
