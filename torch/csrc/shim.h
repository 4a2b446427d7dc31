/*
 * shim.h: the C ABI of libmtgrpo_torch.so, the only thing the Go package torch sees of libtorch.
 *
 * Conventions (every entry point follows them):
 *   - Errors come back from the same call: an entry point returns mt_err, NULL on success or a
 *     malloc'd, NUL-terminated message the caller frees with free(). There is no "last error".
 *     Every C++ exception (c10::Error, std::exception, anything else) is caught inside the call.
 *   - Results are written through out-parameters. A new mt_tensor handle owns one at::Tensor
 *     reference; release it with mt_free (many handles in one call). Views share storage with the
 *     tensor they view, as in libtorch; freeing a handle never invalidates another handle.
 *   - Optional tensor arguments are NULL when absent.
 *   - Thread ownership: mt_claim_thread makes the calling OS thread the torch thread; every other
 *     entry point (except mt_abi_version, mt_on_torch_thread, mt_live_tensors and mt_tensors_created)
 *     fails on any other thread. Grad mode, inference mode and the current CUDA stream are
 *     thread-local in libtorch.
 *   - Dtypes and devices use the codes below, not libtorch's enums, so the ABI does not depend on the
 *     libtorch version.
 *
 * Bump MT_ABI_VERSION whenever a declaration here changes meaning: the Go package compares it with
 * mt_abi_version() of the library it loaded and refuses to run on a mismatch. Go's build cache does
 * not hash this header (it is outside the package directory): after changing it, `go clean -cache`
 * on a machine that built the package before.
 */
#ifndef MTGRPO_SHIM_H
#define MTGRPO_SHIM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MT_ABI_VERSION 7

#if defined(__GNUC__)
#define MT_API __attribute__((visibility("default")))
#else
#define MT_API
#endif

typedef struct mt_tensor_s* mt_tensor;
typedef struct mt_generator_s* mt_generator;
typedef struct mt_guard_s* mt_guard;
typedef struct mt_gradbuf_s* mt_gradbuf;
typedef char* mt_err;

/* dtype codes */
enum { MT_F32 = 0, MT_F16 = 1, MT_BF16 = 2, MT_I64 = 3, MT_I32 = 4, MT_U8 = 5, MT_BOOL = 6, MT_F64 = 7 };
/* device codes: MT_CPU, or n >= 0 for cuda:n */
#define MT_CPU (-1)
/* the most dimensions mt_info reports */
#define MT_MAX_DIMS 16

/* ---- runtime.cpp: version, threads, handles ---------------------------------------------- */
MT_API int mt_abi_version(void);
MT_API mt_err mt_claim_thread(void);
MT_API int mt_on_torch_thread(void);
/* libtorch version ("1.13.1"), whether the shim was built for CUDA, whether CUDA works, how many
 * CUDA devices. */
MT_API mt_err mt_version(char* buf, size_t cap, int* cuda_built, int* cuda_available, int* cuda_devices);
/* handles created and not yet freed (all threads). */
MT_API int64_t mt_live_tensors(void);
/* handles created since the library was loaded (all threads): a step that creates none leaves it. */
MT_API int64_t mt_tensors_created(void);
MT_API mt_err mt_free(mt_tensor* hs, size_t n);
MT_API mt_err mt_set_num_threads(int n);
MT_API mt_err mt_manual_seed(uint64_t seed);

/* ---- threads.cpp: CPU thread pools ----------------------------------------------------------- */
/* libtorch's intra-op thread count, and OpenBLAS' (-1 when the BLAS in the process is not OpenBLAS). */
MT_API mt_err mt_get_threads(int* intra_op, int* blas);
/* Sets OpenBLAS' thread count when OpenBLAS is loaded; found reports whether it is. */
MT_API mt_err mt_set_blas_threads(int n, int* found);

/* ---- tensor.cpp: creation, conversion, metadata ------------------------------------------- */
/* Copies nbytes of raw little-endian data into a new contiguous tensor on device. */
MT_API mt_err mt_from_data(const void* data, size_t nbytes, int dtype, const int64_t* shape, int ndim,
                           int device, mt_tensor* out);
