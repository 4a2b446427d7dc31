// dist_buckets.cpp: persistent gradient buckets for data-parallel training (see dist.h), with an
// optional overlap of their all-reduces with the backward pass, as DDP's Reducer does.
//
// The buckets are laid out once, from the last parameter to the first: backward produces
// gradients in roughly that order (the head first, the embedding last), so the first buckets fill
// first. Each bucket is a flat buffer of one dtype (the gradients', but float32 for bfloat16 over
// Gloo), allocated once and reused every step.
//
// Overlap: when armed, a post-hook on each parameter's gradient accumulator marks it ready after
// its gradient was accumulated; once a bucket and every bucket before it are ready, their
// all-reduces start (asynchronously: c10d works) while backward goes on. Launches follow bucket
// order on every rank, so the collectives match across ranks whatever each rank computed. A rank
// whose hooks never fired (it had nothing to backpropagate) starts them all, in the same order,
// in mt_dist_buckets_allreduce. A parameter whose gradient is accumulated again after its bucket
// was sent (a second backward call through it in the same armed pass) makes the overlapped result
// stale: every rank then learns of it through one small all-reduce and the buckets are reduced
// again without overlap, so the result is always the plain sum.
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "dist.h"
#include "dist_internal.h"
#include "shim_internal.h"

namespace {

struct Bucket {
  at::Tensor buf;                       // flat, allocated once
  std::vector<size_t> params;           // indices into mt_buckets_s::params, in bucket order
  std::vector<int64_t> offsets;         // where each starts in buf
  int pending = 0;                      // parameters not yet ready in the armed pass
  c10::intrusive_ptr<c10d::Work> work;  // the all-reduce in flight, if started
};

}  // namespace

struct mt_buckets_s {
  mt::DistRef pg;
  std::vector<at::Tensor> params;  // the parameters that require grad, in the caller's order
  std::vector<int> bucket_of;      // parameter → bucket
  std::vector<Bucket> buckets;
  int64_t bytes = 0;
  // Overlap state, guarded by mu (hooks run on autograd threads: the caller's on the CPU, the
  // device threads on CUDA).
  std::mutex mu;
  bool hooked = false;
  bool armed = false;
  bool stale = false;  // a gradient changed after its bucket was sent
  size_t next = 0;     // the first bucket not yet started
  std::vector<char> ready;
  std::vector<std::shared_ptr<torch::autograd::Node>> accs;  // kept alive: a hook lives on its node
  std::vector<uintptr_t> keys;

  ~mt_buckets_s() {
    for (size_t i = 0; i < accs.size(); i++) accs[i]->del_post_hook(keys[i]);
  }

  // Copies bucket k's gradients in (zeros for a parameter without one).
  void fill(Bucket& b) {
    for (size_t j = 0; j < b.params.size(); j++) {
      const at::Tensor& g = params[b.params[j]].grad();
      at::Tensor dst = b.buf.narrow(0, b.offsets[j], params[b.params[j]].numel());
      if (g.defined()) {
        dst.copy_(g.reshape({-1}));
      } else {
        dst.zero_();
      }
    }
  }

  void start(Bucket& b) {
    fill(b);
    std::vector<at::Tensor> ts{b.buf};
    b.work = pg.pg->allreduce(ts, c10d::AllreduceOptions());
  }

  // Starts the ready buckets from next on, in order (under mu).
  void start_ready() {
    while (next < buckets.size() && buckets[next].pending == 0) start(buckets[next++]);
  }

  // Parameter i's gradient was accumulated (a hook; under no lock).
  void on_ready(size_t i) {
    std::lock_guard<std::mutex> l(mu);
    if (!armed) return;
    Bucket& b = buckets[bucket_of[i]];
    if (ready[i]) {
      if (b.work) stale = true;
      return;
    }
    ready[i] = 1;
    b.pending--;
    start_ready();
  }

  void reset() {
    armed = false;
    stale = false;
    next = 0;
    std::fill(ready.begin(), ready.end(), 0);
    for (auto& b : buckets) {
      b.pending = static_cast<int>(b.params.size());
      b.work.reset();
    }
  }
};

namespace {

struct ReadyHook : torch::autograd::FunctionPostHook {
  mt_buckets_s* b;
  size_t i;
  ReadyHook(mt_buckets_s* b, size_t i) : b(b), i(i) {}
  torch::autograd::variable_list operator()(const torch::autograd::variable_list& outputs,
                                            const torch::autograd::variable_list& /*inputs*/) override {
    b->on_ready(i);
    return outputs;
  }
};

// The dtype a parameter's gradient travels in: its own, except bfloat16 over Gloo, which cannot
// reduce it (float32 then: exact for the values, twice the bytes; Gloo runs are CPU tests).
at::ScalarType wire_dtype(const mt::DistRef& pg, const at::Tensor& w) {
  if (pg.backend == "gloo" && w.scalar_type() == at::kBFloat16) return at::kFloat;
  return w.scalar_type();
}

mt_buckets_s& B(mt_buckets h) {
  if (h == nullptr) throw std::invalid_argument("nil gradient buckets");
  return *h;
}

}  // namespace

