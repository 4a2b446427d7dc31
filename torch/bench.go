package torch

/*
#include "shim.h"
*/
import "C"

// Reference loops for the binding-overhead benchmarks (bench_test.go): the same ops run in a C++
// loop inside the shim, so the difference to the Go loop is what the crossing and the handle cost.

// cgoNoop is one crossing that does no work.
func cgoNoop() { C.mt_abi_version() }

// cppAddNs runs a.Add(b) iters times in C++ and returns nanoseconds per op.
func cppAddNs(a, b *Tensor, iters int64) float64 {
	var ns C.double
	check("bench", C.mt_bench_add_loop(a.handle("bench"), b.handle("bench"), C.int64_t(iters), &ns))
	return float64(ns)
}

// cppMatmulNs runs a.Matmul(b) iters times in C++ and returns nanoseconds per op.
func cppMatmulNs(a, b *Tensor, iters int64) float64 {
	var ns C.double
	check("bench", C.mt_bench_matmul_loop(a.handle("bench"), b.handle("bench"), C.int64_t(iters), &ns))
	return float64(ns)
}
