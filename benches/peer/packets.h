/* Deterministic benchmark packets, byte-identical to the engine bench's (see
 * benches/workloads.md for the layout both sides follow). */
#ifndef OFFLAB_BENCH_PACKETS_H
#define OFFLAB_BENCH_PACKETS_H

#include <stddef.h>
#include <stdint.h>

#define ETH_LEN 14
#define IPV4_LEN 20
#define TCP_LEN 20
#define TCP4_HDRS (ETH_LEN + IPV4_LEN + TCP_LEN) /* 54 */
#define GRO_PAYLOAD 1448
#define GRO_FRAME (TCP4_HDRS + GRO_PAYLOAD)      /* 1502 */
#define GSO_MSS 1448
#define GSO_SEGMENTS 45
#define GSO_FRAME (TCP4_HDRS + GSO_MSS * GSO_SEGMENTS) /* 65214 */

#define UDP_LEN 8
#define VXLAN_LEN 8
/* Outer Ethernet, IPv4, UDP and VXLAN before the inner TCP/IPv4 frame. */
#define VXLAN_OUTER_HDRS (ETH_LEN + IPV4_LEN + UDP_LEN + VXLAN_LEN) /* 50 */
#define VXLAN_TCP4_HDRS (VXLAN_OUTER_HDRS + TCP4_HDRS)            /* 104 */

#define TCP_ACK 0x10
#define TCP_PSH 0x08

/* Writes the TCP/IPv4 frame of flow `flow`, packet `k` of that flow, with `payload_len`
 * bytes of payload; returns the frame length. `full_csum` chooses a complete TCP
 * checksum (GRO input) or the pseudo-header sum only (GSO input, CHECKSUM_PARTIAL). */
size_t build_tcp4_frame(uint8_t *buf, uint32_t flow, uint32_t k, size_t payload_len,
                        uint8_t tcp_flags, int full_csum);

/* The same frame inside VXLAN (VNI 42, outer UDP checksum 0) over IPv4, outer IPv4 ID
 * `k`, as the engine bench's `Net::Vxlan4`; returns the frame length. */
size_t build_vxlan_tcp4_frame(uint8_t *buf, uint32_t flow, uint32_t k, size_t payload_len,
                              uint8_t tcp_flags, int full_csum);

/* Fills the W3 checksum buffer: byte i = (i * 7 + 3) & 0xff. */
void fill_csum_buffer(uint8_t *buf, size_t len);

/* FNV-1a 64 over `len` bytes, continuing from `h` (start with FNV_OFFSET). */
#define FNV_OFFSET 0xcbf29ce484222325ULL
uint64_t fnv1a(uint64_t h, const uint8_t *p, size_t len);

/* Folded (not complemented) 16-bit one's complement sum, reference implementation. */
uint16_t ref_csum_fold(const uint8_t *p, size_t len, uint32_t initial);

#endif
