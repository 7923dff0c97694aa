/* offlab-engine from a DPDK-style datapath, without DPDK: packets live in chains of
 * mbufs (a small local struct with the rte_mbuf fields such a datapath uses), GSO output
 * is a header mbuf plus indirect mbufs on the input's payload (zero-copy), and GRO
 * output is an mbuf chain built from the received mbufs themselves.
 *
 * 1. Contiguous input (any ABI 1 library): the super-packet in one mbuf is segmented
 *    with ofl_gso_segment; each segment becomes a header mbuf + one indirect mbuf on its
 *    payload (ofl_gso_segment_get). Received frames in one mbuf each are pushed with
 *    ofl_gro_push, and every delivery becomes a chain: a header mbuf with the merged
 *    header, then the frames' mbufs trimmed to their payload.
 * 2. Chained input (the chain API, ABI 1.2): the super-packet as a header mbuf and payload
 *    mbufs is segmented with ofl_gso_segment_chain, each segment's payload taken as
 *    pieces of the input chain (ofl_gso_segment_pieces), one indirect mbuf per piece;
 *    those segment chains are pushed to GRO as received chains (ofl_gro_push_chain) and
 *    merged back into one chain.
 * 3. Bulk (ABI 1.3): the contiguous super-packet again, its header mbufs allocated first
 *    and every segment read by one ofl_gso_segment_get_bulk call, which writes each
 *    header straight into its header mbuf; and (ABI 1.4) with one ofl_gso_segment_bulk
 *    call, the header mbufs counted from the input's lengths before segmenting, which
 *    segments and writes every header into its header mbuf at once.
 * Every output chain is read back and checked: lengths, IPv4 and TCP checksums, payload
 * bytes equal to the original; every mbuf must be back in its pool at the end.
 *
 * Build (from the repository root, after cargo build --release -p offlab-engine-capi):
 *   cc -O2 -Wall -I crates/capi/include crates/capi/examples/c/mbuf_chain.c \
 *      target/release/libofflab_engine_c.a -lpthread -ldl -lm -o mbuf_chain
 * Exits 0 when every check holds. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "offlab_engine.h"

/* The chain half needs the chain API (ofl_iovec, ofl_gso_segment_chain,
 * ofl_gso_segment_pieces, ofl_gro_push_chain), added in ABI 1.2; built against an
 * older header the example runs its contiguous half only. */
#if OFL_ABI_MAJOR == 1 && OFL_ABI_MINOR >= 2
#define HAVE_CHAIN_API 1
#endif
/* The bulk read (ofl_gso_segment_get_bulk) came with ABI 1.3. */
#if OFL_ABI_MAJOR == 1 && OFL_ABI_MINOR >= 3
#define HAVE_BULK_API 1
#endif
/* Segmenting with the headers written into the caller's buffers in the same call
 * (ofl_gso_segment_bulk) came with ABI 1.4. */
#if OFL_ABI_MAJOR == 1 && OFL_ABI_MINOR >= 4
#define HAVE_SEGMENT_BULK 1
#endif

#define MSS 1000
#define HDRS 54                  /* Ethernet 14 + IPv4 20 + TCP 20 */
#define PAYLOAD (MSS * 10 + 480) /* 11 segments, the last one short */
#define FRAME (HDRS + PAYLOAD)
#define MAX_SEGS 16
#define MAX_LINKS 8 /* mbufs in one received frame or input chain */
#define CHUNK 1500  /* payload bytes per mbuf of the chained super-packet */

static int failures;

#define CHECK(cond, ...)                                                          \
	do {                                                                      \
		if (!(cond)) {                                                    \
			fprintf(stderr, "mbuf_chain: check failed: " __VA_ARGS__); \
			fputc('\n', stderr);                                      \
			failures++;                                               \
		}                                                                 \
	} while (0)

static int must(int rc, const char *what)
{
	if (rc < 0) {
		fprintf(stderr, "mbuf_chain: %s: %s (%d)\n", what, ofl_strerror(rc), rc);
		exit(1);
	}
	return rc;
}

/* ---- A minimal mbuf and pool, with rte_mbuf's fields ------------------------------ */

struct pool;

