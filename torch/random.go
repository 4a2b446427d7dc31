package torch

/*
#include "shim.h"
*/
import "C"

// Generator is an explicitly seeded random number generator for one device. Sampling with the
// same seed and the same calls gives the same numbers. Close it when done (it is not a tensor and
// belongs to no scope).
type Generator struct {
	g   C.mt_generator
	dev Device
}

// NewGenerator makes a generator for dev seeded with seed.
func NewGenerator(seed uint64, dev Device) *Generator {
	var g C.mt_generator
	check("NewGenerator", C.mt_generator_new(C.uint64_t(seed), C.int(dev), &g))
	return &Generator{g: g, dev: dev}
}

// Seed restarts the generator's sequence from seed.
func (g *Generator) Seed(seed uint64) {
	check("Generator.Seed", C.mt_generator_seed(g.ptr("Generator.Seed"), C.uint64_t(seed)))
}

// Device is the device the generator serves.
func (g *Generator) Device() Device { return g.dev }

// Close frees the generator; closing twice is fine.
func (g *Generator) Close() {
	if g == nil || g.g == nil {
		return
	}
	check("Generator.Close", C.mt_generator_free(g.g))
	g.g = nil
}

func (g *Generator) ptr(op string) C.mt_generator {
	if g == nil || g.g == nil {
		errorf(op, "nil or closed generator")
	}
	return g.g
}

func random(op string, kind C.int, shape []int64, dt DType, dev Device, g *Generator) *Tensor {
	var out C.mt_tensor
	check(op, C.mt_rand(kind, i64p(shape), C.int(len(shape)), C.int(dt), C.int(dev), g.ptr(op), &out))
	return wrap(op, out)
}

// Randn samples the standard normal distribution.
func Randn(shape []int64, dt DType, dev Device, g *Generator) *Tensor {
	return random("Randn", C.MT_RAND_NORMAL, shape, dt, dev, g)
}

// Rand samples uniformly from [0, 1).
func Rand(shape []int64, dt DType, dev Device, g *Generator) *Tensor {
	return random("Rand", C.MT_RAND_UNIFORM, shape, dt, dev, g)
}

// Randint samples integers uniformly from [low, high).
func Randint(low, high int64, shape []int64, dt DType, dev Device, g *Generator) *Tensor {
	var out C.mt_tensor
	check("Randint", C.mt_randint(C.int64_t(low), C.int64_t(high), i64p(shape), C.int(len(shape)), C.int(dt),
		C.int(dev), g.ptr("Randint"), &out))
	return wrap("Randint", out)
}

// Multinomial draws n indices per row of probs ([N] or [B, N], non-negative, need not sum to one).
func Multinomial(probs *Tensor, n int64, replacement bool, g *Generator) *Tensor {
	var out C.mt_tensor
	check("Multinomial", C.mt_multinomial(probs.handle("Multinomial"), C.int64_t(n), cbool(replacement),
		g.ptr("Multinomial"), &out))
	return wrap("Multinomial", out)
}

// ManualSeed seeds libtorch's default generators (ops that take no Generator, e.g. dropout).
func ManualSeed(seed uint64) {
	check("ManualSeed", C.mt_manual_seed(C.uint64_t(seed)))
}

// SetNumThreads sets libtorch's intra-op thread count.
func SetNumThreads(n int) {
	check("SetNumThreads", C.mt_set_num_threads(C.int(n)))
}

// Threads reports libtorch's intra-op thread count and OpenBLAS' (-1 when the process's BLAS is
// not OpenBLAS: the reference BLAS runs on the calling thread).
func Threads() (intraOp, blas int) {
	var i, b C.int
	check("Threads", C.mt_get_threads(&i, &b))
	return int(i), int(b)
}

// SetBLASThreads sets OpenBLAS' own thread count, which OpenBLAS otherwise takes from
// OPENBLAS_NUM_THREADS (or the number of cores) when the process starts; it reports false when the
// process's BLAS is not OpenBLAS.
func SetBLASThreads(n int) bool {
	var found C.int
	check("SetBLASThreads", C.mt_set_blas_threads(C.int(n), &found))
	return found != 0
}
