// nn.cpp: attention and the fused layer pieces that save crossings in the model's hot path (also
// the building blocks of the static decode step, decode.cpp).
#include <torch/version.h>

#include <cmath>
#include <stdexcept>

#include "shim_internal.h"

namespace {

// Repeats each of k's Hkv heads H/Hkv times: [B, Hkv, T, D] -> [B, H, T, D] (head h uses kv head
// h / (H/Hkv), as in Llama's repeat_kv).
[[maybe_unused]] at::Tensor repeat_kv(const at::Tensor& k, int64_t heads) {
  int64_t hkv = k.size(1);
  if (hkv == heads) return k;
  int64_t rep = heads / hkv;
  auto s = k.sizes();
  return k.unsqueeze(2).expand({s[0], hkv, rep, s[2], s[3]}).reshape({s[0], heads, s[2], s[3]});
}

}  // namespace

namespace mt {

at::Tensor sdpa(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, c10::optional<at::Tensor> mask,
                bool causal, double scale) {
  if (q.dim() != 4 || k.dim() != 4 || v.dim() != 4) {
    throw std::invalid_argument("sdpa: q, k, v must be [B, H, T, D], got " + c10::str(q.sizes()) + ", " +
                                c10::str(k.sizes()) + ", " + c10::str(v.sizes()));
  }
  if (mask && causal) throw std::invalid_argument("sdpa: pass either a mask or causal, not both");
  int64_t d = q.size(3);
  bool default_scale = scale <= 0 || std::abs(scale - 1.0 / std::sqrt(static_cast<double>(d))) < 1e-12;
  int64_t heads = q.size(1);
  if (k.size(1) != v.size(1) || k.size(1) == 0 || heads % k.size(1) != 0) {
    throw std::invalid_argument("sdpa: " + std::to_string(heads) + " query heads need a divisor number of key/value "
                                "heads, got k " + std::to_string(k.size(1)) + " and v " + std::to_string(v.size(1)));
  }
  // An additive mask in another float dtype than q: the CUDA kernels of 2.x refuse a bias whose
  // dtype differs from q's while the CPU math kernel adds it anyway; cast, so both behave alike.
  if (mask && at::isFloatingType(mask->scalar_type()) && mask->scalar_type() != q.scalar_type()) {
    mask = mask->to(q.scalar_type());
  }
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
  c10::optional<double> sc;
  if (!default_scale) sc = scale;
#if TORCH_VERSION_MAJOR > 2 || TORCH_VERSION_MINOR >= 5
  // 2.5+ reads grouped k and v heads without copying them (enable_gqa), but only the flash and
  // cuDNN kernels accept that in the releases this was written against (2.5 to 2.12): with a
  // mask, or in float32, enable_gqa sends attention to the quadratic math kernel. There the heads
  // are expanded first instead, so that the memory-efficient kernel still runs.
  bool half = q.scalar_type() == at::kHalf || q.scalar_type() == at::kBFloat16;
  if (k.size(1) != heads && !mask && half) {
    return at::scaled_dot_product_attention(q, k, v, mask, 0.0, causal, sc, /*enable_gqa=*/true);
  }
#endif
  return at::scaled_dot_product_attention(q, repeat_kv(k, heads), repeat_kv(v, heads), mask, 0.0, causal, sc);
#else
  // 1.13 has only the private op and 2.0 no scale argument; both use 1/sqrt(D): fold another
  // scale into q.
  at::Tensor qq = default_scale ? q : q * (scale * std::sqrt(static_cast<double>(d)));
  at::Tensor kk = repeat_kv(k, heads), vv = repeat_kv(v, heads);
#if TORCH_VERSION_MAJOR >= 2
  return at::scaled_dot_product_attention(qq, kk, vv, mask, 0.0, causal);
#else
  return std::get<0>(at::_scaled_dot_product_attention(qq, kk, vv, mask, 0.0, false, causal));
#endif
#endif
}

at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& w, double eps) {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
  // 2.4+ has the op (fused kernels in later releases). It is called without the weight: it then
  // normalises in float32 and casts back, and the weight multiplies after the cast, as in HF's
  // RMSNorm (with the weight inside, 2.8+ would multiply in float32 and round once).
  return at::rms_norm(x, {x.size(-1)}, c10::nullopt, eps) * w;
#else
  at::Tensor xf = x.to(at::kFloat);
  at::Tensor r = (xf.square().mean(-1, true) + eps).rsqrt();
  return (xf * r).to(x.scalar_type()) * w;
#endif
}

at::Tensor linear(const at::Tensor& x, const at::Tensor& w, const c10::optional<at::Tensor>& b) {
  // One row on the CPU (a decode step of one sequence): a matrix-vector product. at::linear would
  // run a matrix product, and OpenBLAS' sgemm copies (packs) the whole weight for it on every call,
  // which at one row costs about as much as the product itself (a third more time measured on a
  // 32,000 x 512 head). Autograd and the result's shape are those of at::linear.
  if (x.device().is_cpu() && x.dim() >= 1 && x.numel() == x.size(-1) && w.dim() == 2 && x.numel() > 0) {
    auto shape = x.sizes().vec();
    shape.back() = w.size(0);
    at::Tensor flat = x.reshape({x.size(-1)});
    at::Tensor y = b ? at::addmv(*b, w, flat) : at::mv(w, flat);
    return y.view(shape);
  }
  return at::linear(x, w, b);
}

at::Tensor rope(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  int64_t d = x.size(-1);
  if (d % 2 != 0) throw std::invalid_argument("rope: head dimension " + std::to_string(d) + " is odd");
  at::Tensor x1 = x.narrow(-1, 0, d / 2), x2 = x.narrow(-1, d / 2, d / 2);
  at::Tensor rotated = at::cat({x2.neg(), x1}, -1);
  return x * cos.to(x.scalar_type()) + rotated * sin.to(x.scalar_type());
}

}  // namespace mt

extern "C" {

mt_err mt_sdpa(mt_tensor q, mt_tensor k, mt_tensor v, mt_tensor mask, int causal, double scale, mt_tensor* out) {
  MT_BEGIN
  *out = mt::wrap(mt::sdpa(mt::T(q), mt::T(k), mt::T(v), mt::opt(mask), causal != 0, scale));
  MT_END
}

mt_err mt_rms_norm(mt_tensor x, mt_tensor weight, double eps, mt_tensor* out) {
  MT_BEGIN
  *out = mt::wrap(mt::rms_norm(mt::T(x), mt::T(weight), eps));
  MT_END
}

mt_err mt_silu_mul(mt_tensor gate, mt_tensor up, mt_tensor* out) {
  MT_BEGIN
  *out = mt::wrap(at::silu(mt::T(gate)) * mt::T(up));
  MT_END
}

mt_err mt_rope(mt_tensor x, mt_tensor cos, mt_tensor sin, mt_tensor* out) {
  MT_BEGIN
  *out = mt::wrap(mt::rope(mt::T(x), mt::T(cos), mt::T(sin)));
  MT_END
}

mt_err mt_token_logprobs(mt_tensor logits, mt_tensor ids, mt_tensor* out) {
  MT_BEGIN
  at::Tensor lp = mt::T(logits).to(at::kFloat).log_softmax(-1);
  *out = mt::wrap(lp.gather(-1, mt::T(ids).unsqueeze(-1)).squeeze(-1));
  MT_END
}

}  // extern "C"