struct mbuf {
	uint8_t *buf_addr;      /* the buffer in use: its own, or an attached one's */
	uint16_t buf_len;
	uint16_t data_off;      /* data starts at buf_addr + data_off */
	uint16_t data_len;      /* bytes in this mbuf */
	uint32_t pkt_len;       /* bytes in the whole chain (head only) */
	uint16_t nb_segs;       /* mbufs in the chain (head only) */
	uint16_t refcnt;        /* users of this mbuf's buffer (itself + attached indirects) */
	struct mbuf *next;      /* next mbuf of the packet */
	struct mbuf *attached;  /* indirect: the direct mbuf whose buffer it uses */
	uint8_t *own_buf;       /* restored when an indirect mbuf is detached */
	struct pool *pool;
};

struct pool {
	struct mbuf *free[64];
	unsigned n_free, size;
};

static uint8_t *mtod(const struct mbuf *m)
{
	return m->buf_addr + m->data_off;
}

static void pool_init(struct pool *p, struct mbuf *mbufs, unsigned n, uint8_t *bufs,
		      uint16_t buf_len)
{
	unsigned i;

	p->n_free = p->size = n;
	for (i = 0; i < n; i++) {
		mbufs[i].own_buf = bufs ? bufs + (size_t)i * buf_len : NULL;
		mbufs[i].buf_len = buf_len;
		mbufs[i].pool = p;
		p->free[i] = &mbufs[i];
	}
}

static struct mbuf *mbuf_alloc(struct pool *p)
{
	struct mbuf *m;

	if (p->n_free == 0) {
		fprintf(stderr, "mbuf_chain: pool empty\n");
		exit(1);
	}
	m = p->free[--p->n_free];
	m->buf_addr = m->own_buf;
	m->data_off = m->own_buf ? 64 : 0; /* headroom */
	m->data_len = 0;
	m->pkt_len = 0;
	m->nb_segs = 1;
	m->refcnt = 1;
	m->next = NULL;
	m->attached = NULL;
	return m;
}

/* Drops one reference to `m`'s own buffer; the last one returns it to its pool. */
static void mbuf_release(struct mbuf *m)
{
	if (--m->refcnt == 0)
		m->pool->free[m->pool->n_free++] = m;
}

/* Frees one mbuf (not its successors); an indirect one gives its reference back. */
static void mbuf_free_one(struct mbuf *m)
{
	if (m->attached) {
		mbuf_release(m->attached);
		m->attached = NULL;
		m->buf_addr = m->own_buf;
	}
	mbuf_release(m);
}

static void mbuf_free_chain(struct mbuf *m)
{
	while (m) {
		struct mbuf *next = m->next;
		mbuf_free_one(m);
		m = next;
	}
}

/* `mi` (indirect) shows `len` bytes at `offset` of direct mbuf `m`'s data, sharing its
 * buffer (rte_pktmbuf_attach, then data_off/data_len narrowed). */
static void mbuf_attach(struct mbuf *mi, struct mbuf *m, uint32_t offset, uint32_t len)
{
	m->refcnt++;
	mi->attached = m;
	mi->buf_addr = m->buf_addr;
	mi->data_off = (uint16_t)(m->data_off + offset);
	mi->data_len = (uint16_t)len;
}

/* Appends `m` to the chain `head` ends at `*tail`. */
static void chain_append(struct mbuf *head, struct mbuf **tail, struct mbuf *m)
{
	m->next = NULL;
	(*tail)->next = m;
	*tail = m;
	head->nb_segs++;
	head->pkt_len += m->data_len;
}

/* The chain's bytes, copied out for checking (an adopter would hand the chain on). */
static size_t chain_read(const struct mbuf *m, uint8_t *out, size_t cap)
{
	size_t at = 0;

	for (; m; m = m->next) {
		if (at + m->data_len > cap)
			return 0;
		memcpy(out + at, mtod(m), m->data_len);
		at += m->data_len;
	}
	return at;
}

static struct pool direct, indirect, big;
static struct mbuf direct_mbufs[64], indirect_mbufs[64], big_mbufs[2];
static uint8_t direct_bufs[64][2048], big_bufs[2][16384];

/* ---- The packet and its checks ---------------------------------------------------- */

static void put16(uint8_t *p, uint16_t v) { p[0] = v >> 8; p[1] = v & 0xff; }
static void put32(uint8_t *p, uint32_t v) { put16(p, v >> 16); put16(p + 2, v & 0xffff); }
static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }

/* A TCP/IPv4 super-packet's headers (checksum-partial TCP, as a guest sends it with
 * NEEDS_CSUM) and its payload byte i = i * 31 + 7. */
