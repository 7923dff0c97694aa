/* The GRO rows' mbuf pool, shared by DPDK's side (dpdk_bench.c) and the engine's side
 * with mbuf work (capi_mbuf.c): the same pool on both sides.
 *
 * Both run without hugepages (--no-huge). There, rte_pktmbuf_pool_create lays the pool
 * out on 4 KiB pages and keeps every object inside one page, so a 2368-byte mbuf object
 * (mempool header, mbuf, 2 KiB data room) takes a page of its own: every mbuf starts at
 * the same offset of a page, and the metadata lines of all mbufs (and their headers at
 * data_off) fall into the same set of a 64-set first-level cache, 8 ways for 32 mbufs
 * a burst. With hugepages, as DPDK is deployed, the same call packs the objects one after
 * another (a page boundary only every 2 MiB), and consecutive mbufs fall into different
 * sets. BENCH_GRO_POOL=page (the default until issue 42) keeps the one-mbuf-per-page
 * layout; the default "packed" lays the objects out as hugepages would
 * (RTE_MEMPOOL_F_NO_IOVA_CONTIG: with --iova-mode=va nothing needs an object to be
 * contiguous in IOVA, so the mempool does not keep objects inside 4 KiB pages). */
#ifndef OFFLAB_BENCH_MBUF_POOL_H
#define OFFLAB_BENCH_MBUF_POOL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_mbuf.h>
#include <rte_mbuf_pool_ops.h>
#include <rte_mempool.h>

/* A pool of `n` packet mbufs with `data_room` bytes of data room and a per-lcore cache
 * of `cache`, laid out as BENCH_GRO_POOL says (see above); NULL on failure. */
static inline struct rte_mempool *bench_gro_pool(const char *name, unsigned n, unsigned cache,
						 uint16_t data_room)
{
	const char *layout = getenv("BENCH_GRO_POOL");
	struct rte_pktmbuf_pool_private priv = {.mbuf_data_room_size = data_room};
	struct rte_mempool *mp;

	if (layout != NULL && strcmp(layout, "page") == 0)
		return rte_pktmbuf_pool_create(name, n, cache, 0, data_room, rte_socket_id());
	if (layout != NULL && strcmp(layout, "packed") != 0) {
		fprintf(stderr, "BENCH_GRO_POOL takes packed or page (got '%s')\n", layout);
		exit(2);
	}
	mp = rte_mempool_create_empty(name, n, sizeof(struct rte_mbuf) + data_room, cache,
				      sizeof(priv), rte_socket_id(), RTE_MEMPOOL_F_NO_IOVA_CONTIG);
	if (mp == NULL)
		return NULL;
	if (rte_mempool_set_ops_byname(mp, rte_mbuf_best_mempool_ops(), NULL) != 0)
		goto fail;
	rte_pktmbuf_pool_init(mp, &priv);
	if (rte_mempool_populate_default(mp) < 0)
		goto fail;
	rte_mempool_obj_iter(mp, rte_pktmbuf_init, NULL);
	return mp;
fail:
	rte_mempool_free(mp);
	return NULL;
}

#endif