/* Copies the elements of t (any device, any layout) into data, which holds exactly nbytes. */
MT_API mt_err mt_to_data(mt_tensor t, void* data, size_t nbytes);
enum { MT_FILL_EMPTY = 0, MT_FILL_ZEROS = 1, MT_FILL_ONES = 2, MT_FILL_VALUE = 3 };
MT_API mt_err mt_full(const int64_t* shape, int ndim, int dtype, int device, int fill, double value,
                      mt_tensor* out);
MT_API mt_err mt_arange(double start, double end, double step, int dtype, int device, mt_tensor* out);
/* shape, ndim, dtype code, device code, numel, requires_grad, is_contiguous in one call. */
MT_API mt_err mt_info(mt_tensor t, int64_t* shape, int* ndim, int* dtype, int* device, int64_t* numel,
                      int* requires_grad, int* contiguous);
MT_API mt_err mt_item(mt_tensor t, double* f, int64_t* i);
/* dtype < 0 keeps the dtype; copy forces a new tensor even when nothing changes. */
MT_API mt_err mt_to(mt_tensor t, int device, int dtype, int copy, mt_tensor* out);
MT_API mt_err mt_contiguous(mt_tensor t, mt_tensor* out);
MT_API mt_err mt_clone(mt_tensor t, mt_tensor* out);
MT_API mt_err mt_copy_(mt_tensor dst, mt_tensor src);
MT_API mt_err mt_fill_(mt_tensor t, double value);
MT_API mt_err mt_equal(mt_tensor a, mt_tensor b, int* out);
MT_API mt_err mt_allclose(mt_tensor a, mt_tensor b, double rtol, double atol, int* out);

/* ---- random.cpp: generators and sampling --------------------------------------------------- */
MT_API mt_err mt_generator_new(uint64_t seed, int device, mt_generator* out);
MT_API mt_err mt_generator_free(mt_generator g);
MT_API mt_err mt_generator_seed(mt_generator g, uint64_t seed);
enum { MT_RAND_NORMAL = 0, MT_RAND_UNIFORM = 1 };
MT_API mt_err mt_rand(int kind, const int64_t* shape, int ndim, int dtype, int device, mt_generator g,
                      mt_tensor* out);
/* integers uniform in [low, high) */
MT_API mt_err mt_randint(int64_t low, int64_t high, const int64_t* shape, int ndim, int dtype, int device,
                         mt_generator g, mt_tensor* out);
MT_API mt_err mt_multinomial(mt_tensor probs, int64_t n, int replacement, mt_generator g, mt_tensor* out);