static void build_headers(uint8_t *f)
{
	static const uint8_t macs[12] = {2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1};
	uint8_t *ip = f + 14, *tcp = ip + 20;
	uint32_t pseudo;
	uint16_t check;

	memset(f, 0, HDRS);
	memcpy(f, macs, 12);
	put16(f + 12, 0x0800);
	ip[0] = 0x45;
	put16(ip + 2, 20 + 20 + PAYLOAD);
	put16(ip + 6, 0x4000); /* DF */
	ip[8] = 64;
	ip[9] = 6;
	memcpy(ip + 12, (const uint8_t[]){10, 0, 0, 1}, 4);
	memcpy(ip + 16, (const uint8_t[]){10, 0, 0, 2}, 4);
	must(ofl_csum_of(ip, 20, &check), "ofl_csum_of");
	put16(ip + 10, check);
	put16(tcp, 40000);
	put16(tcp + 2, 5201);
	put32(tcp + 4, 1000);
	put32(tcp + 8, 1);
	tcp[12] = 5 << 4;
	tcp[13] = 0x18; /* ACK | PSH */
	put16(tcp + 14, 0xffff);
	must(ofl_csum_pseudo_v4(ip + 12, ip + 16, 6, 20 + PAYLOAD, &pseudo), "pseudo");
	put16(tcp + 16, ofl_csum_fold(pseudo));
}

static uint8_t payload_byte(size_t i)
{
	return (uint8_t)(i * 31 + 7);
}

/* Whether a linear TCP/IPv4 packet's IPv4 and TCP checksums verify and its payload is
 * the super-packet's from byte `from` on. A partial TCP checksum (`vnet` NEEDS_CSUM) is
 * completed first, as the NIC or virtio peer it is meant for would. */
static int packet_ok(uint8_t *p, size_t len, const ofl_vnet_hdr *vnet, size_t from)
{
	const uint8_t *ip = p + 14;
	size_t l4_len = len - 34, i;
	uint32_t sum;
	uint16_t check;

	if (len < HDRS || get16(ip + 2) != len - 14)
		return 0;
	if (vnet && (vnet->flags & OFL_VNET_F_NEEDS_CSUM)) {
		must(ofl_csum_sum(p + vnet->csum_start, len - vnet->csum_start, 0, &sum), "sum");
		put16(p + vnet->csum_start + vnet->csum_offset, ofl_csum_finish(sum));
	}
	must(ofl_csum_of(ip, 20, &check), "ofl_csum_of");
	must(ofl_csum_pseudo_v4(ip + 12, ip + 16, 6, (uint16_t)l4_len, &sum), "pseudo");
	must(ofl_csum_sum(p + 34, l4_len, sum, &sum), "ofl_csum_sum");
	if (check != 0 || ofl_csum_finish(sum) != 0)
		return 0;
	for (i = HDRS; i < len; i++)
		if (p[i] != payload_byte(from + i - HDRS))
			return 0;
	return 1;
}

/* Checks every segment chain: two links or more, lengths, checksums, payload. */
static void check_segments(struct mbuf **segs, int n, const char *path)
{
	static uint8_t lin[2048];
	int i;

	for (i = 0; i < n; i++) {
		size_t len = chain_read(segs[i], lin, sizeof(lin));

		CHECK(len == segs[i]->pkt_len && len == (size_t)HDRS + (i < 10 ? MSS : 480),
		      "%s: segment %d is %zu bytes", path, i, len);
		CHECK(segs[i]->nb_segs >= 2 && segs[i]->next->attached != NULL,
		      "%s: segment %d is not header + indirect", path, i);
		CHECK(packet_ok(lin, len, NULL, (size_t)i * MSS), "%s: segment %d checksums/payload",
		      path, i);
	}
}

/* ---- GSO: header mbuf + indirect payload pieces ------------------------------------ */

static ofl_vnet_hdr tso_request(void)
{
	ofl_vnet_hdr v;

	memset(&v, 0, sizeof(v));
	v.flags = OFL_VNET_F_NEEDS_CSUM;
	v.gso_type = OFL_VNET_GSO_TCPV4;
	v.hdr_len = HDRS;
	v.gso_size = MSS;
	v.csum_start = 34;
	v.csum_offset = 16;
	return v;
}

/* The header mbuf of segment `s`: the engine's header bytes copied in. */
static struct mbuf *header_mbuf(const ofl_gso_seg *s)
{
	struct mbuf *h = mbuf_alloc(&direct);

