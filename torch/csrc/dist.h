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
/* Data-parallel gradient averaging: the gradients of the n parameters that require grad (a missing
 * gradient counts as zeros and is created) are packed, in order, into flat buckets of about
 * bucket_bytes per dtype, each bucket all-reduced, divided by the world size, and copied back.
 * Every rank must pass the same parameters in the same order. *nbuckets = buckets used. */
MT_API mt_err mt_dist_allreduce_grads(mt_pg pg, mt_tensor* params, int n, int64_t bucket_bytes, int* nbuckets);

#ifdef __cplusplus
}
#endif
#endif