/* ---- ops.cpp: elementwise and reductions ---------------------------------------------------- */
enum {
  MT_NEG, MT_EXP, MT_LOG, MT_SQRT, MT_RSQRT, MT_TANH, MT_SIGMOID, MT_SILU, MT_ABS, MT_RELU, MT_GELU,
  MT_GELU_TANH, MT_NOT, MT_SIN, MT_COS, MT_RECIPROCAL, MT_SQUARE, MT_ISNAN, MT_ISFINITE, MT_LOG1P,
  MT_UNARY_COUNT
};
MT_API mt_err mt_unary(int op, mt_tensor a, mt_tensor* out);
enum {
  MT_ADD, MT_SUB, MT_MUL, MT_DIV, MT_POW, MT_EQ, MT_NE, MT_LT, MT_LE, MT_GT, MT_GE, MT_MAXIMUM,
  MT_MINIMUM, MT_AND, MT_OR, MT_RSUB, MT_BINARY_COUNT
};
/* out == NULL: in place into a (only add, sub, mul, div). */
MT_API mt_err mt_binary(int op, mt_tensor a, mt_tensor b, mt_tensor* out);
/* a op s; MT_RSUB computes s - a, MT_POW a^s. out == NULL: in place into a. */
MT_API mt_err mt_binary_scalar(int op, mt_tensor a, double s, mt_tensor* out);
enum { MT_SUM, MT_MEAN, MT_AMAX, MT_AMIN, MT_LOGSUMEXP, MT_ANY, MT_ALL, MT_REDUCE_COUNT };
/* ndims == 0 reduces over all dimensions. */
MT_API mt_err mt_reduce(int op, mt_tensor a, const int64_t* dims, int ndims, int keepdim, mt_tensor* out);
MT_API mt_err mt_argmax(mt_tensor a, int64_t dim, int keepdim, mt_tensor* out);
MT_API mt_err mt_max_dim(mt_tensor a, int64_t dim, int keepdim, int min, mt_tensor* values, mt_tensor* indices);
MT_API mt_err mt_cumsum(mt_tensor a, int64_t dim, mt_tensor* out);
/* dtype < 0: keep */
MT_API mt_err mt_softmax(mt_tensor a, int64_t dim, int log, int dtype, mt_tensor* out);
MT_API mt_err mt_where(mt_tensor cond, mt_tensor a, mt_tensor b, mt_tensor* out);
/* out == NULL: in place */
MT_API mt_err mt_masked_fill(mt_tensor a, mt_tensor mask, double value, mt_tensor* out);
MT_API mt_err mt_clamp(mt_tensor a, int has_min, double min, int has_max, double max, mt_tensor* out);
MT_API mt_err mt_matmul(mt_tensor a, mt_tensor b, mt_tensor* out);
MT_API mt_err mt_linear(mt_tensor x, mt_tensor w, mt_tensor bias, mt_tensor* out);
MT_API mt_err mt_topk(mt_tensor a, int64_t k, int64_t dim, int largest, mt_tensor* values, mt_tensor* indices);
MT_API mt_err mt_sort(mt_tensor a, int64_t dim, int descending, mt_tensor* values, mt_tensor* indices);
MT_API mt_err mt_tri(mt_tensor a, int64_t diagonal, int upper, mt_tensor* out);

/* ---- shape.cpp: views, indexing, joining ---------------------------------------------------- */
MT_API mt_err mt_reshape(mt_tensor a, const int64_t* shape, int ndim, int view, mt_tensor* out);
MT_API mt_err mt_transpose(mt_tensor a, int64_t d0, int64_t d1, mt_tensor* out);
MT_API mt_err mt_permute(mt_tensor a, const int64_t* dims, int ndims, mt_tensor* out);
MT_API mt_err mt_unsqueeze(mt_tensor a, int64_t dim, mt_tensor* out);
/* all != 0 squeezes every size-1 dimension; otherwise dim */
MT_API mt_err mt_squeeze(mt_tensor a, int64_t dim, int all, mt_tensor* out);
MT_API mt_err mt_expand(mt_tensor a, const int64_t* shape, int ndim, mt_tensor* out);
MT_API mt_err mt_repeat(mt_tensor a, const int64_t* reps, int ndim, mt_tensor* out);
MT_API mt_err mt_slice(mt_tensor a, int64_t dim, int64_t start, int64_t end, int64_t step, mt_tensor* out);
MT_API mt_err mt_narrow(mt_tensor a, int64_t dim, int64_t start, int64_t length, mt_tensor* out);
MT_API mt_err mt_cat(mt_tensor* ts, int n, int64_t dim, int stack, mt_tensor* out);
/* Splits into pieces of size `size` (chunks == 0) or into `chunks` chunks; writes at most cap handles
 * to outs and their count to n. */
MT_API mt_err mt_split(mt_tensor a, int64_t size, int64_t chunks, int64_t dim, mt_tensor* outs, int cap, int* n);
MT_API mt_err mt_split_sizes(mt_tensor a, const int64_t* sizes, int nsizes, int64_t dim, mt_tensor* outs);
MT_API mt_err mt_gather(mt_tensor a, int64_t dim, mt_tensor index, mt_tensor* out);
/* add != 0: scatter_add. out == NULL: in place into a. */
MT_API mt_err mt_scatter(mt_tensor a, int64_t dim, mt_tensor index, mt_tensor src, int add, mt_tensor* out);
MT_API mt_err mt_index_select(mt_tensor a, int64_t dim, mt_tensor index, mt_tensor* out);
MT_API mt_err mt_index_copy_(mt_tensor a, int64_t dim, mt_tensor index, mt_tensor src);
/* weight[ids]; padding_idx >= 0 gives that row no gradient from this lookup (nn.Embedding's
 * padding_idx), -1 = none. */
