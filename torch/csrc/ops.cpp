// ops.cpp: elementwise math, comparisons, reductions, matmul, sorting.
#include <algorithm>
#include <stdexcept>

#include "shim_internal.h"

namespace {

at::Tensor unary(int op, const at::Tensor& a) {
  switch (op) {
    case MT_NEG: return a.neg();
    case MT_EXP: return a.exp();
    case MT_LOG: return a.log();
    case MT_SQRT: return a.sqrt();
    case MT_RSQRT: return a.rsqrt();
    case MT_TANH: return a.tanh();
    case MT_SIGMOID: return a.sigmoid();
    case MT_SILU: return at::silu(a);
    case MT_ABS: return a.abs();
    case MT_RELU: return a.relu();
    case MT_GELU: return at::gelu(a);
    case MT_GELU_TANH: return at::gelu(a, "tanh");
    case MT_NOT: return a.logical_not();
    case MT_SIN: return a.sin();
    case MT_COS: return a.cos();
    case MT_RECIPROCAL: return a.reciprocal();
    case MT_SQUARE: return a.square();
    case MT_ISNAN: return a.isnan();
    case MT_ISFINITE: return a.isfinite();
    case MT_LOG1P: return a.log1p();
  }
  throw std::invalid_argument("unknown unary op " + std::to_string(op));
}

at::Tensor binary(int op, const at::Tensor& a, const at::Tensor& b) {
  switch (op) {
    case MT_ADD: return a.add(b);
    case MT_SUB: return a.sub(b);
    case MT_MUL: return a.mul(b);
    case MT_DIV: return a.div(b);
    case MT_POW: return a.pow(b);
    case MT_EQ: return a.eq(b);
    case MT_NE: return a.ne(b);
    case MT_LT: return a.lt(b);
    case MT_LE: return a.le(b);
    case MT_GT: return a.gt(b);
    case MT_GE: return a.ge(b);
    case MT_MAXIMUM: return at::maximum(a, b);
    case MT_MINIMUM: return at::minimum(a, b);
    case MT_AND: return a.logical_and(b);
    case MT_OR: return a.logical_or(b);
    case MT_RSUB: return b.sub(a);
  }
  throw std::invalid_argument("unknown binary op " + std::to_string(op));
}

void binary_(int op, at::Tensor& a, const at::Tensor& b) {
  switch (op) {
    case MT_ADD: a.add_(b); return;
    case MT_SUB: a.sub_(b); return;
    case MT_MUL: a.mul_(b); return;
    case MT_DIV: a.div_(b); return;
  }
  throw std::invalid_argument("op has no in-place form");
}

at::Tensor binary_scalar(int op, const at::Tensor& a, const at::Scalar& s) {
  switch (op) {
    case MT_ADD: return a.add(s);
    case MT_SUB: return a.sub(s);
    case MT_MUL: return a.mul(s);
    case MT_DIV: return a.div(s);
    case MT_POW: return a.pow(s);
    case MT_EQ: return a.eq(s);
    case MT_NE: return a.ne(s);
    case MT_LT: return a.lt(s);
    case MT_LE: return a.le(s);
    case MT_GT: return a.gt(s);
    case MT_GE: return a.ge(s);
    case MT_MAXIMUM: return a.clamp_min(s);
    case MT_MINIMUM: return a.clamp_max(s);
    case MT_RSUB: return at::rsub(a, s);
  }
  throw std::invalid_argument("op has no scalar form");
}

void binary_scalar_(int op, at::Tensor& a, const at::Scalar& s) {
  switch (op) {
    case MT_ADD: a.add_(s); return;
    case MT_SUB: a.sub_(s); return;
    case MT_MUL: a.mul_(s); return;
    case MT_DIV: a.div_(s); return;
  }
  throw std::invalid_argument("op has no in-place form");
}

// any/all take one dimension at a time in libtorch 1.13: reduce the highest dimension first so the
// remaining indices stay valid.
at::Tensor any_all(bool any, const at::Tensor& a, std::vector<int64_t> d, bool keepdim) {
  if (d.empty()) return any ? a.any() : a.all();
  for (auto& x : d) x = c10::maybe_wrap_dim(x, a.dim());
  std::sort(d.rbegin(), d.rend());
  at::Tensor t = a;
  for (int64_t x : d) t = any ? t.any(x, keepdim) : t.all(x, keepdim);
  return t;
}

at::Tensor reduce(int op, const at::Tensor& a, at::IntArrayRef d, bool keepdim) {
  std::vector<int64_t> all;
  if (d.empty() && op != MT_ANY && op != MT_ALL) {
    for (int64_t i = 0; i < a.dim(); i++) all.push_back(i);
    d = all;
  }
  switch (op) {
    case MT_SUM: return a.sum(d, keepdim);
    case MT_MEAN: return a.mean(d, keepdim);
    case MT_AMAX: return a.amax(d, keepdim);
    case MT_AMIN: return a.amin(d, keepdim);
    case MT_LOGSUMEXP: return a.logsumexp(d, keepdim);
    case MT_ANY: return any_all(true, a, d.vec(), keepdim);
    case MT_ALL: return any_all(false, a, d.vec(), keepdim);
  }
  throw std::invalid_argument("unknown reduction " + std::to_string(op));
}

}  // namespace

