// decode.cpp: the static decode step. One call runs a whole decode step of a pre-norm decoder
// (embedding, every layer with its KV-cache writes, the final norm, the head, sampling) for rows
// 0..rows-1 of the cache: the host's inputs are written into preallocated buffers, the step reads
// only those buffers, the weights, the cache and the RoPE tables, and writes its outputs into
// preallocated buffers, with no host synchronisation until the final copy of the sampled ids. On
// the CPU this saves a crossing of the binding per op; on CUDA the same work is captured as CUDA
// graphs (decode_cuda.cpp) and replayed.
//
// Row b of a step is cache slot b: the rollout engine keeps its running sequences in slots 0..n-1.
// Rows n..rows-1 pad the step up to a bucket (CUDA graphs have fixed shapes): they decode token 0
// at position 0 and write their keys and values into the last position of their slot, which is
// scratch (model.KVCache allocates it and never reads it); their results are dropped.
#include <cstring>
#include <stdexcept>

#include "decode.h"

namespace {

// The columns of the output block: id, log-prob, tempered log-prob, finiteness witness.
constexpr int kOutCols = 4;

struct Layer {
  at::Tensor in_norm, qkv, qkv_bias, q_norm, k_norm, o, o_bias, post_norm, gate_up, gate_up_bias, down, down_bias;
};

struct Weights {
  std::vector<Layer> layers;
  at::Tensor embed, norm, head, cos, sin;
  std::vector<at::Tensor> k, v;  // the cache, per layer [slots, kv_heads, len, head_dim]
  std::vector<const void*> addrs;
};

}  // namespace

struct mt_decoder_s {
  int layers, heads, kv_heads, head_dim, max_rows;
  double eps;
  at::Device dev = at::Device(at::kCPU);
  std::vector<int> buckets;
  // Static inputs on the device: tokens [max_rows], positions [max_rows], cache rows to write
  // [max_rows * kv_heads] (int64, one buffer), sampling settings [max_rows, MT_SP_COLS] (float32).
  at::Tensor ints, floats;
  at::Tensor ints_host, floats_host, out_host;  // pinned staging on CUDA; unused on the CPU
  // Static outputs: [max_rows, 4] float64 (id, log-prob, tempered log-prob, witness), the logits.
  at::Tensor out, logits;
  at::Tensor key_pos;  // 0, 1, ..., cache length - 1 (int64), for the masks
  std::unique_ptr<mt::Graphs> graphs;
};