MT_API mt_err mt_embedding(mt_tensor weight, mt_tensor ids, int64_t padding_idx, mt_tensor* out);

/* ---- nn.cpp: attention and fused layers ----------------------------------------------------- */
/* q [B, H, Tq, D], k and v [B, Hkv, Tk, D] with H % Hkv == 0 (grouped-query attention).
 * mask (optional) broadcasts to [B, H, Tq, Tk]: bool (true = attend) or additive float.
 * scale <= 0 means 1/sqrt(D). causal aligns the mask top-left, as PyTorch does. */
MT_API mt_err mt_sdpa(mt_tensor q, mt_tensor k, mt_tensor v, mt_tensor mask, int causal, double scale,
                      mt_tensor* out);
/* weight * (x / sqrt(mean(x^2, -1) + eps)), computed in float32 and cast back to x's dtype. */
MT_API mt_err mt_rms_norm(mt_tensor x, mt_tensor weight, double eps, mt_tensor* out);
/* silu(gate) * up: the SwiGLU activation. */
MT_API mt_err mt_silu_mul(mt_tensor gate, mt_tensor up, mt_tensor* out);
/* Rotary position embedding, Hugging Face layout: x * cos + rotate_half(x) * sin, where
 * rotate_half(x) = cat(-x[..., D/2:], x[..., :D/2]). cos and sin broadcast to x and are cast to its dtype. */
MT_API mt_err mt_rope(mt_tensor x, mt_tensor cos, mt_tensor sin, mt_tensor* out);
/* log_softmax(logits.float(), -1).gather(-1, ids.unsqueeze(-1)).squeeze(-1): per-token log-probs. */
MT_API mt_err mt_token_logprobs(mt_tensor logits, mt_tensor ids, mt_tensor* out);

/* ---- sample.cpp: sampling on the device --------------------------------------------------- */
/* Columns of the per-row settings, float32 [rows, MT_SP_COLS]: temperature (1 for greedy rows),
 * top-k (vocab = off), top-p (2 = off), min-p (0 = off), the row's uniform number u in [0, 1),
 * greedy (1 = take the argmax). */
enum { MT_SP_TEMP, MT_SP_TOPK, MT_SP_TOPP, MT_SP_MINP, MT_SP_U, MT_SP_GREEDY, MT_SP_COLS };
/* Sampling modes: GREEDY (every row greedy) alone, or any of SORT (some row has top-k or top-p)
 * and MINP (some row has min-p); 0 samples without truncation. */
enum { MT_SAMPLE_GREEDY = 1, MT_SAMPLE_SORT = 2, MT_SAMPLE_MINP = 4 };
/* One token per row of float32 logits [rows, vocab] by inverse-CDF sampling with each row's u:
 * *out is float64 [rows, 4]: id, log-prob under the sampled (truncated) distribution, log-prob after
 * temperature only, and a witness that is NaN or infinite exactly when the row's distribution is
 * undefined (rollout/sampler.go states the semantics). */
MT_API mt_err mt_sample(mt_tensor logits, mt_tensor params, int mode, mt_tensor* out);

/* ---- fuse.cpp: weights laid out back to back ----------------------------------------------- */
/* Group g is parts[offs[g]] .. parts[offs[g+1]-1] (same dtype, device and trailing dims). Each
 * group's parts are made consecutive rows of one storage, each part keeping its own tensor (autograd
 * state and gradient: only its data is re-pointed), and outs[g] receives the whole [sum of rows, ...]
 * tensor. A group already laid out so is only checked (pointer comparisons); one whose parts were
 * replaced is copied into new storage. *moved counts the groups copied. */
