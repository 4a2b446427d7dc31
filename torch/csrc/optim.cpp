// optim.cpp: AdamW and gradient-norm clipping over all parameters in one call each.
#include <cmath>
#include <stdexcept>

#include "shim_internal.h"

extern "C" {

mt_err mt_adamw_step(mt_tensor* params, mt_tensor* exp_avg, mt_tensor* exp_avg_sq, const int* decay,
                     int64_t* steps, int n, double lr, double beta1, double beta2, double eps, double weight_decay) {
  MT_BEGIN
  at::NoGradGuard no_grad;
  // PyTorch's torch.optim.AdamW (single-tensor path), t = this parameter's step count:
  //   p *= 1 - lr*wd;  m = b1*m + (1-b1)*g;  v = b2*v + (1-b2)*g^2
  //   p -= lr/(1-b1^t) * m / (sqrt(v)/sqrt(1-b2^t) + eps)
  for (int i = 0; i < n; i++) {
    at::Tensor& p = mt::T(params[i]);
    const at::Tensor& g = p.grad();
    if (!g.defined()) continue;
    if (steps[i] < 0) throw std::invalid_argument("adamw: parameter " + std::to_string(i) + " has a negative step count");
    at::Tensor& m = mt::T(exp_avg[i]);
    at::Tensor& v = mt::T(exp_avg_sq[i]);
    double t = static_cast<double>(steps[i] + 1);
    double step_size = lr / (1.0 - std::pow(beta1, t));
    double bc2_sqrt = std::sqrt(1.0 - std::pow(beta2, t));
    if (weight_decay != 0 && (decay == nullptr || decay[i])) p.mul_(1.0 - lr * weight_decay);
    m.lerp_(g, 1.0 - beta1);
    v.mul_(beta2).addcmul_(g, g, 1.0 - beta2);
    at::Tensor denom = (v.sqrt() / bc2_sqrt).add_(eps);
    p.addcdiv_(m, denom, -step_size);
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
    norms.push_back(g.norm(2).to(at::kFloat));
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
