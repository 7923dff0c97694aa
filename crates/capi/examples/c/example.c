/* offlab-engine C API walk-through: parse a TCP/IPv4 super-packet, check its IPv4
 * header checksum, cut it into segments with GSO (as its virtio-net header asks),
 * coalesce the segments back with GRO, and check that the merged packet carries the
 * original payload.
 *
 * Build (from the repository root, after cargo build --release -p offlab-engine-capi):
 *   cc -O2 -Wall -I crates/capi/include crates/capi/examples/c/example.c \
 *      target/release/libofflab_engine_c.a -lpthread -ldl -lm -o example
 * Prints a few lines and exits 0 when every check holds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "offlab_engine.h"

#define MSS 1000
#define SEGMENTS 10
#define HDRS 54 /* Ethernet 14 + IPv4 20 + TCP 20 */
#define PAYLOAD (MSS * SEGMENTS + 480) /* the last segment is short */
#define FRAME (HDRS + PAYLOAD)
#define MAX_SEGS (SEGMENTS + 1)

static int failures;

#define CHECK(cond, ...)                                                 \
	do {                                                             \
		if (!(cond)) {                                           \
			fprintf(stderr, "example: check failed: " __VA_ARGS__); \
			fputc('\n', stderr);                             \
			failures++;                                      \
		}                                                        \
	} while (0)

/* Exits with the engine's description of `rc` when it is an error. */
static int must(int rc, const char *what)
{
	if (rc < 0) {
		fprintf(stderr, "example: %s: %s (%d)\n", what, ofl_strerror(rc), rc);
		exit(1);
	}
	return rc;
}

static void put16(uint8_t *p, uint16_t v) { p[0] = v >> 8; p[1] = v & 0xff; }
static void put32(uint8_t *p, uint32_t v) { put16(p, v >> 16); put16(p + 2, v & 0xffff); }

/* A TCP/IPv4 super-packet whose TCP checksum holds only the pseudo-header sum
 * (checksum-partial), as a guest hands it over with NEEDS_CSUM. */
static void build_super_packet(uint8_t *f)
{
	static const uint8_t macs[12] = {2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1};
	static const uint8_t src[4] = {10, 0, 0, 1}, dst[4] = {10, 0, 0, 2};
	uint8_t *ip = f + 14, *tcp = ip + 20;
	uint32_t pseudo;
	uint16_t check;
	size_t i;

	memset(f, 0, HDRS);
	memcpy(f, macs, 12);
	put16(f + 12, 0x0800);
	ip[0] = 0x45;
	put16(ip + 2, 20 + 20 + PAYLOAD);
	put16(ip + 4, 7);      /* IPv4 ID */
	put16(ip + 6, 0x4000); /* DF */
	ip[8] = 64;
	ip[9] = 6;
	memcpy(ip + 12, src, 4);
	memcpy(ip + 16, dst, 4);
	must(ofl_csum_of(ip, 20, &check), "ofl_csum_of");
	put16(ip + 10, check);
	put16(tcp, 40000);
	put16(tcp + 2, 5201);
	put32(tcp + 4, 1000);
	put32(tcp + 8, 1);
	tcp[12] = 5 << 4;
	tcp[13] = 0x18; /* ACK | PSH */
	put16(tcp + 14, 0xffff);
	for (i = 0; i < PAYLOAD; i++)
		f[HDRS + i] = (uint8_t)(i * 31 + 7);
	must(ofl_csum_pseudo_v4(src, dst, 6, 20 + PAYLOAD, &pseudo), "ofl_csum_pseudo_v4");
	put16(tcp + 16, ofl_csum_fold(pseudo));
}

/* What the GRO callback collects: the merged packet, rebuilt from header + parts. */
struct collected {
	uint8_t *segs[MAX_SEGS]; /* the frames pushed, by id */
	uint8_t packet[FRAME];
	size_t len;
	int packets;
	unsigned segments;
	ofl_vnet_hdr vnet;
};

static void on_merged(void *user, const ofl_gro_merged *m)
{
	struct collected *c = user;
	size_t i, at = m->header_len;

	c->packets++;
	c->segments += m->segments;
	c->vnet = m->vnet;
	if (m->header_len > sizeof(c->packet))
		return;
	memcpy(c->packet, m->header, m->header_len);
	for (i = 0; i < m->n_parts; i++) {
		const ofl_gro_part *p = &m->parts[i];
		if (at + p->payload_len > sizeof(c->packet) || p->id >= MAX_SEGS)
			return;
		memcpy(c->packet + at, c->segs[p->id] + p->payload_offset, p->payload_len);
		at += p->payload_len;
	}
	c->len = at;
}

