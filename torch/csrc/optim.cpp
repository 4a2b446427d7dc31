// optim.cpp: AdamW (with float32 master weights for float16/bfloat16 parameters) and gradient-norm
// clipping over all parameters in one call each.
//
// AdamW runs libtorch's multi-tensor kernels: the fused one (at::_fused_adamw_, one kernel chain for
// all parameters of a device and dtype) where the libtorch has it on every device (2.4+: CUDA and
// CPU), the _foreach_ ops (a few multi-tensor kernels per step) otherwise; the per-parameter loop is
// kept as the reference the tests compare with and for lists the multi-tensor kernels refuse.
#include <torch/version.h>

#include <cmath>
#include <map>
#include <stdexcept>
#include <tuple>

#include "shim_internal.h"

#define MT_FUSED_ADAMW (TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4))
#define MT_FOREACH_LERP (TORCH_VERSION_MAJOR >= 2)

extern "C" {

namespace {

// The tensors AdamW updates for parameter i: the weights it computes on (the parameter itself, or
// its float32 master copy) and the moments, all of one dtype and shape. Checked before any update,
// so a bad argument leaves every parameter untouched.
void check_adamw_slot(int i, const at::Tensor& p, const at::Tensor& w, const at::Tensor& m, const at::Tensor& v) {
  const std::string who = "adamw: parameter " + std::to_string(i);
  if (w.sizes() != p.sizes()) throw std::invalid_argument(who + ": master copy has another shape");
  for (const at::Tensor* s : {&m, &v}) {
    if (s->scalar_type() != w.scalar_type() || s->sizes() != w.sizes() || s->device() != w.device()) {
      throw std::invalid_argument(who + ": moment buffers differ from the weights they update in dtype, shape or device");
    }
  }
}

struct Hyper {
  double lr, beta1, beta2, eps, weight_decay;
};

// One parameter's step, t its new step count (PyTorch's single-tensor path):
//   w *= 1 - lr*wd;  m = b1*m + (1-b1)*g;  v = b2*v + (1-b2)*g^2
//   w -= lr/(1-b1^t) * m / (sqrt(v)/sqrt(1-b2^t) + eps)
void adamw_one(at::Tensor& w, at::Tensor& m, at::Tensor& v, const at::Tensor& g, double t, bool decay, const Hyper& h) {
  double step_size = h.lr / (1.0 - std::pow(h.beta1, t));
  double bc2_sqrt = std::sqrt(1.0 - std::pow(h.beta2, t));
  if (h.weight_decay != 0 && decay) w.mul_(1.0 - h.lr * h.weight_decay);
  m.lerp_(g, 1.0 - h.beta1);
  v.mul_(h.beta2).addcmul_(g, g, 1.0 - h.beta2);
  at::Tensor denom = v.sqrt().div_(bc2_sqrt).add_(h.eps);
  w.addcdiv_(m, denom, -step_size);
}

// The parameters of one multi-tensor call: same device, dtype and weight decay.
struct Group {
  std::vector<at::Tensor> w, g, m, v;
  std::vector<double> t;  // each one's new step count
};

// The same step as adamw_one over a group, with the multi-tensor kernels.
void adamw_group(Group& gr, bool decay, const Hyper& h) {
  const double wd = decay ? h.weight_decay : 0.0;
#if MT_FUSED_ADAMW
  // The fused kernel reads each parameter's step count from a float32 tensor on its device; one
  // tensor holds them all (a single host-to-device copy), its elements are the per-parameter views.
  std::vector<float> tf(gr.t.begin(), gr.t.end());
  at::Tensor steps = at::tensor(tf, at::TensorOptions().dtype(at::kFloat)).to(gr.w[0].device());
  std::vector<at::Tensor> st = steps.unbind(0);
  at::_fused_adamw_(gr.w, gr.g, gr.m, gr.v, {}, st, h.lr, h.beta1, h.beta2, wd, h.eps, false, false);
#else
  std::vector<at::Scalar> neg_step, bc2;
  for (double t : gr.t) {
    neg_step.emplace_back(-h.lr / (1.0 - std::pow(h.beta1, t)));
    bc2.emplace_back(std::sqrt(1.0 - std::pow(h.beta2, t)));
  }
  if (wd != 0) at::_foreach_mul_(gr.w, 1.0 - h.lr * wd);
#if MT_FOREACH_LERP
  at::_foreach_lerp_(gr.m, gr.g, 1.0 - h.beta1);
#else
  at::_foreach_mul_(gr.m, h.beta1);
  at::_foreach_add_(gr.m, gr.g, 1.0 - h.beta1);
#endif
  at::_foreach_mul_(gr.v, h.beta2);
  at::_foreach_addcmul_(gr.v, gr.g, gr.g, 1.0 - h.beta2);
  std::vector<at::Tensor> denom = at::_foreach_sqrt(gr.v);
  at::_foreach_div_(denom, bc2);
  at::_foreach_add_(denom, h.eps);
  at::_foreach_addcdiv_(gr.w, gr.m, denom, neg_step);
#endif
}

}  // namespace

mt_err mt_adamw_step(mt_tensor* params, mt_tensor* masters, mt_tensor* exp_avg, mt_tensor* exp_avg_sq,
                     mt_tensor* grads, const int* decay, int64_t* steps, int n, double lr, double beta1, double beta2,
                     double eps, double weight_decay, int per_tensor) {
  MT_BEGIN
  at::NoGradGuard no_grad;
  for (int i = 0; i < n; i++) {
    if (steps[i] < 0) throw std::invalid_argument("adamw: parameter " + std::to_string(i) + " has a negative step count");
    const at::Tensor& p = mt::T(params[i]);
    check_adamw_slot(i, p, masters && masters[i] ? mt::T(masters[i]) : p, mt::T(exp_avg[i]), mt::T(exp_avg_sq[i]));
    if (grads && grads[i]) {
      const at::Tensor& g = mt::T(grads[i]);
      if (!g.sizes().equals(p.sizes()) || g.device() != p.device() || !at::isFloatingType(g.scalar_type())) {
        throw std::invalid_argument("adamw: parameter " + std::to_string(i) + ": gradient " + c10::str(g.sizes()) + " on " +
                                    g.device().str() + " for a tensor " + c10::str(p.sizes()) + " on " + p.device().str());
      }
    }
  }
  const Hyper h{lr, beta1, beta2, eps, weight_decay};
  // Groups keyed by (device, dtype, decays); the gradient in the weights' dtype (a master's
  // float32 copy of a bf16 gradient). Dense, contiguous tensors only go to the multi-tensor kernels.
  std::map<std::tuple<std::string, int, bool>, Group> groups;
  std::vector<int> stepped;
  for (int i = 0; i < n; i++) {
    at::Tensor& p = mt::T(params[i]);
    const at::Tensor g = grads ? (grads[i] ? mt::T(grads[i]) : at::Tensor()) : p.grad();
    if (!g.defined()) continue;
    const bool has_master = masters && masters[i];
    at::Tensor& w = has_master ? mt::T(masters[i]) : p;
    at::Tensor& m = mt::T(exp_avg[i]);
    at::Tensor& v = mt::T(exp_avg_sq[i]);
    const at::Tensor gw = g.scalar_type() == w.scalar_type() ? g : g.to(w.scalar_type());
    const bool dec = weight_decay != 0 && (decay == nullptr || decay[i]);
    const double t = static_cast<double>(steps[i] + 1);
    const bool dense = w.is_contiguous() && gw.is_contiguous() && m.is_contiguous() && v.is_contiguous() &&
                       !gw.is_sparse() && gw.device() == w.device();
    if (per_tensor || !dense) {
      adamw_one(w, m, v, gw, t, dec, h);
    } else {
      Group& gr = groups[{w.device().str(), static_cast<int>(w.scalar_type()), dec}];
      gr.w.push_back(w);
      gr.g.push_back(gw.is_contiguous() ? gw : gw.contiguous());
      gr.m.push_back(m);
      gr.v.push_back(v);
      gr.t.push_back(t);
    }
    stepped.push_back(i);
  }
  for (auto& kv : groups) adamw_group(kv.second, std::get<2>(kv.first), h);
  // A master is written back into its parameter, rounded to the parameter's dtype.
  for (int i : stepped) {
    if (masters && masters[i]) mt::T(params[i]).copy_(mt::T(masters[i]));
    steps[i]++;
  }
  MT_END
}

// Which multi-tensor AdamW this shim runs: 2 fused, 1 _foreach_.
int mt_adamw_kernel(void) { return MT_FUSED_ADAMW ? 2 : 1; }

mt_err mt_clip_grad_norm(mt_tensor* params, int n, double max_norm, double* total) {
  MT_BEGIN
  at::NoGradGuard no_grad;
  std::vector<at::Tensor> norms;
  std::vector<at::Tensor> grads;
  for (int i = 0; i < n; i++) {
    const at::Tensor& g = mt::T(params[i]).grad();
    if (!g.defined()) continue;
    grads.push_back(g);
    // A float16/bfloat16 gradient's norm is accumulated in float32 (in its own dtype it would keep
    // 3 digits); float32 and float64 ones in their own.
    const bool half = g.scalar_type() == at::kHalf || g.scalar_type() == at::kBFloat16;
    norms.push_back(half ? at::linalg_vector_norm(g, 2, c10::nullopt, false, at::kFloat) : g.norm(2).to(at::kFloat));
  }
  if (grads.empty()) {
    *total = 0;
    return nullptr;
  }
  // Norms may sit on several devices; gather them on the first one.
  at::Device dev = norms[0].device();
  for (auto& x : norms) x = x.to(dev);
  at::Tensor tn = at::stack(norms).norm(2);
  // As torch.nn.utils.clip_grad_norm_: scale by max_norm / (total + 1e-6), never up.
  at::Tensor coef = (max_norm / (tn + 1e-6)).clamp_max(1.0);
  for (auto& g : grads) g.mul_(coef.to(g.device(), g.scalar_type()));
  mt::note_sync(tn);
  *total = tn.item<double>();
  MT_END
}

}  // extern "C"