	memcpy(mtod(h), s->header, s->header_len);
	h->data_len = (uint16_t)s->header_len;
	h->pkt_len = h->data_len;
	return h;
}


/* Contiguous input: the super-packet in one mbuf; each segment is a header mbuf and one
 * indirect mbuf on the input's payload. */
static int segment_contiguous(ofl_gso *gso, const ofl_vnet_hdr *vnet, struct mbuf *in,
			      struct mbuf **segs)
{
	int n = must(ofl_gso_segment(gso, mtod(in), in->data_len, vnet, OFL_GSO_FULL_CSUM),
		     "ofl_gso_segment");
	int i;

	for (i = 0; i < n && i < MAX_SEGS; i++) {
		struct mbuf *tail, *piece = mbuf_alloc(&indirect);
		ofl_gso_seg s;

		must(ofl_gso_segment_get(gso, (size_t)i, &s), "ofl_gso_segment_get");
		segs[i] = tail = header_mbuf(&s);
		mbuf_attach(piece, in, (uint32_t)s.payload_offset, (uint32_t)s.payload_len);
		chain_append(segs[i], &tail, piece);
	}
	return n;
}

#ifdef HAVE_BULK_API
/* Contiguous input read in bulk: header mbufs allocated for every segment, then one
 * call writes all headers into them and all descriptors into `descs`. */
static int segment_bulk(ofl_gso *gso, const ofl_vnet_hdr *vnet, struct mbuf *in,
			struct mbuf **segs, int one_call)
{
	/* With one call the header mbufs come first: as many as the input's payload
	 * needs segments of gso_size bytes. */
	int n = (int)((in->data_len - HDRS + vnet->gso_size - 1) / vnet->gso_size);
	uint8_t *headers[MAX_SEGS];
	ofl_gso_seg descs[MAX_SEGS];
	int i;

	if (!one_call)
		n = must(ofl_gso_segment(gso, mtod(in), in->data_len, vnet, OFL_GSO_FULL_CSUM),
			 "ofl_gso_segment");
	if (n <= 0 || n > MAX_SEGS)
		return -1;
	for (i = 0; i < n; i++) {
		segs[i] = mbuf_alloc(&direct);
		headers[i] = mtod(segs[i]);
	}
	if (one_call) {
#ifdef HAVE_SEGMENT_BULK
		ofl_iovec frame = {mtod(in), in->data_len};

		CHECK(must(ofl_gso_segment_bulk(gso, &frame, 1, vnet, OFL_GSO_FULL_CSUM, descs,
						(size_t)n, headers,
						segs[0]->buf_len - segs[0]->data_off),
			   "ofl_gso_segment_bulk") == n,
		      "segment bulk: not the %d segments counted", n);
#endif
	} else {
		must(ofl_gso_segment_get_bulk(gso, 0, descs, (size_t)n, headers,
					      segs[0]->buf_len - segs[0]->data_off),
		     "ofl_gso_segment_get_bulk");
	}
	for (i = 0; i < n; i++) {
		struct mbuf *tail = segs[i], *piece = mbuf_alloc(&indirect);

		CHECK(descs[i].header == headers[i], "bulk: header %d not in its mbuf", i);
		segs[i]->data_len = (uint16_t)descs[i].header_len;
		segs[i]->pkt_len = segs[i]->data_len;
		mbuf_attach(piece, in, (uint32_t)descs[i].payload_offset,
			    (uint32_t)descs[i].payload_len);
		chain_append(segs[i], &tail, piece);
	}
	return n;
}

static void run_bulk(ofl_gso *gso, const ofl_vnet_hdr *vnet, struct mbuf *in, int one_call)
{
	struct mbuf *segs[MAX_SEGS];
	int n = segment_bulk(gso, vnet, in, segs, one_call), i;

	printf("gso %s: %d segments, every header written into its header mbuf by one call "
	       "(input refcnt %u)\n", one_call ? "segment bulk" : "bulk", n, in->refcnt);
	CHECK(n == 11 && in->refcnt == 1 + (unsigned)n, "bulk: %d segments, refcnt %u", n,
	      in->refcnt);
	check_segments(segs, n, "gso bulk");
	for (i = 0; i < n; i++)
		mbuf_free_chain(segs[i]);
	CHECK(in->refcnt == 1, "bulk: input refcnt %u after the segments' free", in->refcnt);
}
#endif

