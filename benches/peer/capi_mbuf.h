/* The engine through its C API doing the mbuf work DPDK's rows do (capi_mbuf.c): side
 * "engine_c_mbuf" of capi_bench. */
#ifndef OFFLAB_BENCH_CAPI_MBUF_H
#define OFFLAB_BENCH_CAPI_MBUF_H

/* Starts DPDK's EAL in memory on lcore 0 (as dpdk_bench does) and creates the mbuf
 * pools; exits with a message when that fails. */
void capi_mbuf_init(const char *argv0);

/* W1 GRO rows: frames in rte_mbufs, pushed a burst at a time; every delivery becomes a
 * chain of the input mbufs (merged header written into the first). */
void capi_mbuf_run_gro(double seconds, const char *only);

/* W2 GSO rows: the super-packet in one rte_mbuf; every segment becomes a header mbuf
 * (the engine writes the header into it: ofl_gso_segment_get_bulk) chained to a payload
 * mbuf attached to the input's buffer as an external buffer; all mbufs from two bulk
 * gets, the segments freed as DPDK's rows free theirs (mbuf_tx.h). */
void capi_mbuf_run_gso(double seconds, const char *only);

/* Frees the pools and stops the EAL. */
void capi_mbuf_cleanup(void);

#endif
