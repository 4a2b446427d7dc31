// autograd.cpp: requires_grad, backward, autograd.grad, and grad-mode guards held across calls.
#include <torch/csrc/autograd/autograd.h>

#include <stdexcept>

#include "shim_internal.h"

namespace {
// Guards live on the heap so Go can open one in a call and close it in a later call. Their
// destructors restore the previous thread-local mode, so they must be freed in reverse order.
struct Guard {
  virtual ~Guard() = default;
};
struct NoGrad : Guard {
  at::NoGradGuard g;
};
struct EnableGrad : Guard {
  at::AutoGradMode g{true};
};
struct Inference : Guard {
  c10::InferenceMode g;
};

std::vector<at::Tensor> grads_or_empty(mt_tensor* grads, int n) {
  if (grads == nullptr) return {};
  return mt::list(grads, n);
}
}  // namespace

extern "C" {

mt_err mt_set_requires_grad(mt_tensor t, int on) {
  MT_BEGIN
  mt::T(t).set_requires_grad(on != 0);
  MT_END
}

mt_err mt_grad(mt_tensor t, mt_tensor* out) {
  MT_BEGIN
  const at::Tensor& g = mt::T(t).grad();
  *out = g.defined() ? mt::wrap(g) : nullptr;
  MT_END
}

mt_err mt_zero_grad(mt_tensor* ts, int n, int set_to_none) {
  MT_BEGIN
  for (int i = 0; i < n; i++) {
    at::Tensor& g = mt::T(ts[i]).mutable_grad();
    if (!g.defined()) continue;
    if (set_to_none) {
      g.reset();
    } else {
      g = g.detach();
      g.zero_();
    }
  }
  MT_END
}

mt_err mt_detach(mt_tensor t, int inplace, mt_tensor* out) {
  MT_BEGIN
  if (inplace) {
    mt::T(t).detach_();
  } else {
    *out = mt::wrap(mt::T(t).detach());
  }
  MT_END
}

mt_err mt_backward(mt_tensor* ts, int n, mt_tensor* grads, mt_tensor* inputs, int ninputs, int retain_graph,
                   int create_graph) {
  MT_BEGIN
  c10::optional<bool> retain;
  if (retain_graph) retain = true;
  torch::autograd::backward(mt::list(ts, n), grads_or_empty(grads, n), retain, create_graph != 0,
                            mt::list(inputs, ninputs));
  MT_END
}

mt_err mt_autograd_grad(mt_tensor* ts, int n, mt_tensor* grads, mt_tensor* inputs, int ninputs, int retain_graph,
                        int create_graph, int allow_unused, mt_tensor* outs) {
  MT_BEGIN
  c10::optional<bool> retain;
  if (retain_graph) retain = true;
  auto gs = torch::autograd::grad(mt::list(ts, n), mt::list(inputs, ninputs), grads_or_empty(grads, n), retain,
                                  create_graph != 0, allow_unused != 0);
  for (size_t i = 0; i < gs.size(); i++) outs[i] = gs[i].defined() ? mt::wrap(gs[i]) : nullptr;
  MT_END
}

mt_err mt_guard_new(int kind, mt_guard* out) {
  MT_BEGIN
  Guard* g = nullptr;
  switch (kind) {
    case MT_GUARD_NO_GRAD: g = new NoGrad(); break;
    case MT_GUARD_ENABLE_GRAD: g = new EnableGrad(); break;
    case MT_GUARD_INFERENCE: g = new Inference(); break;
    default: throw std::invalid_argument("unknown guard kind " + std::to_string(kind));
  }
  *out = reinterpret_cast<mt_guard>(g);
  MT_END
}

mt_err mt_guard_free(mt_guard g) {
  MT_BEGIN
  delete reinterpret_cast<Guard*>(g);
  MT_END
}

mt_err mt_grad_enabled(int* out) {
  MT_BEGIN
  *out = at::GradMode::is_enabled() ? 1 : 0;
  MT_END
}

}  // extern "C"