/* ---- GRO: merged runs as chains of the received mbufs ------------------------------ */

struct gro_out {
	struct mbuf *packets[4];
	ofl_vnet_hdr vnet[4];
	int n_packets;
	unsigned segments;
};

static struct mbuf *mbuf_of(uint64_t id)
{
	return (struct mbuf *)(uintptr_t)id;
}

/* A delivered run becomes one chain: a header mbuf with the merged header (valid only
 * during this call, so copied), then every part's payload as the frame's own mbufs
 * trimmed to it (zero-copy, as rte_gro chains the input mbufs); a frame's mbufs left
 * without payload bytes (its headers) are freed. A part's `payload_offset` is in the
 * frame as pushed: for a chain, the concatenation of its mbufs. */
static void on_merged(void *user, const ofl_gro_merged *m)
{
	struct gro_out *out = user;
	struct mbuf *head = mbuf_alloc(&direct), *tail = head;
	size_t i;

	memcpy(mtod(head), m->header, m->header_len);
	head->data_len = (uint16_t)m->header_len;
	head->pkt_len = head->data_len;
	for (i = 0; i < m->n_parts; i++) {
		uint32_t from = m->parts[i].payload_offset, to = from + m->parts[i].payload_len;
		uint32_t pos = 0;
		struct mbuf *f = mbuf_of(m->parts[i].id);

		while (f) {
			struct mbuf *next = f->next;
			uint32_t end = pos + f->data_len;
			uint32_t a = from > pos ? from : pos, b = to < end ? to : end;

			if (a < b) {
				f->data_off = (uint16_t)(f->data_off + (a - pos));
				f->data_len = (uint16_t)(b - a);
				chain_append(head, &tail, f);
			} else {
				mbuf_free_one(f);
			}
			pos = end;
			f = next;
		}
	}
	out->segments += m->segments;
	if (out->n_packets < 4) {
		out->vnet[out->n_packets] = m->vnet;
		out->packets[out->n_packets++] = head;
	} else {
		mbuf_free_chain(head);
	}
}

/* Checks GRO's output: one packet of every segment, the super-packet again. */
static void check_merged(struct gro_out *out, int n_segs, const char *path)
{
	static uint8_t lin[FRAME + 64];
	size_t len;

	CHECK(out->n_packets == 1 && out->segments == (unsigned)n_segs,
	      "%s: %d packet(s) of %u segments", path, out->n_packets, out->segments);
	if (out->n_packets < 1)
		return;
	len = chain_read(out->packets[0], lin, sizeof(lin));
	CHECK(len == FRAME && len == out->packets[0]->pkt_len, "%s: merged length %zu", path, len);
	CHECK(packet_ok(lin, len, &out->vnet[0], 0), "%s: merged checksums/payload", path);
	printf("gro %s: %d packet(s), %u segments, a chain of %u mbufs, payload %s the "
	       "original (%zu bytes)\n", path, out->n_packets, out->segments,
	       out->packets[0]->nb_segs, len == FRAME && packet_ok(lin, len, NULL, 0) ?
	       "equals" : "DIFFERS FROM", len - HDRS);
}

static void free_merged(struct gro_out *out)
{
	while (out->n_packets > 0)
		mbuf_free_chain(out->packets[--out->n_packets]);
}

/* Contiguous: each received frame copied into one mbuf (what an adopter does with a
 * chained frame when the library takes contiguous frames only), pushed, merged. */
static void gro_contiguous(ofl_gro *gro, struct mbuf **segs, int n)
{
	struct gro_out out = {0};
	int i;

	for (i = 0; i < n; i++) {
		struct mbuf *f = mbuf_alloc(&direct);
		uint32_t reason = 0;
		int rc;

		f->data_len = (uint16_t)chain_read(segs[i], mtod(f), f->buf_len - f->data_off);
		f->pkt_len = f->data_len;
		mbuf_free_chain(segs[i]);
		rc = must(ofl_gro_push(gro, (uint64_t)(uintptr_t)f, mtod(f), f->data_len, 0, 0,
				       on_merged, &out, &reason), "ofl_gro_push");
		if (rc == OFL_GRO_REFUSED) {
			CHECK(0, "frame %d refused: %s", i, ofl_gro_reason_name(reason));
			mbuf_free_chain(f); /* a datapath would forward it as it is */
		}
	}
	must(ofl_gro_flush(gro, on_merged, &out), "ofl_gro_flush");
	check_merged(&out, n, "contiguous");
	free_merged(&out);
}