namespace {

at::Tensor& W(mt_tensor* ws, int i) { return mt::T(ws[i]); }
c10::optional<at::Tensor> optW(mt_tensor* ws, int i) { return mt::opt(ws[i]); }

// fused lays the non-NULL handles of idx out back to back (fuse.cpp); an undefined tensor when the
// first is NULL (no bias). Either all of a group are given or none.
at::Tensor fused(mt_tensor* ws, std::initializer_list<int> idx, const char* what, int layer, mt::StepInfo* info) {
  std::vector<at::Tensor> parts;
  for (int i : idx) {
    if (ws[i] != nullptr) parts.push_back(mt::T(ws[i]));
  }
  if (parts.empty()) return at::Tensor();
  if (parts.size() != idx.size()) {
    throw std::invalid_argument("decoder: layer " + std::to_string(layer) + ": " + what + " given in part");
  }
  bool moved = false;
  at::Tensor whole = mt::fuse_rows(parts, &moved);
  info->relaid += moved ? 1 : 0;
  return whole;
}

void note(Weights& w, const at::Tensor& t) {
  if (t.defined()) w.addrs.push_back(t.data_ptr());
}

Weights gather_weights(const mt_decoder_s& d, mt_tensor* ws, int nw, mt_tensor* cache, int nc, mt::StepInfo* info) {
  if (nw != d.layers * MT_DL_COUNT + MT_DM_COUNT) {
    throw std::invalid_argument("decoder: " + std::to_string(nw) + " weight handles, want " +
                                std::to_string(d.layers * MT_DL_COUNT + MT_DM_COUNT));
  }
  if (nc != 2 * d.layers) {
    throw std::invalid_argument("decoder: " + std::to_string(nc) + " cache tensors, want " + std::to_string(2 * d.layers));
  }
  Weights w;
  for (int l = 0; l < d.layers; l++) {
    mt_tensor* lw = ws + l * MT_DL_COUNT;
    Layer y;
    y.in_norm = W(lw, MT_DL_IN_NORM);
    y.qkv = fused(lw, {MT_DL_Q, MT_DL_K, MT_DL_V}, "q/k/v", l, info);
    y.qkv_bias = fused(lw, {MT_DL_Q_BIAS, MT_DL_K_BIAS, MT_DL_V_BIAS}, "q/k/v biases", l, info);
    if (!y.qkv.defined()) throw std::invalid_argument("decoder: layer " + std::to_string(l) + " has no q/k/v");
    if ((lw[MT_DL_Q_NORM] == nullptr) != (lw[MT_DL_K_NORM] == nullptr)) {
      throw std::invalid_argument("decoder: layer " + std::to_string(l) + ": q_norm without k_norm");
    }
    if (lw[MT_DL_Q_NORM] != nullptr) y.q_norm = W(lw, MT_DL_Q_NORM), y.k_norm = W(lw, MT_DL_K_NORM);
    y.o = W(lw, MT_DL_O);
    if (auto b = optW(lw, MT_DL_O_BIAS)) y.o_bias = *b;
    y.post_norm = W(lw, MT_DL_POST_NORM);
    y.gate_up = fused(lw, {MT_DL_GATE, MT_DL_UP}, "gate/up", l, info);
    y.gate_up_bias = fused(lw, {MT_DL_GATE_BIAS, MT_DL_UP_BIAS}, "gate/up biases", l, info);
    if (!y.gate_up.defined()) throw std::invalid_argument("decoder: layer " + std::to_string(l) + " has no gate/up");
    y.down = W(lw, MT_DL_DOWN);
    if (auto b = optW(lw, MT_DL_DOWN_BIAS)) y.down_bias = *b;
    for (const at::Tensor* t : {&y.in_norm, &y.qkv, &y.qkv_bias, &y.q_norm, &y.k_norm, &y.o, &y.o_bias, &y.post_norm,
                                &y.gate_up, &y.gate_up_bias, &y.down, &y.down_bias}) {
      note(w, *t);
    }
    w.layers.push_back(std::move(y));
  }
  mt_tensor* g = ws + d.layers * MT_DL_COUNT;
  w.embed = W(g, MT_DM_EMBED), w.norm = W(g, MT_DM_NORM), w.head = W(g, MT_DM_HEAD);
  w.cos = W(g, MT_DM_COS), w.sin = W(g, MT_DM_SIN);
  for (const at::Tensor* t : {&w.embed, &w.norm, &w.head, &w.cos, &w.sin}) note(w, *t);
  for (int l = 0; l < d.layers; l++) {
    w.k.push_back(mt::T(cache[2 * l]));
    w.v.push_back(mt::T(cache[2 * l + 1]));
    note(w, w.k.back());
    note(w, w.v.back());
  }
  return w;
}

// check_shapes refuses a cache or table that does not fit the decoder (before anything runs).
void check_shapes(const mt_decoder_s& d, const Weights& w) {
  for (int l = 0; l < d.layers; l++) {
    for (const at::Tensor* c : {&w.k[l], &w.v[l]}) {
      if (c->dim() != 4 || c->size(1) != d.kv_heads || c->size(3) != d.head_dim || !c->is_contiguous() ||
          c->sizes() != w.k[0].sizes() || c->device() != d.dev) {
        throw std::invalid_argument("decoder: layer " + std::to_string(l) + ": the cache is " + c10::str(c->sizes()) +
                                    ", want contiguous [slots, " + std::to_string(d.kv_heads) + ", len, " +
                                    std::to_string(d.head_dim) + "] on " + d.dev.str());
      }
    }
  }
  if (w.cos.dim() != 2 || w.cos.size(1) != d.head_dim || w.sin.sizes() != w.cos.sizes()) {
    throw std::invalid_argument("decoder: RoPE tables are " + c10::str(w.cos.sizes()) + ", want [positions, " +
                                std::to_string(d.head_dim) + "]");
  }
  if (w.k[0].size(2) < 2 || w.cos.size(0) < w.k[0].size(2) - 1) {
    throw std::invalid_argument("decoder: the RoPE tables cover " + std::to_string(w.cos.size(0)) +
                                " positions, the cache " + std::to_string(w.k[0].size(2) - 1) + " and a scratch one");
  }
}

// attend is one row's query against its cache rows under mask [rows, 1, 1, keys] (true = attend),
// without repeating key/value heads: the query heads of a group become rows of their key/value
// head (the model's foldedGQA).
at::Tensor attend(const mt_decoder_s& d, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                  const at::Tensor& mask) {
  if (d.heads == d.kv_heads) return mt::sdpa(q, k, v, mask, false, 0);
  int64_t rows = q.size(0), rep = d.heads / d.kv_heads;
  at::Tensor qf = q.reshape({rows, d.kv_heads, rep, d.head_dim});
  at::Tensor o = mt::sdpa(qf, k, v, mask.expand({rows, 1, rep, mask.size(3)}), false, 0);
  return o.reshape({rows, d.heads, 1, d.head_dim});
}

// forward enqueues the step for rows rows reading keys key positions: the device work only, from
// the static buffers into the static buffers (what a CUDA graph captures).
void forward(mt_decoder_s& d, const Weights& w, int rows, int64_t keys, int mode) {
  const int64_t R = rows, D = d.head_dim, H = d.heads, KV = d.kv_heads;
  at::Tensor tokens = d.ints.narrow(0, 0, R);
  at::Tensor pos = d.ints.narrow(0, d.max_rows, R);
  at::Tensor dst = d.ints.narrow(0, 2 * d.max_rows, R * KV);
  at::Tensor x = at::embedding(w.embed, tokens.view({R, 1}));  // [R, 1, hidden]
  at::Tensor cos = w.cos.index_select(0, pos).view({R, 1, 1, D});
  at::Tensor sin = w.sin.index_select(0, pos).view({R, 1, 1, D});
  // Row b sees keys 0..pos[b] of its slot.
  at::Tensor mask = d.key_pos.narrow(0, 0, keys).view({1, 1, 1, keys}).le(pos.view({R, 1, 1, 1}));
  const int64_t q_rows = H * D, kv_rows = KV * D;
  for (size_t l = 0; l < w.layers.size(); l++) {
    const Layer& y = w.layers[l];
    at::Tensor h = mt::rms_norm(x, y.in_norm, d.eps);
    at::Tensor qkv = mt::linear(h, y.qkv, y.qkv_bias.defined() ? c10::optional<at::Tensor>(y.qkv_bias) : c10::nullopt);
    at::Tensor q = qkv.narrow(-1, 0, q_rows).view({R, 1, H, D}).transpose(1, 2);
    at::Tensor k = qkv.narrow(-1, q_rows, kv_rows).view({R, 1, KV, D}).transpose(1, 2);
    at::Tensor v = qkv.narrow(-1, q_rows + kv_rows, kv_rows).view({R, 1, KV, D}).transpose(1, 2);
    if (y.q_norm.defined()) q = mt::rms_norm(q, y.q_norm, d.eps), k = mt::rms_norm(k, y.k_norm, d.eps);
    q = mt::rope(q, cos, sin);
    k = mt::rope(k, cos, sin);
    // The new key and value of row b go to cache row dst[b * KV + h] (slot, head, position).
    w.k[l].view({-1, D}).index_copy_(0, dst, k.permute({0, 2, 1, 3}).reshape({-1, D}));
    w.v[l].view({-1, D}).index_copy_(0, dst, v.permute({0, 2, 1, 3}).reshape({-1, D}));
    at::Tensor keys_l = w.k[l].narrow(0, 0, R).narrow(2, 0, keys);
    at::Tensor vals_l = w.v[l].narrow(0, 0, R).narrow(2, 0, keys);
    at::Tensor a = attend(d, q, keys_l, vals_l, mask).transpose(1, 2).reshape({R, 1, H * D});
    x = x + mt::linear(a, y.o, y.o_bias.defined() ? c10::optional<at::Tensor>(y.o_bias) : c10::nullopt);
    at::Tensor gu = mt::linear(mt::rms_norm(x, y.post_norm, d.eps), y.gate_up,
                               y.gate_up_bias.defined() ? c10::optional<at::Tensor>(y.gate_up_bias) : c10::nullopt);
    const int64_t I = gu.size(-1) / 2;
    at::Tensor act = at::silu(gu.narrow(-1, 0, I)) * gu.narrow(-1, I, I);
    x = x + mt::linear(act, y.down, y.down_bias.defined() ? c10::optional<at::Tensor>(y.down_bias) : c10::nullopt);
  }
  at::Tensor hidden = mt::rms_norm(x.view({R, x.size(-1)}), w.norm, d.eps);
  at::Tensor lg = mt::linear(hidden, w.head, c10::nullopt).to(at::kFloat);
  d.logits.narrow(0, 0, R).copy_(lg);
  d.out.narrow(0, 0, R).copy_(mt::sample(lg, d.floats.narrow(0, 0, R), mode));
}

// check_inputs refuses a step the buffers or the cache cannot hold, naming the value.
void check_inputs(const mt_decoder_s& d, const Weights& w, int n, int rows, int64_t keys, const int64_t* tokens,
                  const int64_t* positions) {
  const int64_t slots = w.k[0].size(0), len = w.k[0].size(2) - 1, vocab = w.embed.size(0);  // the last is scratch
  if (n < 1 || rows < n || rows > d.max_rows || rows > slots) {
    throw std::invalid_argument("decoder: " + std::to_string(n) + " rows padded to " + std::to_string(rows) +
                                ": want 1 <= rows <= padded <= " + std::to_string(std::min<int64_t>(d.max_rows, slots)));
  }
  if (keys < 1 || keys > len) {
    throw std::invalid_argument("decoder: " + std::to_string(keys) + " key positions, the cache holds " + std::to_string(len));
  }
  for (int b = 0; b < n; b++) {
    if (tokens[b] < 0 || tokens[b] >= vocab) {
      throw std::invalid_argument("decoder: row " + std::to_string(b) + ": token " + std::to_string(tokens[b]) +
                                  " is outside the vocabulary [0, " + std::to_string(vocab) + ")");
    }
    if (positions[b] < 0 || positions[b] >= keys) {
      throw std::invalid_argument("decoder: row " + std::to_string(b) + ": position " + std::to_string(positions[b]) +
                                  " is outside the " + std::to_string(keys) + " key positions read");
    }
  }
}

// stage writes the host's inputs into the static buffers: rows n..rows-1 pad (token 0 at position 0,
// written into their slot's scratch position, the last of the stride positions; greedy).
void stage(mt_decoder_s& d, int n, int rows, int64_t stride, const int64_t* tokens, const int64_t* positions,
           const float* params) {
  const bool cpu = d.dev.is_cpu();
  at::Tensor ints = cpu ? d.ints : d.ints_host, floats = cpu ? d.floats : d.floats_host;
  int64_t* ip = ints.data_ptr<int64_t>();
  float* fp = floats.data_ptr<float>();
  const int64_t R = d.max_rows, KV = d.kv_heads;
  for (int b = 0; b < rows; b++) {
    const int64_t p = b < n ? positions[b] : 0;
    ip[b] = b < n ? tokens[b] : 0;
    ip[R + b] = p;
    const int64_t at = b < n ? p : stride - 1;
    for (int64_t h = 0; h < KV; h++) ip[2 * R + b * KV + h] = (b * KV + h) * stride + at;
    float* row = fp + b * MT_SP_COLS;
    if (b < n) {
      std::memcpy(row, params + b * MT_SP_COLS, sizeof(float) * MT_SP_COLS);
    } else {
      std::memset(row, 0, sizeof(float) * MT_SP_COLS);
      row[MT_SP_TEMP] = 1, row[MT_SP_TOPK] = 1, row[MT_SP_TOPP] = 2, row[MT_SP_GREEDY] = 1;  // greedy, harmless
    }
  }
  if (!cpu) {
    // One copy each; the host buffers are pinned, and the previous step's blocking copy of its
    // outputs has finished every use of them.
    d.ints.copy_(d.ints_host, /*non_blocking=*/true);
    d.floats.narrow(0, 0, rows).copy_(d.floats_host.narrow(0, 0, rows), /*non_blocking=*/true);
  }
}

void make_buffers(mt_decoder_s& d, int64_t vocab, int64_t len) {
  auto on = [&](at::ScalarType t) { return at::TensorOptions().dtype(t).device(d.dev); };
  const int64_t R = d.max_rows;
  if (!d.ints.defined()) {
    d.ints = at::zeros({R * (2 + d.kv_heads)}, on(at::kLong));
    d.floats = at::zeros({R, MT_SP_COLS}, on(at::kFloat));
    d.out = at::zeros({R, kOutCols}, on(at::kDouble));
    if (!d.dev.is_cpu()) {
      auto pinned = [](at::ScalarType t) { return at::TensorOptions().dtype(t).pinned_memory(true); };
      d.ints_host = at::zeros({R * (2 + d.kv_heads)}, pinned(at::kLong));
      d.floats_host = at::zeros({R, MT_SP_COLS}, pinned(at::kFloat));
      d.out_host = at::zeros({R, kOutCols}, pinned(at::kDouble));
    }
  }
  if (!d.logits.defined() || d.logits.size(1) != vocab) d.logits = at::zeros({R, vocab}, on(at::kFloat));
  if (!d.key_pos.defined() || d.key_pos.size(0) != len) d.key_pos = at::arange(len, on(at::kLong));
}

}  // namespace

