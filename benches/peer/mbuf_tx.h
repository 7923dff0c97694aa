/* How both sides of the GSO rows with mbufs give their segments back (dpdk_bench.c and
 * capi_mbuf.c): what a PMD's TX completion does, at its best. */
#ifndef OFFLAB_BENCH_MBUF_TX_H
#define OFFLAB_BENCH_MBUF_TX_H

#include <rte_mbuf.h>

#define TX_FREE_POOLS 4
#define TX_FREE_BATCH 64

struct tx_free_bucket {
	struct rte_mempool *pool;
	unsigned n;
	void *objs[TX_FREE_BATCH];
};

/* Frees n mbuf chains as transmitted: every mbuf through rte_pktmbuf_prefree_seg (which
 * detaches indirect and external-buffer mbufs and drops their references), then back to
 * its pool with one rte_mempool_put_bulk per pool and batch. Segments whose mbufs come
 * from two pools (a header mbuf, then its payload mbuf) would make rte_pktmbuf_free_bulk
 * flush its array at every change of pool, and rte_pktmbuf_free puts one mbuf at a time;
 * sorting them into a bucket per pool spares both sides that. */
static inline void tx_free_chains(struct rte_mbuf **chains, unsigned n)
{
	struct tx_free_bucket buckets[TX_FREE_POOLS];
	unsigned used = 0, i, b;

	for (i = 0; i < n; i++) {
		struct rte_mbuf *m = chains[i], *next;

		for (; m != NULL; m = next) {
			next = m->next;
			if ((m = rte_pktmbuf_prefree_seg(m)) == NULL)
				continue;
			for (b = 0; b < used && buckets[b].pool != m->pool; b++)
				;
			if (b == used) {
				if (used == TX_FREE_POOLS) {
					rte_mbuf_raw_free(m);
					continue;
				}
				buckets[used].pool = m->pool;
				buckets[used++].n = 0;
			}
			buckets[b].objs[buckets[b].n++] = m;
			if (buckets[b].n == TX_FREE_BATCH) {
				rte_mempool_put_bulk(buckets[b].pool, buckets[b].objs, TX_FREE_BATCH);
				buckets[b].n = 0;
			}
		}
	}
	for (b = 0; b < used; b++)
		if (buckets[b].n)
			rte_mempool_put_bulk(buckets[b].pool, buckets[b].objs, buckets[b].n);
}

#endif
