// dist.cpp: c10d process groups for data-parallel training (see dist.h).
//
// libtorch 1.13 (Debian, CPU) derives ProcessGroupGloo/NCCL from c10d::ProcessGroup; 2.x derives them
// from c10d::Backend. Both keep the (store, rank, size, options) constructor and the collective
// signatures used here, so only the base type differs.
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/version.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

#if defined(USE_C10D_GLOO) && __has_include(<gloo/config.h>)
#define MT_HAVE_GLOO 1
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#if defined(MTGRPO_CUDA) && defined(USE_C10D_NCCL) && __has_include(<nccl.h>)
#define MT_HAVE_NCCL 1
#include <c10/cuda/CUDAFunctions.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif
#if defined(USE_C10D_GLOO) && !defined(MT_HAVE_GLOO)
#warning "gloo headers not found: this shim will have no Gloo (CPU) process groups"
#endif
#if defined(MTGRPO_CUDA) && !defined(MT_HAVE_NCCL)
#warning "nccl.h not found: this shim will have no NCCL (CUDA) process groups"
#endif

#include "dist.h"
#include "dist_internal.h"
#include "shim_internal.h"

#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
using PGBase = c10d::Backend;
#else
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
using PGBase = c10d::ProcessGroup;
#endif

struct mt_pg_s {
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<PGBase> pg;
  int rank = 0;
  int size = 1;
  int device = MT_CPU;
  std::string addr;  // the master address (subgroups bind Gloo as the parent did)
  int groups = 0;    // subgroups created so far (their store prefixes)
};

struct mt_store_s {
  c10::intrusive_ptr<c10d::TCPStore> store;
};

namespace {

mt_pg_s& P(mt_pg h) {
  if (h == nullptr) throw std::invalid_argument("nil process group");
  if (!h->pg) throw std::invalid_argument("process group is closed");
  return *h;
}

// A TCPStore with options o. Since 2.4 the options ask for the libuv server by default, and a
// libtorch built without libuv (Debian's 2.6) refuses that; the classic server speaks the same
// protocol, so fall back to it (as torch.distributed does when told USE_LIBUV=0).
c10::intrusive_ptr<c10d::TCPStore> tcp_store(const std::string& host, c10d::TCPStoreOptions o) {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 2)
  if (o.useLibUV) {
    try {
      return c10::make_intrusive<c10d::TCPStore>(host, o);
    } catch (const c10::Error& e) {
      if (std::string(e.what_without_backtrace()).find("without libuv") == std::string::npos) throw;
    }
    o.useLibUV = false;
  }
#endif
  return c10::make_intrusive<c10d::TCPStore>(host, o);
}

bool is_loopback(const std::string& addr) {
  return addr == "localhost" || addr == "::1" || addr.rfind("127.", 0) == 0;
}

c10::intrusive_ptr<c10d::Store> rendezvous(const std::string& addr, int port, int rank, int world, bool agent,
                                           int restart_count, std::chrono::milliseconds timeout) {
  c10d::TCPStoreOptions o;
  o.port = static_cast<std::uint16_t>(port);
  o.isServer = !agent && rank == 0;
  o.numWorkers = static_cast<std::size_t>(world);
  o.waitWorkers = !agent;
  o.timeout = timeout;
  c10::intrusive_ptr<c10d::Store> store = tcp_store(addr, o);
  if (agent) {
    store = c10::make_intrusive<c10d::PrefixStore>("/worker/attempt_" + std::to_string(restart_count), store);
  }
  return store;
}

#ifdef MT_HAVE_GLOO
c10::intrusive_ptr<PGBase> new_gloo(const c10::intrusive_ptr<c10d::Store>& store, const std::string& addr, int rank,
                                    int world, std::chrono::milliseconds timeout) {
  auto opts = c10d::ProcessGroupGloo::Options::create(timeout);
  // As torch.distributed does: GLOO_SOCKET_IFNAME names interfaces (comma-separated); otherwise bind
  // to this host's address, or to loopback when the job itself is on loopback (single machine).
  const char* ifnames = std::getenv("GLOO_SOCKET_IFNAME");
  if (ifnames != nullptr && *ifnames != 0) {
    std::string s(ifnames);
    size_t start = 0;
    while (start <= s.size()) {
      size_t end = s.find(',', start);
      if (end == std::string::npos) end = s.size();
      if (end > start) opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(s.substr(start, end - start)));
      start = end + 1;
    }
  } else if (is_loopback(addr)) {
    opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
  } else {
    opts->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
  }
  return c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, world, opts);
}
#endif