int main(void)
{
	static uint8_t frame[FRAME];
	static uint8_t seg_mem[MAX_SEGS][HDRS + MSS];
	static struct collected got;
	ofl_buf bufs[MAX_SEGS];
	ofl_layout layout;
	ofl_vnet_hdr vnet;
	ofl_gso *gso;
	ofl_gro *gro;
	ofl_gro_config cfg;
	ofl_gro_stats stats;
	uint16_t check;
	uint32_t reason;
	int n, i, rc;

	printf("offlab-engine %s, checksum kernel %s\n", ofl_version(), ofl_csum_kernel());
	build_super_packet(frame);

	/* Parse. */
	must(ofl_parse_frame(frame, sizeof(frame), &layout), "ofl_parse_frame");
	printf("parse: ipv%u, l4 %s, headers %u bytes, payload %u bytes at %u\n",
	       layout.ip.version, layout.ip.l4 == OFL_L4_TCP ? "tcp" : "other",
	       layout.headers_len, layout.payload_len, layout.payload_offset);
	CHECK(layout.ip.l4 == OFL_L4_TCP && layout.headers_len == HDRS &&
	      layout.payload_len == PAYLOAD, "layout");

	/* Errors come back as negative codes with a static description. */
	rc = ofl_parse_frame(frame, 30, &layout);
	printf("parse of 30 bytes: %s\n", ofl_strerror(rc));
	CHECK(rc == OFL_ERR_PARSE_TRUNCATED, "truncated frame gave %d", rc);

	/* Checksum: a correct IPv4 header sums to zero. */
	must(ofl_csum_of(frame + 14, 20, &check), "ofl_csum_of");
	printf("checksum: ipv4 header %s\n", check == 0 ? "verifies" : "is wrong");
	CHECK(check == 0, "ipv4 header checksum");

	/* GSO: the virtio-net header of a TSO request, full checksums computed. */
	memset(&vnet, 0, sizeof(vnet));
	vnet.flags = OFL_VNET_F_NEEDS_CSUM;
	vnet.gso_type = OFL_VNET_GSO_TCPV4;
	vnet.hdr_len = HDRS;
	vnet.gso_size = MSS;
	vnet.csum_start = 34;
	vnet.csum_offset = 16;
	must(ofl_vnet_validate(&vnet, frame, sizeof(frame)), "ofl_vnet_validate");
	for (i = 0; i < MAX_SEGS; i++) {
		bufs[i].data = seg_mem[i];
		bufs[i].cap = sizeof(seg_mem[i]);
		bufs[i].len = 0;
	}
	must(ofl_gso_new(NULL, &gso), "ofl_gso_new");
	n = must(ofl_gso_segment_into(gso, frame, sizeof(frame), &vnet, OFL_GSO_FULL_CSUM,
				      bufs, MAX_SEGS), "ofl_gso_segment_into");
	printf("gso: %d segments, first %zu bytes, last %zu bytes\n", n, bufs[0].len,
	       bufs[n - 1].len);
	CHECK(n == SEGMENTS + 1, "segment count %d", n);
	for (i = 0; i < n; i++) {
		ofl_layout sl;
		uint32_t sum;

		must(ofl_parse_frame(bufs[i].data, bufs[i].len, &sl), "parse segment");
		must(ofl_csum_pseudo_v4(bufs[i].data + 26, bufs[i].data + 30, 6,
					(uint16_t)(sl.ip.end - sl.ip.l4_offset), &sum), "pseudo");
		must(ofl_csum_sum(bufs[i].data + sl.ip.l4_offset, sl.ip.end - sl.ip.l4_offset,
				  sum, &sum), "ofl_csum_sum");
		CHECK(ofl_csum_finish(sum) == 0, "segment %d tcp checksum", i);
	}
	/* Too few buffers: nothing is copied, the code says why. */
	rc = ofl_gso_segment_into(gso, frame, sizeof(frame), &vnet, 0, bufs, 2);
	CHECK(rc == OFL_ERR_BUFFER_TOO_SMALL, "two buffers gave %d", rc);

	/* GRO: push every segment (checksums verified by GRO itself), then flush. */
	must(ofl_gro_config_default(&cfg), "ofl_gro_config_default");
	cfg.max_flows = 64;
	must(ofl_gro_new(&cfg, &gro), "ofl_gro_new");
	for (i = 0; i < n; i++) {
		got.segs[i] = bufs[i].data;
		rc = must(ofl_gro_push(gro, (uint64_t)i, bufs[i].data, bufs[i].len, 0, 0,
				       on_merged, &got, &reason), "ofl_gro_push");
		CHECK(rc != OFL_GRO_REFUSED, "segment %d refused: %s", i, ofl_gro_reason_name(reason));
	}
	must(ofl_gro_flush(gro, on_merged, &got), "ofl_gro_flush");
	must(ofl_gro_get_stats(gro, &stats), "ofl_gro_get_stats");
	printf("gro: %d packet(s), %u segments merged, ended by \"%s\", vnet gso_size %u\n",
	       got.packets, got.segments, ofl_gro_reason_name(OFL_GRO_REASON_PSH_END),
	       got.vnet.gso_size);
	CHECK(got.packets == 1 && got.segments == (unsigned)n, "one merged packet");
	CHECK(stats.ended[OFL_GRO_REASON_PSH_END] == 1, "run ended by PSH");
	CHECK(got.vnet.gso_type == OFL_VNET_GSO_TCPV4 && got.vnet.gso_size == MSS, "vnet");

	/* The merged packet: same length, same payload as the super-packet. */
	CHECK(got.len == sizeof(frame), "merged length %zu", got.len);
	CHECK(memcmp(got.packet + HDRS, frame + HDRS, PAYLOAD) == 0, "merged payload");
	printf("merged payload %s the original (%zu bytes)\n",
	       got.len == sizeof(frame) && memcmp(got.packet + HDRS, frame + HDRS, PAYLOAD) == 0
		       ? "equals" : "DIFFERS FROM",
	       got.len - HDRS);

	ofl_gro_free(gro);
	ofl_gso_free(gso);
	if (failures) {
		fprintf(stderr, "example: %d check(s) failed\n", failures);
		return 1;
	}
	printf("all checks passed\n");
	return 0;
}