extern "C" {

mt_err mt_dist_buckets_new(mt_pg h, mt_tensor* params, int n, int64_t bucket_bytes, mt_buckets* out) {
  MT_BEGIN
  if (bucket_bytes <= 0) throw std::invalid_argument("bucket size must be positive");
  auto b = std::make_unique<mt_buckets_s>();
  b->pg = mt::dist_ref(h);
  for (int i = 0; i < n; i++) {
    at::Tensor& w = mt::T(params[i]);
    if (!w.requires_grad()) continue;
    if (!at::isFloatingType(w.scalar_type())) throw std::invalid_argument("parameter " + std::to_string(i) + " is not floating-point");
    if (!w.is_leaf()) throw std::invalid_argument("parameter " + std::to_string(i) + " is not a leaf tensor");
    mt::check_dist_device(b->pg, w, "gradient buckets");
    b->params.push_back(w);
  }
  b->bucket_of.assign(b->params.size(), -1);
  // From the last parameter to the first; a bucket is a run of one dtype closed at bucket_bytes.
  int64_t fill = 0;
  for (size_t k = b->params.size(); k-- > 0;) {
    const at::Tensor& w = b->params[k];
    int64_t bytes = w.numel() * static_cast<int64_t>(c10::elementSize(wire_dtype(b->pg, w)));
    bool fresh = b->buckets.empty() || fill >= bucket_bytes ||
                 wire_dtype(b->pg, b->params[b->buckets.back().params[0]]) != wire_dtype(b->pg, w);
    if (fresh) {
      b->buckets.emplace_back();
      fill = 0;
    }
    Bucket& bk = b->buckets.back();
    bk.offsets.push_back(bk.params.empty() ? 0 : bk.offsets.back() + b->params[bk.params.back()].numel());
    bk.params.push_back(k);
    b->bucket_of[k] = static_cast<int>(b->buckets.size() - 1);
    fill += bytes;
  }
  at::NoGradGuard no_grad;
  for (auto& bk : b->buckets) {
    const at::Tensor& last = b->params[bk.params.back()];
    bk.buf = at::empty({bk.offsets.back() + last.numel()}, last.options().dtype(wire_dtype(b->pg, last)));
    b->bytes += bk.buf.numel() * static_cast<int64_t>(bk.buf.element_size());
  }
  b->ready.assign(b->params.size(), 0);
  b->reset();
  *out = b.release();
  MT_END
}

mt_err mt_dist_buckets_info(mt_buckets h, int* nbuckets, int64_t* bytes) {
  MT_BEGIN
  auto& b = B(h);
  *nbuckets = static_cast<int>(b.buckets.size());
  *bytes = b.bytes;
  MT_END
}

mt_err mt_dist_buckets_arm(mt_buckets h) {
  MT_BEGIN
  auto& b = B(h);
  if (!b.hooked) {
    for (size_t i = 0; i < b.params.size(); i++) {
      auto acc = torch::autograd::impl::grad_accumulator(b.params[i]);
      if (!acc) throw std::runtime_error("parameter " + std::to_string(i) + " has no gradient accumulator");
      b.keys.push_back(acc->add_post_hook(std::make_unique<ReadyHook>(&b, i)));
      b.accs.push_back(std::move(acc));
    }
    b.hooked = true;
  }
  std::lock_guard<std::mutex> l(b.mu);
  if (b.next > 0) throw std::logic_error("gradient buckets armed twice before an all-reduce");
  b.armed = true;
  MT_END
}

mt_err mt_dist_buckets_allreduce(mt_buckets h, double scale, int overlapped) {
  MT_BEGIN
  auto& b = B(h);
  at::NoGradGuard no_grad;
  bool stale;
  {
    std::lock_guard<std::mutex> l(b.mu);
    b.armed = false;  // hooks of later passes do nothing until the next arm
    while (b.next < b.buckets.size()) b.start(b.buckets[b.next++]);
    stale = b.stale;
  }
  for (auto& bk : b.buckets) bk.work->wait();
  if (overlapped != 0) {
    // Whether any rank sent a gradient that changed afterwards: one element, summed, so every rank
    // takes the same branch (the sequence of collectives must match across ranks).
    at::Tensor flag = at::full({1}, stale ? 1.0 : 0.0, at::TensorOptions().dtype(at::kFloat).device(mt::device(b.pg.device)));
    std::vector<at::Tensor> ts{flag};
    b.pg.pg->allreduce(ts, c10d::AllreduceOptions())->wait();
    mt::note_sync(flag);
    if (flag.item<float>() > 0) {
      for (auto& bk : b.buckets) b.start(bk);
      for (auto& bk : b.buckets) bk.work->wait();
    }
  }
  for (auto& bk : b.buckets) {
    if (scale != 1.0) bk.buf.mul_(scale);
    for (size_t j = 0; j < bk.params.size(); j++) {
      at::Tensor& w = b.params[bk.params[j]];
      at::Tensor& g = w.mutable_grad();
      at::Tensor src = bk.buf.narrow(0, bk.offsets[j], w.numel()).view(w.sizes());
      if (g.defined()) {
        g.copy_(src);
      } else {
        g = src.to(w.scalar_type(), false, true);
      }
    }
  }
  std::lock_guard<std::mutex> l(b.mu);
  b.reset();
  MT_END
}

mt_err mt_dist_buckets_free(mt_buckets h) {
  MT_BEGIN
  delete h;
  MT_END
}

mt_err mt_set_grad(mt_tensor th, mt_tensor gh) {
  MT_BEGIN
  at::Tensor& t = mt::T(th);
  if (gh == nullptr) {
    t.mutable_grad().reset();
    return nullptr;
  }
  at::Tensor& g = mt::T(gh);
  if (!g.sizes().equals(t.sizes()) || g.scalar_type() != t.scalar_type() || g.device() != t.device()) {
    throw std::invalid_argument("set_grad: gradient " + c10::str(g.sizes()) + " " + c10::toString(g.scalar_type()) +
                                " on " + g.device().str() + " does not match the tensor " + c10::str(t.sizes()) + " " +
                                c10::toString(t.scalar_type()) + " on " + t.device().str());
  }
  t.mutable_grad() = g;
  MT_END
}

}  // extern "C"