#ifdef MT_HAVE_NCCL
c10::intrusive_ptr<PGBase> new_nccl(const c10::intrusive_ptr<c10d::Store>& store, int rank, int world, int device,
                                    std::chrono::milliseconds timeout) {
  // NCCL binds communicators to the current device: set it before anything creates one.
  int n = static_cast<int>(c10::cuda::device_count());
  if (device >= n) {
    throw std::invalid_argument("NCCL process group on cuda:" + std::to_string(device) + ", which does not exist (" +
                                std::to_string(n) + " CUDA devices)");
  }
  c10::cuda::set_device(static_cast<c10::DeviceIndex>(device));
  auto opts = c10d::ProcessGroupNCCL::Options::create();
  opts->timeout = timeout;
  return c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, world, opts);
}
#endif

// Collectives need dense contiguous tensors: run fn on t itself when it is, else on a contiguous
// copy that is written back afterwards (for in-place results).
template <typename F>
void in_place(at::Tensor& t, F fn) {
  if (t.is_contiguous()) {
    fn(t);
    return;
  }
  at::Tensor c = t.contiguous();
  fn(c);
  t.copy_(c);
}

void check_device(const mt_pg_s& p, const at::Tensor& t, const char* op) {
  bool want_cuda = p.device != MT_CPU;
  if (t.is_cuda() != want_cuda || (want_cuda && t.get_device() != p.device)) {
    throw std::invalid_argument(std::string(op) + ": tensor on " + t.device().str() + ", process group on " +
                                mt::device(p.device).str());
  }
}

// Gloo has no bfloat16 (1.13 and 2.x): data movement sends the bits as float16 (two bytes it only
// copies), reductions go through float32 (exact for the inputs; the sum is rounded once, back to
// bfloat16).
bool gloo_bf16(const std::string& backend, const at::Tensor& t) {
  return t.scalar_type() == at::kBFloat16 && backend == "gloo";
}

void allreduce(mt_pg_s& p, at::Tensor& t, c10d::ReduceOp::RedOpType op) {
  if (gloo_bf16(p.pg->getBackendName(), t)) {
    at::Tensor f = t.to(at::kFloat);
    allreduce(p, f, op);
    t.copy_(f);
    return;
  }
  std::vector<at::Tensor> ts{t};
  c10d::AllreduceOptions o;
  o.reduceOp = op;
  p.pg->allreduce(ts, o)->wait();
}

c10d::ReduceOp::RedOpType reduce_op(int op) {
  switch (op) {
    case MT_DIST_SUM:
    case MT_DIST_AVG: return c10d::ReduceOp::SUM;  // AVG = SUM then divide: Gloo has no AVG
    case MT_DIST_MAX: return c10d::ReduceOp::MAX;
    case MT_DIST_MIN: return c10d::ReduceOp::MIN;
  }
  throw std::invalid_argument("unknown reduce op " + std::to_string(op));
}

}  // namespace

