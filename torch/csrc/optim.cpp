// optim.cpp: AdamW (with float32 master weights for float16/bfloat16 parameters) and gradient-norm
// clipping over all parameters in one call each.
#include <cmath>
#include <stdexcept>

#include "shim_internal.h"

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

}  // namespace

mt_err mt_adamw_step(mt_tensor* params, mt_tensor* masters, mt_tensor* exp_avg, mt_tensor* exp_avg_sq,
                     const int* decay, int64_t* steps, int n, double lr, double beta1, double beta2, double eps,
                     double weight_decay) {
  MT_BEGIN
  at::NoGradGuard no_grad;
  for (int i = 0; i < n; i++) {
    if (steps[i] < 0) throw std::invalid_argument("adamw: parameter " + std::to_string(i) + " has a negative step count");
    const at::Tensor& p = mt::T(params[i]);
    check_adamw_slot(i, p, masters && masters[i] ? mt::T(masters[i]) : p, mt::T(exp_avg[i]), mt::T(exp_avg_sq[i]));
  }
  // PyTorch's torch.optim.AdamW (single-tensor path), t = this parameter's step count, w = the
  // parameter or its float32 master, g = the gradient in w's dtype:
  //   w *= 1 - lr*wd;  m = b1*m + (1-b1)*g;  v = b2*v + (1-b2)*g^2
  //   w -= lr/(1-b1^t) * m / (sqrt(v)/sqrt(1-b2^t) + eps)
  // then a master is written back into the parameter, rounded to its dtype.
  for (int i = 0; i < n; i++) {
    at::Tensor& p = mt::T(params[i]);
    const at::Tensor& g = p.grad();
    if (!g.defined()) continue;
    const bool has_master = masters && masters[i];
    at::Tensor& w = has_master ? mt::T(masters[i]) : p;
    at::Tensor& m = mt::T(exp_avg[i]);
    at::Tensor& v = mt::T(exp_avg_sq[i]);
    const at::Tensor gw = g.scalar_type() == w.scalar_type() ? g : g.to(w.scalar_type());
    double t = static_cast<double>(steps[i] + 1);
    double step_size = lr / (1.0 - std::pow(beta1, t));
    double bc2_sqrt = std::sqrt(1.0 - std::pow(beta2, t));
    if (weight_decay != 0 && (decay == nullptr || decay[i])) w.mul_(1.0 - lr * weight_decay);
    m.lerp_(gw, 1.0 - beta1);
    v.mul_(beta2).addcmul_(gw, gw, 1.0 - beta2);
    at::Tensor denom = v.sqrt().div_(bc2_sqrt).add_(eps);
    w.addcdiv_(m, denom, -step_size);
    if (has_master) p.copy_(w);
    steps[i]++;
  }
  MT_END
}

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
  *total = tn.item<double>();
  MT_END
}

}  // extern "C"
