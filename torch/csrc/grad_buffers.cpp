// grad_buffers.cpp: persistent flat gradient buffers for one process (torch.GradBuffers).
//
// The gradients of a fixed list of parameters live in flat buffers, one per device and dtype,
// allocated once: each parameter's .grad is a view of its region, so backward accumulates into
// the buffers in place (AccumulateGrad adds into a defined gradient instead of keeping a fresh
// one), zeroing is one fill per buffer, and the norm, the clipping and the float32 copy that
// AdamW's masters need run over a few flat tensors instead of one per parameter.
//
// Each view has a version counter of its own (variable_data: shared with neither the buffer nor
// the other views), so the buffers tell which parameters backward reached since the last zero:
// settle drops the gradient of a parameter it did not reach, which is then exactly as without
// buffers (no gradient: clipping ignores it, AdamW leaves it and its step count alone). A
// gradient that someone replaced (set to none, then a fresh one from backward) is copied into
// its region and the view put back.
#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "shim_internal.h"

struct mt_gradbuf_s {
  std::vector<at::Tensor> params;  // those that require grad, in the caller's order
  std::vector<at::Tensor> bufs;    // flat, one per (device, dtype)
  std::vector<int> buf_of;         // parameter → buffer
  std::vector<int64_t> offset;     // its first element in the buffer
  std::vector<at::Tensor> views;   // its region, shaped as it, with its own version counter
  std::vector<uint32_t> version;   // the view's version at the last zero
  std::vector<char> reached;       // settle: backward reached it since the last zero
  int64_t bytes = 0;

  bool attached(size_t i) const {
    const at::Tensor& g = params[i].grad();
    return g.defined() && g.unsafeGetTensorImpl() == views[i].unsafeGetTensorImpl();
  }

  void zero() {
    for (auto& b : bufs) b.zero_();
    for (size_t i = 0; i < params.size(); i++) {
      if (!attached(i)) params[i].mutable_grad() = views[i];
      version[i] = views[i]._version();
      reached[i] = 0;
    }
  }

  void settle() {
    for (size_t i = 0; i < params.size(); i++) {
      const at::Tensor g = params[i].grad();
      if (attached(i)) {
        if (views[i]._version() != version[i]) reached[i] = 1;
      } else if (g.defined()) {
        views[i].copy_(g);
        params[i].mutable_grad() = views[i];
        version[i] = views[i]._version();
        reached[i] = 1;
      }
      if (!reached[i]) params[i].mutable_grad().reset();
    }
  }
};

namespace {

mt_gradbuf_s& G(mt_gradbuf h) {
  if (h == nullptr) throw std::invalid_argument("nil gradient buffers");
  return *h;
}

bool half(at::ScalarType t) { return t == at::kHalf || t == at::kBFloat16; }

// The squared L2 norm of a flat buffer, as a float64 scalar. A float32 reduction over millions of
// elements loses digits on the CPU (1e-5 relative at 10^6 elements on libtorch 1.13, against
// 5e-8 at 10^3), so the buffer is reduced in rows of kRow elements in float32 and the rows'
// squares are summed in float64; a 16-bit buffer is cast to float32 kSlice elements at a time,
// so that no float32 copy of the whole buffer exists.
at::Tensor sum_squares(const at::Tensor& g) {
  constexpr int64_t kRow = 4096, kSlice = int64_t{1} << 24;
  const int64_t n = g.numel();
  std::vector<at::Tensor> parts;
  for (int64_t lo = 0; lo < n; lo += kSlice) {
    at::Tensor s = g.narrow(0, lo, std::min(kSlice, n - lo));
    if (half(s.scalar_type())) s = s.to(at::kFloat);
    const int64_t full = s.numel() / kRow * kRow;
    if (full > 0) parts.push_back(at::linalg_vector_norm(s.narrow(0, 0, full).view({-1, kRow}), 2, at::IntArrayRef{1}, false, c10::nullopt));
    if (full < s.numel()) parts.push_back(at::linalg_vector_norm(s.narrow(0, full, s.numel() - full), 2, c10::nullopt, false, c10::nullopt).reshape({1}));
  }
  if (parts.empty()) return at::zeros({}, g.options().dtype(at::kDouble));
  return at::cat(parts).to(at::kDouble).square().sum();
}

}  // namespace