extern "C" {

mt_err mt_decoder_new(int layers, int heads, int kv_heads, int head_dim, double eps, int max_rows, const int* buckets,
                      int nbuckets, int device, mt_decoder* out) {
  MT_BEGIN
  if (layers < 1 || heads < 1 || kv_heads < 1 || heads % kv_heads != 0 || head_dim < 2 || max_rows < 1) {
    throw std::invalid_argument("decoder: bad shape: " + std::to_string(layers) + " layers, " + std::to_string(heads) +
                                " heads over " + std::to_string(kv_heads) + ", head_dim " + std::to_string(head_dim) +
                                ", " + std::to_string(max_rows) + " rows");
  }
  auto d = std::make_unique<mt_decoder_s>();
  d->layers = layers, d->heads = heads, d->kv_heads = kv_heads, d->head_dim = head_dim, d->max_rows = max_rows;
  d->eps = eps;
  d->dev = mt::device(device);
  for (int i = 0; i < nbuckets; i++) {
    if (buckets[i] < 1 || buckets[i] > max_rows || (i > 0 && buckets[i] <= buckets[i - 1])) {
      throw std::invalid_argument("decoder: buckets must rise within [1, " + std::to_string(max_rows) + "]");
    }
    d->buckets.push_back(buckets[i]);
  }
  if (d->dev.is_cuda()) d->graphs = mt::new_cuda_graphs(d->dev.index());
  *out = d.release();
  MT_END
}

mt_err mt_decoder_free(mt_decoder d) {
  MT_BEGIN
  delete d;
  MT_END
}

mt_err mt_decoder_step(mt_decoder d, mt_tensor* weights, int nweights, mt_tensor* cache, int ncache, int n, int rows,
                       int64_t keys, int mode, int graphs, const int64_t* tokens, const int64_t* positions,
                       const float* params, double* out, int* info) {
  MT_BEGIN
  if (d == nullptr) throw std::invalid_argument("decoder: nil decoder");
  at::NoGradGuard no_grad;
  mt::StepInfo si;
  Weights w = gather_weights(*d, weights, nweights, cache, ncache, &si);
  check_shapes(*d, w);
  check_inputs(*d, w, n, rows, keys, tokens, positions);
  const int64_t stride = w.k[0].size(2);
  make_buffers(*d, w.embed.size(0), stride);
  stage(*d, n, rows, stride, tokens, positions, params);
  auto fwd = [&](int r) { forward(*d, w, r, keys, mode); };
  mt::StepKey key{mode, rows, keys};
  bool replayed = graphs && d->graphs && d->graphs->run(key, d->buckets, w.addrs, fwd, &si);
  if (!replayed) fwd(rows);
  si.replayed = replayed ? 1 : 0;
  // The one host synchronisation of the step: its sampled ids and log-probabilities.
  at::Tensor res = d->out.narrow(0, 0, n);
  if (!d->dev.is_cpu()) {
    mt::note_sync(res);
    d->out_host.narrow(0, 0, n).copy_(res);
    res = d->out_host.narrow(0, 0, n);
  }
  std::memcpy(out, res.data_ptr<double>(), sizeof(double) * n * kOutCols);
  int vals[MT_STEP_INFO] = {si.replayed, si.captured, si.dropped, si.fell_back, si.relaid};
  std::memcpy(info, vals, sizeof(vals));
  MT_END
}

mt_err mt_decoder_logits(mt_decoder d, int n, mt_tensor* out) {
  MT_BEGIN
  if (d == nullptr || !d->logits.defined()) throw std::invalid_argument("decoder: no step has run");
  if (n < 1 || n > d->max_rows) throw std::invalid_argument("decoder: logits of " + std::to_string(n) + " rows");
  *out = mt::wrap(d->logits.narrow(0, 0, n).clone());
  MT_END
}

mt_err mt_decoder_stats(mt_decoder d, int64_t* captures, double* capture_s, int64_t* pool_bytes, int64_t* held,
                        char* reason, size_t cap) {
  MT_BEGIN
  if (d == nullptr) throw std::invalid_argument("decoder: nil decoder");
  *captures = 0, *capture_s = 0, *pool_bytes = 0, *held = 0;
  std::string why = d->graphs ? d->graphs->reason() : "";
  if (d->graphs) {
    *captures = d->graphs->captures(), *capture_s = d->graphs->capture_seconds();
    *pool_bytes = d->graphs->pool_bytes(), *held = d->graphs->held();
  }
  if (cap > 0) std::snprintf(reason, cap, "%s", why.c_str());
  MT_END
}

}  // extern "C"

#ifndef MTGRPO_CUDA
namespace mt {
std::unique_ptr<Graphs> new_cuda_graphs(int) { return nullptr; }
}  // namespace mt
#endif