#ifdef HAVE_CHAIN_API
/* The iovecs of a chain, one per mbuf, and the mbufs in the same order. */
static size_t chain_iov(struct mbuf *m, ofl_iovec *iov, struct mbuf **links)
{
	size_t n = 0;

	for (; m; m = m->next) {
		if (n == MAX_LINKS) {
			fprintf(stderr, "mbuf_chain: chain longer than %d mbufs\n", MAX_LINKS);
			exit(1);
		}
		iov[n].base = mtod(m);
		iov[n].len = m->data_len;
		links[n++] = m;
	}
	return n;
}

/* Chained input: each segment is a header mbuf and one indirect mbuf per piece of the
 * input chain its payload spans. Returns the count; `*pieces` totals the pieces. */
static int segment_chained(ofl_gso *gso, const ofl_vnet_hdr *vnet, struct mbuf *in,
			   struct mbuf **segs, int *n_pieces)
{
	struct mbuf *links[MAX_LINKS];
	ofl_iovec iov[MAX_LINKS];
	size_t n_iov = chain_iov(in, iov, links);
	int n = must(ofl_gso_segment_chain(gso, iov, n_iov, vnet, OFL_GSO_FULL_CSUM),
		     "ofl_gso_segment_chain");
	int i, j;

	*n_pieces = 0;
	for (i = 0; i < n && i < MAX_SEGS; i++) {
		ofl_chain_piece pieces[MAX_LINKS];
		struct mbuf *tail;
		ofl_gso_seg s;
		int k;

		must(ofl_gso_segment_get(gso, (size_t)i, &s), "ofl_gso_segment_get");
		k = must(ofl_gso_segment_pieces(gso, (size_t)i, pieces, MAX_LINKS),
			 "ofl_gso_segment_pieces");
		segs[i] = tail = header_mbuf(&s);
		for (j = 0; j < k; j++) {
			struct mbuf *piece = mbuf_alloc(&indirect);

			mbuf_attach(piece, links[pieces[j].iov_index], pieces[j].offset, pieces[j].len);
			chain_append(segs[i], &tail, piece);
		}
		*n_pieces += k;
	}
	return n;
}

/* Chained: the segment chains are pushed as they are, as received chains. */
static void gro_chained(ofl_gro *gro, struct mbuf **segs, int n)
{
	struct gro_out out = {0};
	int i;

	for (i = 0; i < n; i++) {
		struct mbuf *links[MAX_LINKS];
		ofl_iovec iov[MAX_LINKS];
		size_t n_iov = chain_iov(segs[i], iov, links);
		uint32_t reason = 0;
		int rc = must(ofl_gro_push_chain(gro, (uint64_t)(uintptr_t)segs[i], iov, n_iov, 0, 0,
						 on_merged, &out, &reason), "ofl_gro_push_chain");

		if (rc == OFL_GRO_REFUSED) {
			CHECK(0, "chained frame %d refused: %s", i, ofl_gro_reason_name(reason));
			mbuf_free_chain(segs[i]);
		}
	}
	must(ofl_gro_flush(gro, on_merged, &out), "ofl_gro_flush");
	check_merged(&out, n, "chained");
	free_merged(&out);
}

/* The super-packet as a DPDK TX path often holds it: a header mbuf, then payload mbufs
 * of CHUNK bytes, so segment payloads cross mbuf boundaries. */
static struct mbuf *chained_super_packet(void)
{
	struct mbuf *head = mbuf_alloc(&direct), *tail = head;
	size_t at;

	build_headers(mtod(head));
	head->data_len = HDRS;
	head->pkt_len = HDRS;
	for (at = 0; at < PAYLOAD; at += CHUNK) {
		struct mbuf *m = mbuf_alloc(&direct);
		size_t i, len = PAYLOAD - at < CHUNK ? PAYLOAD - at : CHUNK;

		for (i = 0; i < len; i++)
			mtod(m)[i] = payload_byte(at + i);
		m->data_len = (uint16_t)len;
		chain_append(head, &tail, m);
	}
	return head;
}