MT_API mt_err mt_fuse_rows(mt_tensor* parts, const int* offs, int ngroups, mt_tensor* outs, int* moved);

/* ---- decode.cpp: the static decode step (CUDA graphs in decode_cuda.cpp) ------------------- */
typedef struct mt_decoder_s* mt_decoder;
/* The handles of one layer, in this order (NULL where the architecture has none). */
enum {
  MT_DL_IN_NORM, MT_DL_Q, MT_DL_K, MT_DL_V, MT_DL_Q_BIAS, MT_DL_K_BIAS, MT_DL_V_BIAS, MT_DL_Q_NORM, MT_DL_K_NORM,
  MT_DL_O, MT_DL_O_BIAS, MT_DL_POST_NORM, MT_DL_GATE, MT_DL_UP, MT_DL_GATE_BIAS, MT_DL_UP_BIAS, MT_DL_DOWN,
  MT_DL_DOWN_BIAS, MT_DL_COUNT
};
/* The model-wide handles after the layers': embedding, final norm weight, head weight, RoPE cos and
 * sin tables [positions, head_dim] in the model dtype. */
enum { MT_DM_EMBED, MT_DM_NORM, MT_DM_HEAD, MT_DM_COS, MT_DM_SIN, MT_DM_COUNT };
/* A decoder of a pre-norm model (SwiGLU MLP, grouped-query attention, RoPE, optional q/k norms and
 * biases) for steps of up to max_rows rows on device. buckets (rising, within [1, max_rows]) are
 * the row counts a step is padded to when graphs are on: the graphs of all of them are captured
 * together, largest first. */
MT_API mt_err mt_decoder_new(int layers, int heads, int kv_heads, int head_dim, double eps, int max_rows,
                             const int* buckets, int nbuckets, int device, mt_decoder* out);
MT_API mt_err mt_decoder_free(mt_decoder d);
/* What mt_decoder_step did: info[MT_STEP_REPLAYED] the step was a graph replay, [MT_STEP_CAPTURED]
 * graphs captured, [MT_STEP_DROPPED] graphs dropped because what they read moved, [MT_STEP_FELL_BACK]
 * a capture failed (graphs are off for this decoder; mt_decoder_stats says why), [MT_STEP_RELAID]
 * fused weight groups copied into new storage. */
enum { MT_STEP_REPLAYED, MT_STEP_CAPTURED, MT_STEP_DROPPED, MT_STEP_FELL_BACK, MT_STEP_RELAID, MT_STEP_INFO };
/* One decode step: row b < n appends tokens[b] at positions[b] of cache slot b and samples its next
 * token with settings params[b] (MT_SP_COLS floats) under mode (MT_SAMPLE_*); rows n..rows-1 pad.
 * weights: layers * MT_DL_COUNT + MT_DM_COUNT handles; cache: K and V of each layer in turn, each
 * [slots, kv_heads, len + 1, head_dim], whose last position is scratch (the padding rows write
 * there). Each row's attention reads key positions [0, keys) of its slot, masked beyond its position. out receives [n, 4] float64 (mt_sample's columns); info MT_STEP_INFO
 * ints. graphs != 0 replays (capturing when needed) CUDA graphs on a CUDA build. */
MT_API mt_err mt_decoder_step(mt_decoder d, mt_tensor* weights, int nweights, mt_tensor* cache, int ncache, int n,
                              int rows, int64_t keys, int mode, int graphs, const int64_t* tokens,
                              const int64_t* positions, const float* params, double* out, int* info);
/* A copy of the last step's float32 logits of rows [0, n). */
MT_API mt_err mt_decoder_logits(mt_decoder d, int n, mt_tensor* out);
/* Graphs captured so far, seconds spent capturing, the bytes their memory pool added, graphs held
 * now, and why graphs are off ("" while they are on; at most cap bytes with the NUL). */
MT_API mt_err mt_decoder_stats(mt_decoder d, int64_t* captures, double* capture_s, int64_t* pool_bytes,
                               int64_t* held, char* reason, size_t cap);

