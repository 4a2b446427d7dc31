// sample.cpp: one token per row of logits, drawn on the device from per-row settings (the rollout
// engine's sampler; its semantics and their sources are stated in rollout/sampler.go). One call
// instead of a crossing per op, and the same code inside the static decode step (decode.cpp), so
// that a step replayed from a CUDA graph draws exactly what an eager step draws.
#include <stdexcept>

#include "shim_internal.h"

namespace {

// The column c of the [rows, MT_SP_COLS] settings, [rows, 1].
at::Tensor col(const at::Tensor& p, int64_t c) { return p.narrow(1, c, 1); }

at::Tensor greedy_rows(const at::Tensor& logits) {
  at::Tensor id = logits.argmax(1, true);
  at::Tensor lse = logits.logsumexp({1}, true);
  at::Tensor lp_t = logits.gather(1, id).sub(lse);
  return at::cat({id.to(at::kDouble), at::zeros_like(lp_t).to(at::kDouble), lp_t.to(at::kDouble), lse.to(at::kDouble)},
                 1);
}

at::Tensor general_rows(const at::Tensor& logits, const at::Tensor& prm, bool sort, bool minp) {
  const int64_t V = logits.size(1);
  at::Tensor logp = logits.div(col(prm, MT_SP_TEMP)).log_softmax(1);
  at::Tensor p = logp.exp();
  // w: the kept probabilities (unnormalised), in sorted order when top-k/top-p need it; order maps
  // a position of w back to a token id (undefined: w is in vocabulary order).
  at::Tensor w, order;
  if (sort) {
    auto sorted = p.sort(/*stable=*/true, 1, /*descending=*/true);
    at::Tensor sp = std::get<0>(sorted);
    // top-k keeps every token at least as likely as the k-th, ties included.
    at::Tensor kth = sp.gather(1, col(prm, MT_SP_TOPK).sub(1).to(at::kLong));
    at::Tensor keep = sp.ge(kth);
    at::Tensor spk = sp.mul(keep.to(at::kFloat));
    // top-p: a token stays while the mass strictly before it is below p of the top-k mass.
    at::Tensor before = spk.cumsum(1).sub(spk);
    keep = keep.logical_and(before.lt(col(prm, MT_SP_TOPP).mul(spk.sum({1}, true))));
    if (minp) keep = keep.logical_and(sp.ge(col(prm, MT_SP_MINP).mul(sp.narrow(1, 0, 1))));
    w = sp.mul(keep.to(at::kFloat));
    order = std::get<1>(sorted);
  } else if (minp) {
    at::Tensor keep = p.ge(col(prm, MT_SP_MINP).mul(p.amax({1}, true)));
    w = p.mul(keep.to(at::kFloat));
  } else {
    w = p;  // no truncation: the RL default, and the fewest passes over [rows, vocab]
  }
  // Inverse CDF: the first position whose running mass exceeds u * total; the mode when rounding
  // leaves none (u within float error of 1).
  at::Tensor cum = w.cumsum(1);
  at::Tensor total = cum.narrow(1, V - 1, 1);
  at::Tensor cond = cum.gt(col(prm, MT_SP_U).mul(total));
  at::Tensor pick = at::where(cond.any(1, true), cond.to(at::kFloat).argmax(1, true), w.argmax(1, true));
  at::Tensor lp = w.gather(1, pick).log().sub(total.log());
  at::Tensor id = order.defined() ? order.gather(1, pick) : pick;
  at::Tensor greedy = col(prm, MT_SP_GREEDY).gt(0.5);
  id = at::where(greedy, logits.argmax(1, true), id);
  lp = lp.masked_fill(greedy, 0);
  at::Tensor lp_t = logp.gather(1, id);
  return at::cat({id.to(at::kDouble), lp.to(at::kDouble), lp_t.to(at::kDouble), total.to(at::kDouble)}, 1);
}

}  // namespace

namespace mt {

at::Tensor sample(const at::Tensor& logits, const at::Tensor& params, int mode) {
  if (logits.dim() != 2 || logits.scalar_type() != at::kFloat) {
    throw std::invalid_argument("sample: logits must be float32 [rows, vocab], got " + c10::str(logits.sizes()) + " " +
                                c10::toString(logits.scalar_type()));
  }
  if (params.dim() != 2 || params.size(0) != logits.size(0) || params.size(1) != MT_SP_COLS ||
      params.scalar_type() != at::kFloat) {
    throw std::invalid_argument("sample: settings must be float32 [" + std::to_string(logits.size(0)) + ", " +
                                std::to_string(MT_SP_COLS) + "], got " + c10::str(params.sizes()) + " " +
                                c10::toString(params.scalar_type()));
  }
  if (mode & ~(MT_SAMPLE_GREEDY | MT_SAMPLE_SORT | MT_SAMPLE_MINP)) {
    throw std::invalid_argument("sample: unknown mode " + std::to_string(mode));
  }
  at::NoGradGuard no_grad;
  if (mode & MT_SAMPLE_GREEDY) return greedy_rows(logits);
  return general_rows(logits, params, (mode & MT_SAMPLE_SORT) != 0, (mode & MT_SAMPLE_MINP) != 0);
}

}  // namespace mt

extern "C" {

mt_err mt_sample(mt_tensor logits, mt_tensor params, int mode, mt_tensor* out) {
  MT_BEGIN
  *out = mt::wrap(mt::sample(mt::T(logits), mt::T(params), mode));
  MT_END
}

}  // extern "C"