extern "C" {

int mt_dist_backends(void) {
  int b = 0;
#ifdef MT_HAVE_GLOO
  b |= MT_DIST_HAVE_GLOO;
#endif
#ifdef MT_HAVE_NCCL
  b |= MT_DIST_HAVE_NCCL;
#endif
  return b;
}

mt_err mt_dist_new(const char* addr, int port, int rank, int world, int agent_store, int restart_count, int device,
                   int64_t timeout_ms, mt_pg* out) {
  MT_BEGIN
  if (addr == nullptr || *addr == 0) throw std::invalid_argument("empty master address");
  if (port <= 0 || port > 65535) throw std::invalid_argument("master port " + std::to_string(port) + " out of range");
  if (world < 1 || rank < 0 || rank >= world) {
    throw std::invalid_argument("rank " + std::to_string(rank) + " out of range for world size " + std::to_string(world));
  }
  if (timeout_ms <= 0) throw std::invalid_argument("timeout must be positive");
  std::chrono::milliseconds timeout(timeout_ms);
  auto p = std::make_unique<mt_pg_s>();
  p->rank = rank;
  p->size = world;
  p->device = device;
  p->addr = addr;
  std::string where = std::string(addr) + ":" + std::to_string(port) + " (rank " + std::to_string(rank) + " of " +
                      std::to_string(world) + ")";
  try {
    p->store = rendezvous(addr, port, rank, world, agent_store != 0, restart_count, timeout);
  } catch (const c10::Error& e) {
    throw std::runtime_error("rendezvous at " + where + ": " + e.what_without_backtrace());
  } catch (const std::exception& e) {
    throw std::runtime_error("rendezvous at " + where + ": " + e.what());
  }
  if (device == MT_CPU) {
#ifdef MT_HAVE_GLOO
    p->pg = new_gloo(p->store, addr, rank, world, timeout);
#else
    throw std::runtime_error("this shim was built without Gloo: no CPU process groups");
#endif
  } else {
#ifdef MT_HAVE_NCCL
    p->pg = new_nccl(p->store, rank, world, device, timeout);
#else
    throw std::runtime_error("this shim was built without NCCL: no CUDA process groups");
#endif
  }
  *out = p.release();
  MT_END
}

mt_err mt_dist_store_serve(int port, int64_t timeout_ms, mt_store* out) {
  MT_BEGIN
  if (port <= 0 || port > 65535) throw std::invalid_argument("store port " + std::to_string(port) + " out of range");
  if (timeout_ms <= 0) throw std::invalid_argument("timeout must be positive");
  c10d::TCPStoreOptions o;
  o.port = static_cast<std::uint16_t>(port);
  o.isServer = true;
  o.waitWorkers = false;  // the ranks connect later, as clients
  o.timeout = std::chrono::milliseconds(timeout_ms);
  auto s = std::make_unique<mt_store_s>();
  s->store = tcp_store("127.0.0.1", o);
  *out = s.release();
  MT_END
}

mt_err mt_dist_store_num_keys(mt_store s, int64_t* out) {
  MT_BEGIN
  if (s == nullptr) throw std::invalid_argument("nil store");
  *out = s->store->getNumKeys();
  MT_END
}

mt_err mt_dist_store_free(mt_store s) {
  MT_BEGIN
  delete s;
  MT_END
}

mt_err mt_dist_free(mt_pg h) {
  MT_BEGIN
  if (h == nullptr) return nullptr;
  // The process group first: its threads may still talk through the store.
  h->pg.reset();
  h->store.reset();
  delete h;
  MT_END
}

mt_err mt_dist_backend(mt_pg h, char* buf, size_t cap) {
  MT_BEGIN
  std::string name = P(h).pg->getBackendName();
  if (cap == 0) throw std::invalid_argument("empty buffer");
  std::strncpy(buf, name.c_str(), cap - 1);
  buf[cap - 1] = 0;
  MT_END
}

mt_err mt_dist_allreduce(mt_pg h, mt_tensor th, int op) {
  MT_BEGIN
  auto& p = P(h);
  at::Tensor& t = mt::T(th);
  check_device(p, t, "all_reduce");
  auto rop = reduce_op(op);
  if (op == MT_DIST_AVG && !at::isFloatingType(t.scalar_type())) {
    throw std::invalid_argument("all_reduce AVG needs a floating-point tensor, got " +
                                std::string(c10::toString(t.scalar_type())));
  }
  at::NoGradGuard no_grad;
  in_place(t, [&](at::Tensor& c) {
    allreduce(p, c, rop);
    if (op == MT_DIST_AVG) c.div_(p.size);
  });
  MT_END
}

mt_err mt_dist_broadcast(mt_pg h, mt_tensor* ths, int n, int root) {
  MT_BEGIN
  auto& p = P(h);
  if (root < 0 || root >= p.size) throw std::invalid_argument("broadcast root " + std::to_string(root) + " out of range");
  at::NoGradGuard no_grad;
  for (int i = 0; i < n; i++) {
    at::Tensor& t = mt::T(ths[i]);
    check_device(p, t, "broadcast");
    in_place(t, [&](at::Tensor& c) {
      std::vector<at::Tensor> ts{gloo_bf16(p.pg->getBackendName(), c) ? c.view(at::kHalf) : c};
      c10d::BroadcastOptions o;
      o.rootRank = root;
      p.pg->broadcast(ts, o)->wait();
    });
  }
  MT_END
}

mt_err mt_dist_allgather(mt_pg h, mt_tensor th, mt_tensor* outs) {
  MT_BEGIN
  auto& p = P(h);
  at::Tensor t = mt::T(th).detach().contiguous();
  check_device(p, t, "all_gather");
  bool bits = gloo_bf16(p.pg->getBackendName(), t);
  if (bits) t = t.view(at::kHalf);
  std::vector<std::vector<at::Tensor>> output(1);
  for (int r = 0; r < p.size; r++) output[0].push_back(at::empty_like(t));
  std::vector<at::Tensor> input{t};
  p.pg->allgather(output, input)->wait();
  for (int r = 0; r < p.size; r++) outs[r] = mt::wrap(bits ? output[0][r].view(at::kBFloat16) : output[0][r]);
  MT_END
}

mt_err mt_dist_barrier(mt_pg h) {
  MT_BEGIN
  auto& p = P(h);
  c10d::BarrierOptions o;
  if (p.device != MT_CPU) o.device_ids = {p.device};
  p.pg->barrier(o)->wait();
  MT_END
}

}  // extern "C"