/* ---- autograd.cpp ---------------------------------------------------------------------------- */
MT_API mt_err mt_set_requires_grad(mt_tensor t, int on);
/* *out = NULL when t has no gradient */
MT_API mt_err mt_grad(mt_tensor t, mt_tensor* out);
/* set_to_none != 0 drops the gradients; otherwise zeroes them in place */
MT_API mt_err mt_zero_grad(mt_tensor* ts, int n, int set_to_none);
MT_API mt_err mt_detach(mt_tensor t, int inplace, mt_tensor* out);
/* grads may be NULL (scalars only) or hold n entries; inputs (ninputs > 0) limits accumulation. */
MT_API mt_err mt_backward(mt_tensor* ts, int n, mt_tensor* grads, mt_tensor* inputs, int ninputs,
                          int retain_graph, int create_graph);
/* outs receives ninputs handles (NULL where allow_unused and unused). grads as in mt_backward. */
MT_API mt_err mt_autograd_grad(mt_tensor* ts, int n, mt_tensor* grads, mt_tensor* inputs, int ninputs,
                               int retain_graph, int create_graph, int allow_unused, mt_tensor* outs);
enum { MT_GUARD_NO_GRAD = 0, MT_GUARD_ENABLE_GRAD = 1, MT_GUARD_INFERENCE = 2 };
/* RAII guards of libtorch held across calls; free them in reverse order of creation. */
MT_API mt_err mt_guard_new(int kind, mt_guard* out);
MT_API mt_err mt_guard_free(mt_guard g);
MT_API mt_err mt_grad_enabled(int* out);

/* ---- optim.cpp ------------------------------------------------------------------------------ */
/* One AdamW step (decoupled weight decay, bias correction; PyTorch's torch.optim.AdamW) over n
 * parameters with their first and second moment buffers. masters (NULL = none) holds per parameter
 * a float32 master copy or NULL: where there is one, the step updates the master (the moments are
 * float32 too, the gradient is converted) and copies it into the parameter, rounded to its dtype;
 * elsewhere the parameter is updated in place and its moments have its dtype. steps[i] is parameter
 * i's own step count, as PyTorch keeps one per parameter: a parameter with a gradient has it
 * incremented here and is updated with the bias corrections of the new count; a parameter without
 * one is skipped and keeps its count. grads (NULL = the parameters' own .grad) gives each
 * parameter's gradient instead, NULL where it has none (mt_gradbuf_step_grads). decay (NULL = all)
 * says per parameter whether weight decay applies (Hugging Face excludes biases and norm weights).
 * Shapes, dtypes and counts are checked before anything is updated. The step runs libtorch's
 * multi-tensor kernels (mt_adamw_kernel says which), or one parameter at a time where per_tensor is
 * nonzero (the reference). */
MT_API mt_err mt_adamw_step(mt_tensor* params, mt_tensor* masters, mt_tensor* exp_avg, mt_tensor* exp_avg_sq,
                            mt_tensor* grads, const int* decay, int64_t* steps, int n, double lr, double beta1,
                            double beta2, double eps, double weight_decay, int per_tensor);
/* The multi-tensor AdamW of this build: 2 at::_fused_adamw_ (libtorch 2.4+), 1 the _foreach_ ops. */
MT_API int mt_adamw_kernel(void);
/* A printable rendering of t's values (libtorch's operator<<), malloc'd into *out. */
MT_API mt_err mt_to_string(mt_tensor t, char** out);
/* Scales gradients so that their global L2 norm is at most max_norm; *total = the norm before. */
MT_API mt_err mt_clip_grad_norm(mt_tensor* params, int n, double max_norm, double* total);

/* ---- grad_buffers.cpp: persistent flat gradient buffers (one process) ---------------------- */
/* Lays out one flat buffer per device and dtype for the parameters of params that require grad
 * and makes each one's .grad a view of its region (a gradient it already has is copied in). */
