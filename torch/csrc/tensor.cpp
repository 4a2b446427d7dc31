// tensor.cpp: creating tensors, copying data in and out, metadata, device and dtype moves.
#include <cstring>
#include <sstream>
#include <stdexcept>

#include "shim_internal.h"

namespace {
// Bytes of n elements of t's dtype, checked against what the caller passed.
void check_nbytes(const at::Tensor& t, size_t nbytes, const char* what) {
  size_t want = static_cast<size_t>(t.numel()) * t.element_size();
  if (want != nbytes) {
    throw std::invalid_argument(std::string(what) + ": " + std::to_string(nbytes) + " bytes given, shape " +
                                c10::str(t.sizes()) + " of " + c10::toString(t.scalar_type()) + " needs " +
                                std::to_string(want));
  }
}
}  // namespace

extern "C" {

mt_err mt_from_data(const void* data, size_t nbytes, int dtype, const int64_t* shape, int ndim, int device,
                    mt_tensor* out) {
  MT_BEGIN
  // Always a fresh CPU tensor that owns its memory: never a view of the caller's (Go) buffer.
  at::Tensor t = at::empty(mt::dims(shape, ndim), at::TensorOptions().dtype(mt::dtype(dtype)));
  check_nbytes(t, nbytes, "from_data");
  if (nbytes > 0) std::memcpy(t.data_ptr(), data, nbytes);
  at::Device d = mt::device(device);
  if (!d.is_cpu()) t = t.to(d);
  *out = mt::wrap(std::move(t));
  MT_END
}

mt_err mt_to_data(mt_tensor h, void* data, size_t nbytes) {
  MT_BEGIN
  at::Tensor t = mt::T(h).detach();
  mt::note_sync(t);
  if (!t.device().is_cpu()) t = t.to(at::kCPU);
  t = t.contiguous();
  check_nbytes(t, nbytes, "to_data");
  if (nbytes > 0) std::memcpy(data, t.data_ptr(), nbytes);
  MT_END
}

mt_err mt_full(const int64_t* shape, int ndim, int dtype, int device, int fill, double value, mt_tensor* out) {
  MT_BEGIN
  auto opts = mt::options(dtype, device);
  auto size = mt::dims(shape, ndim);
  at::Tensor t;
  switch (fill) {
    case MT_FILL_EMPTY: t = at::empty(size, opts); break;
    case MT_FILL_ZEROS: t = at::zeros(size, opts); break;
    case MT_FILL_ONES: t = at::ones(size, opts); break;
    case MT_FILL_VALUE: t = at::full(size, value, opts); break;
    default: throw std::invalid_argument("unknown fill kind");
  }
  *out = mt::wrap(std::move(t));
  MT_END
}

mt_err mt_arange(double start, double end, double step, int dtype, int device, mt_tensor* out) {
  MT_BEGIN
  auto opts = mt::options(dtype, device);
  if (at::isFloatingType(opts.dtype().toScalarType())) {
    *out = mt::wrap(at::arange(start, end, step, opts));
  } else {
    *out = mt::wrap(at::arange(static_cast<int64_t>(start), static_cast<int64_t>(end), static_cast<int64_t>(step), opts));
  }
  MT_END
}

mt_err mt_info(mt_tensor h, int64_t* shape, int* ndim, int* dtype, int* device, int64_t* numel, int* requires_grad,
               int* contiguous) {
  MT_BEGIN
  const at::Tensor& t = mt::T(h);
  if (!t.defined()) throw std::invalid_argument("undefined tensor");
  int64_t n = t.dim();
  if (n > MT_MAX_DIMS) throw std::invalid_argument("tensor has more than MT_MAX_DIMS dimensions");
  for (int64_t i = 0; i < n; i++) shape[i] = t.size(i);
  *ndim = static_cast<int>(n);
  *dtype = mt::dtype_code(t.scalar_type());
  *device = mt::device_code(t.device());
  *numel = t.numel();
  *requires_grad = t.requires_grad() ? 1 : 0;
  *contiguous = t.is_contiguous() ? 1 : 0;
  MT_END
}

mt_err mt_item(mt_tensor h, double* f, int64_t* i) {
  MT_BEGIN
  const at::Tensor& t = mt::T(h);
  if (t.numel() != 1) {
    throw std::invalid_argument("item of a tensor with " + std::to_string(t.numel()) + " elements (need 1)");
  }
  mt::note_sync(t);
  at::Scalar s = t.item();
  if (s.isFloatingPoint()) {
    *f = s.toDouble();
    *i = static_cast<int64_t>(*f);
  } else {
    *i = s.toLong();
    *f = static_cast<double>(*i);
  }
  MT_END
}

mt_err mt_to(mt_tensor h, int device, int dtype, int copy, mt_tensor* out) {
  MT_BEGIN
  const at::Tensor& t = mt::T(h);
  at::ScalarType st = dtype < 0 ? t.scalar_type() : mt::dtype(dtype);
  *out = mt::wrap(t.to(mt::device(device), st, /*non_blocking=*/false, copy != 0));
  MT_END
}

mt_err mt_contiguous(mt_tensor h, mt_tensor* out) {
  MT_BEGIN
  *out = mt::wrap(mt::T(h).contiguous());
  MT_END
}

mt_err mt_clone(mt_tensor h, mt_tensor* out) {
  MT_BEGIN
  *out = mt::wrap(mt::T(h).clone());
  MT_END
}

mt_err mt_copy_(mt_tensor dst, mt_tensor src) {
  MT_BEGIN
  mt::T(dst).copy_(mt::T(src));
  MT_END
}

mt_err mt_fill_(mt_tensor h, double value) {
  MT_BEGIN
  at::Tensor& t = mt::T(h);
  t.fill_(mt::scalar_for(t, value));
  MT_END
}

mt_err mt_to_string(mt_tensor h, char** out) {
  MT_BEGIN
  std::ostringstream os;
  os << mt::T(h);
  *out = mt::errmsg(os.str().c_str());
  MT_END
}

mt_err mt_equal(mt_tensor a, mt_tensor b, int* out) {
  MT_BEGIN
  *out = at::equal(mt::T(a), mt::T(b)) ? 1 : 0;
  MT_END
}

mt_err mt_allclose(mt_tensor a, mt_tensor b, double rtol, double atol, int* out) {
  MT_BEGIN
  *out = at::allclose(mt::T(a), mt::T(b), rtol, atol) ? 1 : 0;
  MT_END
}

}  // extern "C"