extern "C" {

mt_err mt_unary(int op, mt_tensor a, mt_tensor* out) {
  MT_BEGIN
  *out = mt::wrap(unary(op, mt::T(a)));
  MT_END
}

mt_err mt_binary(int op, mt_tensor a, mt_tensor b, mt_tensor* out) {
  MT_BEGIN
  if (out == nullptr) {
    binary_(op, mt::T(a), mt::T(b));
  } else {
    *out = mt::wrap(binary(op, mt::T(a), mt::T(b)));
  }
  MT_END
}

mt_err mt_binary_scalar(int op, mt_tensor a, double s, mt_tensor* out) {
  MT_BEGIN
  at::Tensor& t = mt::T(a);
  at::Scalar sc = mt::scalar_for(t, s);
  if (out == nullptr) {
    binary_scalar_(op, t, sc);
  } else {
    *out = mt::wrap(binary_scalar(op, t, sc));
  }
  MT_END
}

mt_err mt_reduce(int op, mt_tensor a, const int64_t* dims, int ndims, int keepdim, mt_tensor* out) {
  MT_BEGIN
  *out = mt::wrap(reduce(op, mt::T(a), mt::dims(dims, ndims), keepdim != 0));
  MT_END
}

mt_err mt_argmax(mt_tensor a, int64_t dim, int keepdim, mt_tensor* out) {
  MT_BEGIN
  *out = mt::wrap(mt::T(a).argmax(dim, keepdim != 0));
  MT_END
}

mt_err mt_max_dim(mt_tensor a, int64_t dim, int keepdim, int min, mt_tensor* values, mt_tensor* indices) {
  MT_BEGIN
  auto r = min ? mt::T(a).min(dim, keepdim != 0) : mt::T(a).max(dim, keepdim != 0);
  *values = mt::wrap(std::get<0>(r));
  *indices = mt::wrap(std::get<1>(r));
  MT_END
}

mt_err mt_cumsum(mt_tensor a, int64_t dim, mt_tensor* out) {
  MT_BEGIN
  *out = mt::wrap(mt::T(a).cumsum(dim));
  MT_END
}

mt_err mt_softmax(mt_tensor a, int64_t dim, int log, int dtype, mt_tensor* out) {
  MT_BEGIN
  c10::optional<at::ScalarType> dt;
  if (dtype >= 0) dt = mt::dtype(dtype);
  *out = mt::wrap(log ? mt::T(a).log_softmax(dim, dt) : mt::T(a).softmax(dim, dt));
  MT_END
}

mt_err mt_where(mt_tensor cond, mt_tensor a, mt_tensor b, mt_tensor* out) {
  MT_BEGIN
  *out = mt::wrap(at::where(mt::T(cond), mt::T(a), mt::T(b)));
  MT_END
}

mt_err mt_masked_fill(mt_tensor a, mt_tensor mask, double value, mt_tensor* out) {
  MT_BEGIN
  at::Tensor& t = mt::T(a);
  if (out == nullptr) {
    t.masked_fill_(mt::T(mask), mt::scalar_for(t, value));
  } else {
    *out = mt::wrap(t.masked_fill(mt::T(mask), mt::scalar_for(t, value)));
  }
  MT_END
}

mt_err mt_clamp(mt_tensor a, int has_min, double min, int has_max, double max, mt_tensor* out) {
  MT_BEGIN
  const at::Tensor& t = mt::T(a);
  c10::optional<at::Scalar> lo, hi;
  if (has_min) lo = mt::scalar_for(t, min);
  if (has_max) hi = mt::scalar_for(t, max);
  *out = mt::wrap(t.clamp(lo, hi));
  MT_END
}

mt_err mt_matmul(mt_tensor a, mt_tensor b, mt_tensor* out) {
  MT_BEGIN
  *out = mt::wrap(at::matmul(mt::T(a), mt::T(b)));
  MT_END
}

mt_err mt_linear(mt_tensor x, mt_tensor w, mt_tensor bias, mt_tensor* out) {
  MT_BEGIN
  *out = mt::wrap(mt::linear(mt::T(x), mt::T(w), mt::opt(bias)));
  MT_END
}

mt_err mt_topk(mt_tensor a, int64_t k, int64_t dim, int largest, mt_tensor* values, mt_tensor* indices) {
  MT_BEGIN
  auto r = mt::T(a).topk(k, dim, largest != 0, /*sorted=*/true);
  *values = mt::wrap(std::get<0>(r));
  *indices = mt::wrap(std::get<1>(r));
  MT_END
}

mt_err mt_sort(mt_tensor a, int64_t dim, int descending, mt_tensor* values, mt_tensor* indices) {
  MT_BEGIN
  auto r = mt::T(a).sort(/*stable=*/true, dim, descending != 0);
  *values = mt::wrap(std::get<0>(r));
  *indices = mt::wrap(std::get<1>(r));
  MT_END
}

mt_err mt_tri(mt_tensor a, int64_t diagonal, int upper, mt_tensor* out) {
  MT_BEGIN
  *out = mt::wrap(upper ? mt::T(a).triu(diagonal) : mt::T(a).tril(diagonal));
  MT_END
}

}  // extern "C"
