// fuse.cpp: weights laid out back to back, so that one matrix product serves several projections
// (q, k and v; gate and up) while each stays a parameter of its own.
//
// The parts of a group are made views of one storage: part i holds rows [o_i, o_i + rows_i) of
// it, and the group as a whole is the [Σ rows, ...] tensor over the same storage. A part keeps its
// identity (TensorImpl, autograd state, gradient): only its data is re-pointed (Tensor::set_data),
// so the optimizer, checkpoints and export see the same parameter as before, and an update in
// place (AdamW, a copy from a master weight, a broadcast) is seen by the fused tensor at once,
// without a copy. The storage is owned by the parts alone: when they are replaced and freed (ZeRO-3
// swaps parameters for placeholders while it trains) it goes with them. A group whose parts no
// longer lie back to back (replaced, reloaded) is laid out again, into new storage, on its next
// use: a copy of its weights, and new addresses for whatever recorded the old ones (a CUDA graph).
#include <stdexcept>

#include "shim_internal.h"

namespace {

// Whether part p is rows [row, row + p.size(0)) of a contiguous layout that starts where first
// does, in first's storage.
bool at_row(const at::Tensor& p, const at::Tensor& first, int64_t row) {
  if (!p.is_contiguous() || !p.storage().is_alias_of(first.storage())) return false;
  int64_t width = 1;
  for (int64_t d = 1; d < p.dim(); d++) width *= p.size(d);
  return p.storage_offset() == first.storage_offset() + row * width;
}

void check_parts(const std::vector<at::Tensor>& parts) {
  const at::Tensor& a = parts[0];
  for (size_t i = 0; i < parts.size(); i++) {
    const at::Tensor& p = parts[i];
    if (!p.defined() || p.dim() < 1) throw std::invalid_argument("fuse: part " + std::to_string(i) + " is not a tensor of rows");
    bool same_rows = p.dim() == a.dim() && p.sizes().slice(1) == a.sizes().slice(1);
    if (!same_rows || p.scalar_type() != a.scalar_type() || p.device() != a.device()) {
      throw std::invalid_argument("fuse: part " + std::to_string(i) + " (" + c10::str(p.sizes()) + " " +
                                  c10::toString(p.scalar_type()) + ") does not stack on part 0 (" +
                                  c10::str(a.sizes()) + " " + c10::toString(a.scalar_type()) + ")");
    }
  }
}

}  // namespace

namespace mt {

at::Tensor fuse_rows(const std::vector<at::Tensor>& parts, bool* moved) {
  if (parts.empty()) throw std::invalid_argument("fuse: a group with no parts");
  check_parts(parts);
  std::vector<int64_t> shape = parts[0].sizes().vec();
  int64_t rows = 0;
  bool laid = true;
  for (const at::Tensor& p : parts) {
    laid = laid && at_row(p, parts[0], rows);
    rows += p.size(0);
  }
  shape[0] = rows;
  const at::Tensor& first = parts[0];
  at::NoGradGuard no_grad;
  if (laid) {
    *moved = false;
    std::vector<int64_t> strides(shape.size(), 1);
    for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; d--) strides[d] = strides[d + 1] * shape[d + 1];
    return first.detach().as_strided(shape, strides, first.storage_offset());
  }
  *moved = true;
  at::Tensor whole = at::empty(shape, first.options());
  int64_t row = 0;
  for (const at::Tensor& p : parts) {
    at::Tensor view = whole.narrow(0, row, p.size(0));
    view.copy_(p);
    // The parameter's own TensorImpl now points into whole (its grad and autograd state stay).
    const_cast<at::Tensor&>(p).set_data(view);
    row += p.size(0);
  }
  return whole;
}

}  // namespace mt

extern "C" {

mt_err mt_fuse_rows(mt_tensor* parts, const int* offs, int ngroups, mt_tensor* outs, int* moved) {
  MT_BEGIN
  // Every group is checked before any is laid out again, so a bad argument changes nothing.
  for (int g = 0; g < ngroups; g++) {
    if (offs[g + 1] <= offs[g]) throw std::invalid_argument("fuse: group " + std::to_string(g) + " has no parts");
    check_parts(mt::list(parts + offs[g], offs[g + 1] - offs[g]));
  }
  int n = 0;
  std::vector<at::Tensor> wholes;
  wholes.reserve(ngroups);
  for (int g = 0; g < ngroups; g++) {
    bool m = false;
    wholes.push_back(mt::fuse_rows(mt::list(parts + offs[g], offs[g + 1] - offs[g]), &m));
    n += m ? 1 : 0;
  }
  for (int g = 0; g < ngroups; g++) outs[g] = mt::wrap(std::move(wholes[g]));
  *moved = n;
  MT_END
}

}  // extern "C"
