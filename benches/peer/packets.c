/* Packet builder for the DPDK side; the rules are in benches/workloads.md. */
#include "packets.h"

#include <string.h>

static const uint8_t MAC_DST[6] = {0x02, 0, 0, 0, 0, 0x02};
static const uint8_t MAC_SRC[6] = {0x02, 0, 0, 0, 0, 0x01};
static const uint8_t IP_SRC[4] = {10, 0, 0, 1};
static const uint8_t IP_DST[4] = {10, 0, 0, 2};
static const uint8_t OUTER_SRC[4] = {192, 168, 0, 1};
static const uint8_t OUTER_DST[4] = {192, 168, 0, 2};

static void put16(uint8_t *p, uint16_t v) { p[0] = v >> 8; p[1] = v & 0xff; }
static void put32(uint8_t *p, uint32_t v) { put16(p, v >> 16); put16(p + 2, v & 0xffff); }

uint16_t ref_csum_fold(const uint8_t *p, size_t len, uint32_t initial)
{
	uint64_t sum = initial;
	size_t i;
	for (i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)(p[i] << 8 | p[i + 1]);
	if (len & 1)
		sum += (uint32_t)p[len - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

/* An option-less IPv4 header: DF, TTL 64, its checksum. */
static void put_ipv4(uint8_t *ip, uint16_t total, uint16_t id, uint8_t proto,
		     const uint8_t src[4], const uint8_t dst[4])
{
	memset(ip, 0, IPV4_LEN);
	ip[0] = 0x45;
	put16(ip + 2, total);
	put16(ip + 4, id);
	put16(ip + 6, 0x4000); /* DF */
	ip[8] = 64;
	ip[9] = proto;
	memcpy(ip + 12, src, 4);
	memcpy(ip + 16, dst, 4);
	put16(ip + 10, (uint16_t)~ref_csum_fold(ip, IPV4_LEN, 0));
}

size_t build_tcp4_frame(uint8_t *buf, uint32_t flow, uint32_t k, size_t payload_len,
                        uint8_t tcp_flags, int full_csum)
{
	uint8_t *ip = buf + ETH_LEN, *tcp = ip + IPV4_LEN, *pl = tcp + TCP_LEN;
	uint16_t ip_total = (uint16_t)(IPV4_LEN + TCP_LEN + payload_len);
	uint16_t tcp_len = (uint16_t)(TCP_LEN + payload_len);
	uint8_t pseudo[12];
	size_t i;

	memcpy(buf, MAC_DST, 6);
	memcpy(buf + 6, MAC_SRC, 6);
	put16(buf + 12, 0x0800);

	put_ipv4(ip, ip_total, (uint16_t)k, 6, IP_SRC, IP_DST);

	memset(tcp, 0, TCP_LEN);
	put16(tcp, (uint16_t)(10000 + flow));
	put16(tcp + 2, 5201);
	put32(tcp + 4, 1000000u + k * GRO_PAYLOAD);
	put32(tcp + 8, 1);
	tcp[12] = 5 << 4;
	tcp[13] = tcp_flags;
	put16(tcp + 14, 0xffff);
	for (i = 0; i < payload_len; i++)
		pl[i] = (uint8_t)(i + k + flow);

	memcpy(pseudo, IP_SRC, 4);
	memcpy(pseudo + 4, IP_DST, 4);
	pseudo[8] = 0;
	pseudo[9] = 6;
	put16(pseudo + 10, tcp_len);
	uint16_t ph = ref_csum_fold(pseudo, sizeof(pseudo), 0);
	if (full_csum)
		put16(tcp + 16, (uint16_t)~ref_csum_fold(tcp, tcp_len, ph));
	else
		put16(tcp + 16, ph);
	return TCP4_HDRS + payload_len;
}

size_t build_vxlan_tcp4_frame(uint8_t *buf, uint32_t flow, uint32_t k, size_t payload_len,
                              uint8_t tcp_flags, int full_csum)
{
	uint8_t *ip = buf + ETH_LEN, *udp = ip + IPV4_LEN, *vxlan = udp + UDP_LEN;
	size_t inner = build_tcp4_frame(vxlan + VXLAN_LEN, flow, k, payload_len, tcp_flags,
					full_csum);
	uint16_t udp_len = (uint16_t)(UDP_LEN + VXLAN_LEN + inner);

	memcpy(buf, MAC_DST, 6);
	memcpy(buf + 6, MAC_SRC, 6);
	put16(buf + 12, 0x0800);

	put_ipv4(ip, (uint16_t)(IPV4_LEN + udp_len), (uint16_t)k, 17, OUTER_SRC, OUTER_DST);

	put16(udp, (uint16_t)(49152 + flow));
	put16(udp + 2, 4789);
	put16(udp + 4, udp_len);
	put16(udp + 6, 0); /* no outer UDP checksum */
	put32(vxlan, 0x08000000u); /* I flag */
	put32(vxlan + 4, 42u << 8);
	return VXLAN_OUTER_HDRS + inner;
}

void fill_csum_buffer(uint8_t *buf, size_t len)
{
	size_t i;
	for (i = 0; i < len; i++)
		buf[i] = (uint8_t)(i * 7 + 3);
}

uint64_t fnv1a(uint64_t h, const uint8_t *p, size_t len)
{
	size_t i;
	for (i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}
