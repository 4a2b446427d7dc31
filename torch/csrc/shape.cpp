// shape.cpp: views, indexing, joining and splitting.
#include <stdexcept>

#include "shim_internal.h"

extern "C" {

mt_err mt_reshape(mt_tensor a, const int64_t* shape, int ndim, int view, mt_tensor* out) {
  MT_BEGIN
  auto s = mt::dims(shape, ndim);
  *out = mt::wrap(view ? mt::T(a).view(s) : mt::T(a).reshape(s));
  MT_END
}

mt_err mt_transpose(mt_tensor a, int64_t d0, int64_t d1, mt_tensor* out) {
  MT_BEGIN
  *out = mt::wrap(mt::T(a).transpose(d0, d1));
  MT_END
}

mt_err mt_permute(mt_tensor a, const int64_t* dims, int ndims, mt_tensor* out) {
  MT_BEGIN
  *out = mt::wrap(mt::T(a).permute(mt::dims(dims, ndims)));
  MT_END
}

mt_err mt_unsqueeze(mt_tensor a, int64_t dim, mt_tensor* out) {
  MT_BEGIN
  *out = mt::wrap(mt::T(a).unsqueeze(dim));
  MT_END
}

mt_err mt_squeeze(mt_tensor a, int64_t dim, int all, mt_tensor* out) {
  MT_BEGIN
  *out = mt::wrap(all ? mt::T(a).squeeze() : mt::T(a).squeeze(dim));
  MT_END
}

mt_err mt_expand(mt_tensor a, const int64_t* shape, int ndim, mt_tensor* out) {
  MT_BEGIN
  *out = mt::wrap(mt::T(a).expand(mt::dims(shape, ndim)));
  MT_END
}

mt_err mt_repeat(mt_tensor a, const int64_t* reps, int ndim, mt_tensor* out) {
  MT_BEGIN
  *out = mt::wrap(mt::T(a).repeat(mt::dims(reps, ndim)));
  MT_END
}

mt_err mt_slice(mt_tensor a, int64_t dim, int64_t start, int64_t end, int64_t step, mt_tensor* out) {
  MT_BEGIN
  *out = mt::wrap(mt::T(a).slice(dim, start, end, step));
  MT_END
}

mt_err mt_narrow(mt_tensor a, int64_t dim, int64_t start, int64_t length, mt_tensor* out) {
  MT_BEGIN
  *out = mt::wrap(mt::T(a).narrow(dim, start, length));
  MT_END
}

mt_err mt_cat(mt_tensor* ts, int n, int64_t dim, int stack, mt_tensor* out) {
  MT_BEGIN
  auto v = mt::list(ts, n);
  *out = mt::wrap(stack ? at::stack(v, dim) : at::cat(v, dim));
  MT_END
}

mt_err mt_split(mt_tensor a, int64_t size, int64_t chunks, int64_t dim, mt_tensor* outs, int cap, int* n) {
  MT_BEGIN
  std::vector<at::Tensor> parts = chunks > 0 ? mt::T(a).chunk(chunks, dim) : mt::T(a).split(size, dim);
  if (static_cast<int>(parts.size()) > cap) {
    throw std::invalid_argument("split makes " + std::to_string(parts.size()) + " pieces, room for " +
                                std::to_string(cap));
  }
  for (size_t i = 0; i < parts.size(); i++) outs[i] = mt::wrap(parts[i]);
  *n = static_cast<int>(parts.size());
  MT_END
}

mt_err mt_split_sizes(mt_tensor a, const int64_t* sizes, int nsizes, int64_t dim, mt_tensor* outs) {
  MT_BEGIN
  std::vector<at::Tensor> parts = mt::T(a).split_with_sizes(mt::dims(sizes, nsizes), dim);
  for (size_t i = 0; i < parts.size(); i++) outs[i] = mt::wrap(parts[i]);
  MT_END
}

mt_err mt_gather(mt_tensor a, int64_t dim, mt_tensor index, mt_tensor* out) {
  MT_BEGIN
  *out = mt::wrap(mt::T(a).gather(dim, mt::T(index)));
  MT_END
}

mt_err mt_scatter(mt_tensor a, int64_t dim, mt_tensor index, mt_tensor src, int add, mt_tensor* out) {
  MT_BEGIN
  at::Tensor& t = mt::T(a);
  const at::Tensor& i = mt::T(index);
  const at::Tensor& s = mt::T(src);
  if (out == nullptr) {
    if (add) t.scatter_add_(dim, i, s); else t.scatter_(dim, i, s);
  } else {
    *out = mt::wrap(add ? t.scatter_add(dim, i, s) : t.scatter(dim, i, s));
  }
  MT_END
}

mt_err mt_index_select(mt_tensor a, int64_t dim, mt_tensor index, mt_tensor* out) {
  MT_BEGIN
  *out = mt::wrap(mt::T(a).index_select(dim, mt::T(index)));
  MT_END
}

mt_err mt_index_copy_(mt_tensor a, int64_t dim, mt_tensor index, mt_tensor src) {
  MT_BEGIN
  mt::T(a).index_copy_(dim, mt::T(index), mt::T(src));
  MT_END
}

mt_err mt_embedding(mt_tensor weight, mt_tensor ids, int64_t padding_idx, mt_tensor* out) {
  MT_BEGIN
  const at::Tensor& w = mt::T(weight);
  if (padding_idx < -1 || padding_idx >= w.size(0)) {
    throw std::invalid_argument("embedding: padding index " + std::to_string(padding_idx) + " is outside [0, " +
                                std::to_string(w.size(0)) + ") (-1 = none)");
  }
  *out = mt::wrap(at::embedding(w, mt::T(ids), padding_idx));
  MT_END
}

}  // extern "C"