static void run_chained(ofl_gso *gso, ofl_gro *gro, const ofl_vnet_hdr *vnet)
{
	struct mbuf *segs[MAX_SEGS], *in = chained_super_packet();
	unsigned in_links = in->nb_segs;
	int n, pieces;

	n = segment_chained(gso, vnet, in, segs, &pieces);
	/* The input can go now: each piece holds a reference to its mbuf's buffer. */
	mbuf_free_chain(in);
	printf("gso chained: input of %u mbufs, %d segments, %d indirect pieces "
	       "(%d segments span two input mbufs)\n", in_links, n, pieces, pieces - n);
	CHECK(n == 11, "chained: %d segments", n);
	check_segments(segs, n, "gso chained");
	gro_chained(gro, segs, n);
}
#endif

int main(void)
{
	struct mbuf *segs[MAX_SEGS], *in;
	ofl_vnet_hdr vnet = tso_request();
	ofl_gro_config cfg;
	ofl_gso *gso;
	ofl_gro *gro;
	size_t i;
	int n;

	pool_init(&direct, direct_mbufs, 64, &direct_bufs[0][0], sizeof(direct_bufs[0]));
	pool_init(&indirect, indirect_mbufs, 64, NULL, 0);
	pool_init(&big, big_mbufs, 2, &big_bufs[0][0], sizeof(big_bufs[0]));
	must(ofl_gso_new(NULL, &gso), "ofl_gso_new");
	must(ofl_gro_config_default(&cfg), "ofl_gro_config_default");
	must(ofl_gro_new(&cfg, &gro), "ofl_gro_new");

	/* 1. Contiguous. */
	in = mbuf_alloc(&big);
	build_headers(mtod(in));
	for (i = 0; i < PAYLOAD; i++)
		mtod(in)[HDRS + i] = payload_byte(i);
	in->data_len = FRAME;
	in->pkt_len = FRAME;
	n = segment_contiguous(gso, &vnet, in, segs);
	printf("gso contiguous: %d segments, each a header mbuf + 1 indirect mbuf on the "
	       "input (input refcnt %u)\n", n, in->refcnt);
	CHECK(n == 11 && in->refcnt == 1 + n, "contiguous: %d segments, refcnt %u", n, in->refcnt);
	check_segments(segs, n, "gso contiguous");
	gro_contiguous(gro, segs, n);
	CHECK(in->refcnt == 1, "contiguous: input refcnt %u after the segments' free", in->refcnt);

	/* 3. Bulk, on the same input. */
#ifdef HAVE_BULK_API
	if ((ofl_abi_version() >> 16) == OFL_ABI_MAJOR && (ofl_abi_version() & 0xffff) >= 3)
		run_bulk(gso, &vnet, in, 0);
	else
		printf("bulk API: the library is older than ABI 1.3, skipped\n");
#endif
#ifdef HAVE_SEGMENT_BULK
	if ((ofl_abi_version() >> 16) == OFL_ABI_MAJOR && (ofl_abi_version() & 0xffff) >= 4)
		run_bulk(gso, &vnet, in, 1);
	else
		printf("segment bulk: the library is older than ABI 1.4, skipped\n");
#endif
#ifndef HAVE_BULK_API
	printf("bulk API: not in this header (ABI %d.%d, before 1.3), skipped\n",
	       OFL_ABI_MAJOR, OFL_ABI_MINOR);
#endif
	mbuf_free_one(in);

	/* 2. Chained. */
#ifdef HAVE_CHAIN_API
	/* A library older than the header this was built with may lack the chain calls. */
	if ((ofl_abi_version() >> 16) == OFL_ABI_MAJOR &&
	    (ofl_abi_version() & 0xffff) >= OFL_ABI_MINOR)
		run_chained(gso, gro, &vnet);
	else
		printf("chain API: the library is older than ABI %d.%d, skipped\n", OFL_ABI_MAJOR,
		       OFL_ABI_MINOR);
#else
	printf("chain API: not in this header (ABI %d.%d, before 1.2), skipped\n",
	       OFL_ABI_MAJOR, OFL_ABI_MINOR);
#endif

	ofl_gro_free(gro);
	ofl_gso_free(gso);
	CHECK(direct.n_free == direct.size && indirect.n_free == indirect.size &&
	      big.n_free == big.size, "mbufs not back in their pools: %u/%u, %u/%u, %u/%u",
	      direct.n_free, direct.size, indirect.n_free, indirect.size, big.n_free, big.size);
	if (failures) {
		fprintf(stderr, "mbuf_chain: %d check(s) failed\n", failures);
		return 1;
	}
	printf("mbufs: every one back in its pool\nall checks passed\n");
	return 0;
}