// ---- sharding collectives and subgroups (dist_internal.h, dist.h) ---------------------------------

namespace mt {

DistRef dist_ref(mt_pg h) {
  auto& p = P(h);
  return DistRef{p.pg, p.store, p.rank, p.size, p.device, p.pg->getBackendName()};
}

void check_dist_device(const DistRef& p, const at::Tensor& t, const char* op) {
  bool want_cuda = p.device != MT_CPU;
  if (t.is_cuda() != want_cuda || (want_cuda && t.get_device() != p.device)) {
    throw std::invalid_argument(std::string(op) + ": tensor on " + t.device().str() + ", process group on " +
                                mt::device(p.device).str());
  }
}

}  // namespace mt

namespace {

// flat1d checks that t is a dense contiguous 1-d tensor (the collectives below write into it).
void flat1d(const at::Tensor& t, const char* op, const char* what) {
  if (t.dim() != 1 || !t.is_contiguous()) {
    throw std::invalid_argument(std::string(op) + ": " + what + " must be a contiguous 1-d tensor, got shape " +
                                c10::str(t.sizes()));
  }
}

}  // namespace

extern "C" {

mt_err mt_dist_reduce_scatter(mt_pg h, mt_tensor inh, mt_tensor outh, int op) {
  MT_BEGIN
  auto p = mt::dist_ref(h);
  at::Tensor& in = mt::T(inh);
  at::Tensor& out = mt::T(outh);
  flat1d(in, "reduce_scatter", "input");
  flat1d(out, "reduce_scatter", "output");
  mt::check_dist_device(p, in, "reduce_scatter");
  mt::check_dist_device(p, out, "reduce_scatter");
  if (in.numel() != out.numel() * p.size || in.scalar_type() != out.scalar_type()) {
    throw std::invalid_argument("reduce_scatter: input " + c10::str(in.sizes()) + " " +
                                c10::toString(in.scalar_type()) + " must be world (" + std::to_string(p.size) +
                                ") times output " + c10::str(out.sizes()) + " " + c10::toString(out.scalar_type()));
  }
  if (op == MT_DIST_AVG && !at::isFloatingType(in.scalar_type())) {
    throw std::invalid_argument("reduce_scatter AVG needs a floating-point tensor");
  }
  at::NoGradGuard no_grad;
  c10d::ReduceScatterOptions o;
  o.reduceOp = reduce_op(op);
  if (p.backend == "nccl") {
    p.pg->_reduce_scatter_base(out, in, o)->wait();
  } else {
    // Gloo (1.13 and 2.x) has no reduce-scatter: all-reduce a copy and keep this rank's chunk. The
    // sums are the same; only the traffic is larger (CPU runs are for tests).
    at::Tensor full = in.to(in.scalar_type() == at::kBFloat16 ? at::kFloat : in.scalar_type(), false, true);
    std::vector<at::Tensor> ts{full};
    c10d::AllreduceOptions ao;
    ao.reduceOp = o.reduceOp;
    p.pg->allreduce(ts, ao)->wait();
    out.copy_(full.narrow(0, out.numel() * p.rank, out.numel()));
  }
  if (op == MT_DIST_AVG) out.div_(p.size);
  MT_END
}

// mt_work_s is an all-gather in flight: its c10d work and the tensors it reads and writes, kept
// alive until it is awaited.
struct mt_work_s {
  c10::intrusive_ptr<c10d::Work> work;
  at::Tensor in, out;
  std::vector<std::vector<at::Tensor>> outs;  // Gloo: views of out, one per rank
  std::vector<at::Tensor> ins;
};

namespace {

// allgather_into_start checks in and out and starts the all-gather of in into out.
std::unique_ptr<mt_work_s> allgather_into_start(mt_pg h, mt_tensor inh, mt_tensor outh) {
  auto p = mt::dist_ref(h);
  at::Tensor& in = mt::T(inh);
  at::Tensor& out = mt::T(outh);
  flat1d(in, "all_gather_into", "input");
  flat1d(out, "all_gather_into", "output");
  mt::check_dist_device(p, in, "all_gather_into");
  mt::check_dist_device(p, out, "all_gather_into");
  if (out.numel() != in.numel() * p.size || in.scalar_type() != out.scalar_type()) {
    throw std::invalid_argument("all_gather_into: output " + c10::str(out.sizes()) + " " +
                                c10::toString(out.scalar_type()) + " must be world (" + std::to_string(p.size) +
                                ") times input " + c10::str(in.sizes()) + " " + c10::toString(in.scalar_type()));
  }
  at::NoGradGuard no_grad;
  auto w = std::make_unique<mt_work_s>();
  w->in = in;
  w->out = out;
  if (p.backend == "nccl") {
    w->work = p.pg->_allgather_base(w->out, w->in, c10d::AllgatherOptions());
    return w;
  }
  // Gloo's all-gather into views of the output buffer (its _allgather_base is not implemented).
  bool bits = in.scalar_type() == at::kBFloat16;
  w->outs.resize(1);
  for (int r = 0; r < p.size; r++) {
    at::Tensor o = out.narrow(0, in.numel() * r, in.numel());
    w->outs[0].push_back(bits ? o.view(at::kHalf) : o);
  }
  w->ins.push_back(bits ? in.view(at::kHalf) : in);
  w->work = p.pg->allgather(w->outs, w->ins);
  return w;
}

}  // namespace

mt_err mt_dist_allgather_into(mt_pg h, mt_tensor inh, mt_tensor outh) {
  MT_BEGIN
  allgather_into_start(h, inh, outh)->work->wait();
  MT_END
}

mt_err mt_dist_allgather_into_start(mt_pg h, mt_tensor inh, mt_tensor outh, mt_work* out) {
  MT_BEGIN
  *out = nullptr;
  *out = allgather_into_start(h, inh, outh).release();
  MT_END
}

mt_err mt_dist_work_wait(mt_work w) {
  MT_BEGIN
  std::unique_ptr<mt_work_s> own(w);
  if (!own) throw std::invalid_argument("work_wait: no work");
  own->work->wait();
  MT_END
}

mt_err mt_dist_new_group(mt_pg h, const int* ranks, int n, int64_t timeout_ms, mt_pg* out) {
  MT_BEGIN
  auto& p = P(h);
  *out = nullptr;
  if (n < 1 || n > p.size) throw std::invalid_argument("new_group: " + std::to_string(n) + " ranks of " + std::to_string(p.size));
  if (timeout_ms <= 0) throw std::invalid_argument("new_group: timeout must be positive");
  int sub = -1;
  std::string key = "group";
  for (int i = 0; i < n; i++) {
    if (ranks[i] < 0 || ranks[i] >= p.size || (i > 0 && ranks[i] <= ranks[i - 1])) {
      throw std::invalid_argument("new_group: ranks must be increasing and in [0, " + std::to_string(p.size) + ")");
    }
    if (ranks[i] == p.rank) sub = i;
    key += "_" + std::to_string(ranks[i]);
  }
  // Every rank of the parent calls this in the same order (as torch.distributed.new_group): the
  // count makes each group's store keys distinct even for the same member list.
  key += "/" + std::to_string(p.groups++);
  if (sub < 0) return nullptr;
  auto g = std::make_unique<mt_pg_s>();
  g->store = c10::make_intrusive<c10d::PrefixStore>(key, p.store);
  g->rank = sub;
  g->size = n;
  g->device = p.device;
  std::chrono::milliseconds timeout(timeout_ms);
  if (p.device == MT_CPU) {
#ifdef MT_HAVE_GLOO
    g->pg = new_gloo(g->store, p.addr, sub, n, timeout);
#else
    throw std::runtime_error("this shim was built without Gloo: no CPU process groups");
#endif
  } else {
#ifdef MT_HAVE_NCCL
    g->pg = new_nccl(g->store, sub, n, p.device, timeout);
#else
    throw std::runtime_error("this shim was built without NCCL: no CUDA process groups");
#endif
  }
  *out = g.release();
  MT_END
}

}  // extern "C"
