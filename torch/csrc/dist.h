/*
 * dist.h: the C ABI of the shim's c10d part (dist.cpp): a TCPStore rendezvous and a process group
 * (Gloo on the CPU, NCCL on CUDA) with the collectives data-parallel training needs.
 *
 * The conventions of shim.h hold: every entry point returns NULL or a malloc'd error message the
 * caller frees, results go through out-parameters, calls must come from the torch thread.
 * Collectives block until they are done (or, for NCCL, until the current CUDA stream waits for them)
 * and must be called in the same order on every rank.
 */
#ifndef MTGRPO_DIST_H
#define MTGRPO_DIST_H

#include "shim.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mt_pg_s* mt_pg;

/* reduction ops; MT_DIST_AVG sums and divides by the world size (floating-point tensors only) */
enum { MT_DIST_SUM = 0, MT_DIST_AVG = 1, MT_DIST_MAX = 2, MT_DIST_MIN = 3 };

typedef struct mt_store_s* mt_store;

/* The process-group backends this shim was compiled with (a mask of the flags below). A build
 * fact, like mt_abi_version: callable from any thread. */
enum { MT_DIST_HAVE_GLOO = 1, MT_DIST_HAVE_NCCL = 2 };
MT_API int mt_dist_backends(void);

/* Serves a TCPStore on port (all interfaces) without joining any group, the way a torchrun agent
 * does: ranks then join with agent_store != 0. For launchers, and for tests of that path. */
MT_API mt_err mt_dist_store_serve(int port, int64_t timeout_ms, mt_store* out);
/* The number of keys the store holds (a way to see that ranks used it). */
MT_API mt_err mt_dist_store_num_keys(mt_store s, int64_t* out);
MT_API mt_err mt_dist_store_free(mt_store s);

/* Rendezvous at addr:port and create a process group of world ranks.
 * agent_store == 0: rank 0 serves the TCPStore and waits for every rank to connect.
 * agent_store != 0: a torchrun agent serves it; every rank is a client and keys live under
 *   "/worker/attempt_<restart_count>", as torch.distributed does under torchelastic.
 * device == MT_CPU: Gloo over TCP (GLOO_SOCKET_IFNAME picks interfaces; a loopback addr binds to
 *   127.0.0.1, any other to this host's address). device >= 0: NCCL on cuda:device (CUDA builds).
 * timeout_ms bounds the rendezvous and each collective. */
MT_API mt_err mt_dist_new(const char* addr, int port, int rank, int world, int agent_store, int restart_count,
                          int device, int64_t timeout_ms, mt_pg* out);
/* Destroys the process group and its store connection. NULL is a no-op. */
MT_API mt_err mt_dist_free(mt_pg pg);
/* The backend's name ("gloo", "nccl") into buf. */
MT_API mt_err mt_dist_backend(mt_pg pg, char* buf, size_t cap);

/* In place: t = op over every rank's t. */
MT_API mt_err mt_dist_allreduce(mt_pg pg, mt_tensor t, int op);
/* In place: each of the n tensors takes root's values. */
MT_API mt_err mt_dist_broadcast(mt_pg pg, mt_tensor* ts, int n, int root);
/* outs receives world new tensors: outs[r] = rank r's t. */
MT_API mt_err mt_dist_allgather(mt_pg pg, mt_tensor t, mt_tensor* outs);
MT_API mt_err mt_dist_barrier(mt_pg pg);

/* ---- sharded training (dist.cpp) ---- */
/* out = op over every rank's chunk `rank` of in: in is [world*k], out [k], both flat and of one
 * dtype (ZeRO's gradient reduce-scatter). Gloo has no reduce-scatter: it all-reduces a copy. */
MT_API mt_err mt_dist_reduce_scatter(mt_pg pg, mt_tensor in, mt_tensor out, int op);
/* out[r*k : (r+1)*k] = rank r's in: in is [k], out [world*k], both flat (ZeRO's weight gather). */
MT_API mt_err mt_dist_allgather_into(mt_pg pg, mt_tensor in, mt_tensor out);
/* The same, started without waiting (a prefetch): *out is the work in flight, which
 * mt_dist_work_wait must be given exactly once (on every rank, before in and out are reused); it
 * keeps in and out alive until then. Collectives started after it run after it on every rank. */
typedef struct mt_work_s* mt_work;
MT_API mt_err mt_dist_allgather_into_start(mt_pg pg, mt_tensor in, mt_tensor out, mt_work* out_work);
/* Waits for the work (NCCL: makes the current stream wait) and frees it, also when it failed. */
MT_API mt_err mt_dist_work_wait(mt_work w);
/* A group of the given ranks (increasing) of pg, on pg's device, as torch.distributed.new_group:
 * every rank of pg calls it, in the same order; *out is NULL on ranks that are not members. */
MT_API mt_err mt_dist_new_group(mt_pg pg, const int* ranks, int n, int64_t timeout_ms, mt_pg* out);

/* ---- persistent gradient buckets (dist_buckets.cpp) ---- */
typedef struct mt_buckets_s* mt_buckets;
/* Flat buffers for the gradients of the n parameters that require grad, laid out once (from the
 * last parameter to the first, runs of one dtype closed at bucket_bytes) and reused every step. */
MT_API mt_err mt_dist_buckets_new(mt_pg pg, mt_tensor* params, int n, int64_t bucket_bytes, mt_buckets* out);
MT_API mt_err mt_dist_buckets_info(mt_buckets b, int* nbuckets, int64_t* bytes);
/* Overlap the next backward pass: each bucket's all-reduce starts as soon as its gradients and
 * those of every earlier bucket are accumulated. */
MT_API mt_err mt_dist_buckets_arm(mt_buckets b);
/* Gradients = scale * (sum over ranks): buckets not started yet start (in order), all are
 * awaited and copied back; a missing gradient counts as zeros and is created. overlapped != 0
 * (the same on every rank) when the step armed the buckets: one more small all-reduce then makes
 * sure no rank sent a gradient that changed afterwards (else all buckets are reduced again). */
MT_API mt_err mt_dist_buckets_allreduce(mt_buckets b, double scale, int overlapped);
MT_API mt_err mt_dist_buckets_free(mt_buckets b);
/* t.grad = g (same shape, dtype and device; g NULL drops it): optimizers over shards of
 * parameters read their gradients from views of a reduced buffer. */
MT_API mt_err mt_set_grad(mt_tensor t, mt_tensor g);

/* ---- a heartbeat through the store (dist_watchdog.cpp) ---- */
typedef struct mt_watchdog_s* mt_watchdog;
/* Starts a thread that beats every interval_ms and reports a peer silent for timeout_ms, or a
 * store that stopped answering. */
MT_API mt_err mt_dist_watchdog_start(mt_pg pg, int64_t interval_ms, int64_t timeout_ms, mt_watchdog* out);
/* Any thread: 1 and the failure's message in buf once the watchdog saw one, else 0. */
MT_API int mt_dist_watchdog_failure(mt_watchdog w, char* buf, size_t cap);
/* Any thread: stops and frees the watchdog; leave != 0 tells the peers this rank is leaving on
 * purpose (its silence is then no failure). */
MT_API mt_err mt_dist_watchdog_stop(mt_watchdog w, int leave);

#ifdef __cplusplus
}
#endif
#endif
