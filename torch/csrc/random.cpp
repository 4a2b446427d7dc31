// random.cpp: explicit, seeded generators and sampling.
#include <ATen/CPUGeneratorImpl.h>

#include <stdexcept>

#include "shim_internal.h"

namespace {
at::Generator& G(mt_generator g) {
  if (g == nullptr) throw std::invalid_argument("nil generator");
  return *reinterpret_cast<at::Generator*>(g);
}
}  // namespace

extern "C" {

mt_err mt_generator_new(uint64_t seed, int device, mt_generator* out) {
  MT_BEGIN
  at::Device d = mt::device(device);
  at::Generator g;
  if (d.is_cpu()) {
    g = at::make_generator<at::CPUGeneratorImpl>(seed);
  } else {
#ifdef MTGRPO_CUDA
    // A new CUDA generator, not the device's default one: sampling stays reproducible per generator.
    g = mt::cuda_generator(d.index());
    g.set_current_seed(seed);
#else
    throw std::invalid_argument("CUDA generator requested but this shim was built without CUDA");
#endif
  }
  *out = reinterpret_cast<mt_generator>(new at::Generator(std::move(g)));
  MT_END
}

mt_err mt_generator_free(mt_generator g) {
  MT_BEGIN
  delete reinterpret_cast<at::Generator*>(g);
  MT_END
}

mt_err mt_generator_seed(mt_generator g, uint64_t seed) {
  MT_BEGIN
  at::Generator& gen = G(g);
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_current_seed(seed);
  MT_END
}

mt_err mt_rand(int kind, const int64_t* shape, int ndim, int dtype, int device, mt_generator g, mt_tensor* out) {
  MT_BEGIN
  auto opts = mt::options(dtype, device);
  auto size = mt::dims(shape, ndim);
  switch (kind) {
    case MT_RAND_NORMAL: *out = mt::wrap(at::randn(size, G(g), opts)); break;
    case MT_RAND_UNIFORM: *out = mt::wrap(at::rand(size, G(g), opts)); break;
    default: throw std::invalid_argument("unknown random kind");
  }
  MT_END
}

mt_err mt_randint(int64_t low, int64_t high, const int64_t* shape, int ndim, int dtype, int device, mt_generator g,
                  mt_tensor* out) {
  MT_BEGIN
  *out = mt::wrap(at::randint(low, high, mt::dims(shape, ndim), G(g), mt::options(dtype, device)));
  MT_END
}

mt_err mt_multinomial(mt_tensor probs, int64_t n, int replacement, mt_generator g, mt_tensor* out) {
  MT_BEGIN
  *out = mt::wrap(at::multinomial(mt::T(probs), n, replacement != 0, G(g)));
  MT_END
}

}  // extern "C"
