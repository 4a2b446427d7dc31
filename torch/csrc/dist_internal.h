// dist_internal.h: what the shim's c10d files share (never seen by Go). dist.cpp owns the process
// group handle (mt_pg_s); the other dist_*.cpp files reach its parts through dist_ref.
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/version.h>

#include <string>

#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
using PGBase = c10d::Backend;
#else
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
using PGBase = c10d::ProcessGroup;
#endif

#include "dist.h"

namespace mt {

// DistRef holds a process group's parts by reference count, so that what keeps one (gradient
// buckets, a watchdog) stays valid after the handle is freed.
struct DistRef {
  c10::intrusive_ptr<PGBase> pg;
  c10::intrusive_ptr<c10d::Store> store;
  int rank = 0;
  int size = 1;
  int device = MT_CPU;
  std::string backend;  // "gloo", "nccl"
};

// The parts of an open process group; throws on a NULL or closed handle.
DistRef dist_ref(mt_pg h);
// Throws unless t is on the group's device (CPU for Gloo, the group's GPU for NCCL).
void check_dist_device(const DistRef& p, const at::Tensor& t, const char* op);

}  // namespace mt