MT_API mt_err mt_gradbuf_new(mt_tensor* params, int n, mt_gradbuf* out);
/* The parameters it holds, its buffers and their bytes. */
MT_API mt_err mt_gradbuf_info(mt_gradbuf b, int* nparams, int* nbufs, int64_t* bytes);
/* Zeroes the buffers and puts every view back as its parameter's .grad. */
MT_API mt_err mt_gradbuf_zero(mt_gradbuf b);
/* Finds the parameters backward reached since the last zero (a gradient replaced meanwhile is
 * copied into its region) and drops the gradient of the others; reached (NULL = not wanted) gets
 * 1 or 0 per held parameter, in order. */
MT_API mt_err mt_gradbuf_settle(mt_gradbuf b, int* reached);
/* Settles, then mt_clip_grad_norm over the buffers: the norm of each buffer (float32 rows, float64
 * between rows: accurate at any size), every gradient scaled by max_norm / (total + 1e-6) when that is below 1 (an
 * infinite max_norm scales nothing); *total = the norm before, 0 when nothing was reached. */
MT_API mt_err mt_gradbuf_clip(mt_gradbuf b, double max_norm, double* total);
/* The gradients an AdamW step over the held parameters takes (after settle; out holds nparams):
 * the views, float32 ones for float16/bfloat16 parameters (their masters' dtype; one cast per
 * buffer), NULL for a parameter without a gradient. */
MT_API mt_err mt_gradbuf_step_grads(mt_gradbuf b, mt_tensor* out);
/* Frees the buffers; the parameters are left without gradients. */
MT_API mt_err mt_gradbuf_free(mt_gradbuf b);

/* ---- cuda: runtime_cuda.cpp on CUDA builds, errors elsewhere --------------------------------- */
MT_API mt_err mt_cuda_synchronize(int device);
/* Makes device the torch thread's current CUDA device (NCCL and new streams use it). */
MT_API mt_err mt_cuda_set_device(int device);
/* bytes held by tensors, bytes reserved by the caching allocator, peak of allocated */
MT_API mt_err mt_cuda_memory(int device, int64_t* allocated, int64_t* reserved, int64_t* peak, int64_t* peak_reserved);
MT_API mt_err mt_cuda_empty_cache(void);
MT_API mt_err mt_cuda_reset_peak(int device);
/* The caching allocator's counters of device since start, MT_ALLOC_STATS of them in this order:
 * blocks allocated, blocks freed, cudaMalloc calls (segments allocated), cudaFree calls (segments
 * freed), allocation retries (cache flushed and cudaMalloc tried again), out-of-memory errors. */
#define MT_ALLOC_STATS 6
MT_API mt_err mt_cuda_alloc_counts(int device, int64_t* out);
/* Host synchronisations the shim made so far (a value copied from a device to the host: item,
 * to_data, the gradient norm), on any thread; CPU tensors are not counted. */
MT_API int64_t mt_host_syncs(void);

/* ---- cpu_memory.cpp: CPU tensor memory ------------------------------------------------------ */
/* From the first call on, libtorch's CPU allocations go through a counting wrapper (process-wide,
 * for good): what mt_cpu_memory reports. Tensors allocated before are not counted. */
MT_API mt_err mt_cpu_memory_track(void);
/* MT_CPU_STATS counters since tracking began, in this order: allocations, frees, bytes held by
 * live tensors, the most bytes held at once since the last mt_cpu_memory_reset_peak. */
#define MT_CPU_STATS 4
MT_API mt_err mt_cpu_memory(int64_t* out);
MT_API mt_err mt_cpu_memory_reset_peak(void);

/* ---- bench.cpp: reference loops for the per-call overhead benchmark -------------------------- */
/* Runs a.add(b) iters times inside C++ and reports nanoseconds per iteration. */
MT_API mt_err mt_bench_add_loop(mt_tensor a, mt_tensor b, int64_t iters, double* ns_per_op);
MT_API mt_err mt_bench_matmul_loop(mt_tensor a, mt_tensor b, int64_t iters, double* ns_per_op);

#ifdef __cplusplus
}
#endif
#endif