extern "C" {

mt_err mt_gradbuf_new(mt_tensor* params, int n, mt_gradbuf* out) {
  MT_BEGIN
  at::NoGradGuard no_grad;
  auto b = std::make_unique<mt_gradbuf_s>();
  std::map<std::tuple<std::string, int>, int> index;  // (device, dtype) → buffer
  std::vector<int64_t> fill;
  for (int i = 0; i < n; i++) {
    at::Tensor& w = mt::T(params[i]);
    if (!w.requires_grad()) continue;
    if (!at::isFloatingType(w.scalar_type())) throw std::invalid_argument("parameter " + std::to_string(i) + " is not floating-point");
    if (!w.is_leaf()) throw std::invalid_argument("parameter " + std::to_string(i) + " is not a leaf tensor");
    for (const auto& p : b->params) {
      if (p.unsafeGetTensorImpl() == w.unsafeGetTensorImpl()) throw std::invalid_argument("parameter " + std::to_string(i) + " is listed twice");
    }
    auto key = std::make_tuple(w.device().str(), static_cast<int>(w.scalar_type()));
    auto it = index.find(key);
    if (it == index.end()) {
      it = index.emplace(key, static_cast<int>(fill.size())).first;
      fill.push_back(0);
    }
    b->params.push_back(w);
    b->buf_of.push_back(it->second);
    b->offset.push_back(fill[it->second]);
    fill[it->second] += w.numel();
  }
  b->bufs.resize(fill.size());
  for (size_t i = 0; i < b->params.size(); i++) {
    at::Tensor& buf = b->bufs[b->buf_of[i]];
    if (!buf.defined()) {
      const at::Tensor& w = b->params[i];
      buf = at::zeros({fill[b->buf_of[i]]}, w.options().requires_grad(false));
      b->bytes += buf.numel() * static_cast<int64_t>(buf.element_size());
    }
  }
  for (size_t i = 0; i < b->params.size(); i++) {
    const at::Tensor& w = b->params[i];
    at::Tensor v = b->bufs[b->buf_of[i]].narrow(0, b->offset[i], w.numel()).view(w.sizes()).variable_data();
    if (w.grad().defined()) v.copy_(w.grad());  // gradients made before the buffers are kept
    b->views.push_back(v);
  }
  b->version.assign(b->params.size(), 0);
  b->reached.assign(b->params.size(), 0);
  std::vector<char> had(b->params.size());
  for (size_t i = 0; i < b->params.size(); i++) had[i] = b->params[i].grad().defined();
  for (size_t i = 0; i < b->params.size(); i++) {
    b->params[i].mutable_grad() = b->views[i];
    b->version[i] = b->views[i]._version();
    b->reached[i] = had[i];
  }
  *out = b.release();
  MT_END
}

mt_err mt_gradbuf_info(mt_gradbuf h, int* nparams, int* nbufs, int64_t* bytes) {
  MT_BEGIN
  auto& b = G(h);
  *nparams = static_cast<int>(b.params.size());
  *nbufs = static_cast<int>(b.bufs.size());
  *bytes = b.bytes;
  MT_END
}

mt_err mt_gradbuf_zero(mt_gradbuf h) {
  MT_BEGIN
  at::NoGradGuard no_grad;
  G(h).zero();
  MT_END
}

mt_err mt_gradbuf_settle(mt_gradbuf h, int* reached) {
  MT_BEGIN
  at::NoGradGuard no_grad;
  auto& b = G(h);
  b.settle();
  if (reached != nullptr) {
    for (size_t i = 0; i < b.params.size(); i++) reached[i] = b.reached[i];
  }
  MT_END
}

mt_err mt_gradbuf_clip(mt_gradbuf h, double max_norm, double* total) {
  MT_BEGIN
  at::NoGradGuard no_grad;
  auto& b = G(h);
  b.settle();
  bool any = false;
  for (char r : b.reached) any = any || r;
  if (!any) {
    *total = 0;
    return nullptr;
  }
  // As mt_clip_grad_norm, over the buffers (a region backward did not reach holds zeros).
  at::Tensor sq;
  for (const auto& g : b.bufs) {
    at::Tensor x = sum_squares(g).to(b.bufs[0].device());
    sq = sq.defined() ? sq.add(x) : x;
  }
  at::Tensor tn = sq.sqrt().to(at::kFloat);
  // Without a bound (max_norm infinite) the factor is 1 for a finite norm and the step is skipped
  // for another: the pass over the gradients is saved.
  if (std::isfinite(max_norm)) {
    at::Tensor coef = (max_norm / (tn + 1e-6)).clamp_max(1.0);
    for (auto& g : b.bufs) g.mul_(coef.to(g.device(), g.scalar_type()));
  }
  mt::note_sync(tn);
  *total = tn.item<double>();
  MT_END
}

mt_err mt_gradbuf_step_grads(mt_gradbuf h, mt_tensor* out) {
  MT_BEGIN
  at::NoGradGuard no_grad;
  auto& b = G(h);
  std::vector<at::Tensor> f32(b.bufs.size());
  for (size_t k = 0; k < b.bufs.size(); k++) {
    if (half(b.bufs[k].scalar_type())) f32[k] = b.bufs[k].to(at::kFloat);
  }
  for (size_t i = 0; i < b.params.size(); i++) {
    if (!b.reached[i] || !b.attached(i)) {
      out[i] = nullptr;
      continue;
    }
    const at::Tensor& src = f32[b.buf_of[i]];
    out[i] = mt::wrap(src.defined() ? src.narrow(0, b.offset[i], b.params[i].numel()).view(b.params[i].sizes()) : b.views[i]);
  }
  MT_END
}

mt_err mt_gradbuf_free(mt_gradbuf h) {
  MT_BEGIN
  if (h == nullptr) return nullptr;
  at::NoGradGuard no_grad;
  // The gradients go with the buffers (as after a step: none).
  for (size_t i = 0; i < h->params.size(); i++) {
    if (h->attached(i)) h->params[i].mutable_grad().reset();
  }
  delete h;
  MT_END
}

}  // extern "C"
