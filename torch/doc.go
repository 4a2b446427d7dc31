// Package torch is mtgrpo's Go API over libtorch: tensors, ops, autograd, AdamW, and scopes that
// own tensor memory. It sees libtorch only through the C ABI in csrc/shim.h, implemented by
// build/libmtgrpo_torch.so (make shim); cgo compiles no C++.
//
// # Threads
//
// All torch work runs on one goroutine locked to its OS thread, because libtorch keeps grad mode,
// inference mode and the current CUDA device and stream per thread. Run hands a closure to that
// thread and waits:
//
//	err := torch.Run(func() error {
//		x := torch.Randn([]int64{2, 3}, torch.Float32, torch.CPU, gen)
//		fmt.Println(x.Sum(false).Float())
//		return nil
//	})
//
// The shim enforces this: it records the torch thread and every entry point fails with an error on
// any other thread. Environments, tools and rewards run on other goroutines and never touch tensors.
// Tests use Run too; inside the closure use t.Error, not t.Fatal (Run reports a Goexit as an error
// and starts a fresh torch thread, but the test's work is lost).
//
// # Lifetime
//
// Every tensor belongs to a Scope, and closing a scope frees everything it owns in one crossing.
// Scopes opened with NewScope form a stack on the torch thread and ops put their results in the
// innermost one; Run opens one around its closure. Results that must outlive a scope move out of it:
// Scope.Keep moves tensors to the enclosing scope, Scoped keeps a function's single result, and
// Tensor.MoveTo moves a tensor to any scope, typically a long-lived one from NewLongScope (weights,
// optimizer state, KV caches). Tensor.Free releases one tensor early. A tensor used after its scope
// closed panics with *Error; it never touches freed memory. LiveTensors counts handles alive in the
// shim, for tests that check a loop does not leak. A Scope dropped without Close is only reported
// (LeakedScopes and a log line): the garbage collector never frees tensors, because freeing off the
// torch thread would be unsafe and GC timing would decide device memory.
//
// # Errors
//
// Every shim call returns its error in the same call (no "last error" state). Ops return *Tensor
// and panic with *Error (op name and libtorch's message) when libtorch refuses, so model code reads
// as math. API boundaries convert the panic back: Run does it for its closure, and
//
//	func Load(...) (err error) { defer torch.Recover(&err); ... }
//
// or torch.Do(func() error {...}) do it anywhere on the torch thread. Bad shapes, dtypes and
// indices are errors; the process keeps working after them. One exception, as in PyTorch: on CUDA
// an out-of-range index inside a kernel (Embedding, IndexSelect, Gather) is a device-side assert
// that leaves the CUDA context unusable, so token ids must be checked on the host before upload.
//
// # Devices, dtypes and data
//
// DType covers float32, float16, bfloat16, int64, int32, uint8, bool (and float64 for reference
// math); Device is CPU or CUDA(n) (ParseDevice("cuda:1")). FromSlice, FromBits (raw bf16/f16
// patterns), FromFloats and FromBytes copy Go memory into a new tensor; a tensor never points into
// Go memory. ToSlice, Float32s, Int64s, Bits and Bytes copy out from any device. Random numbers come
// from an explicit, seeded Generator.
//
// # Fused ops
//
// Hot sequences of the model cross into C++ once: RMSNorm (float32 compute, cast back, times the
// weight), SiluMul (SwiGLU), RoPE, TokenLogprobs and ScaledDotProductAttention (causal or masked,
// grouped-query heads). docs/bench/torch.md has the per-call costs. Linear of one row on the CPU
// is a matrix-vector product (OpenBLAS packs the whole weight for a matrix product).
//
// Three go further. Sample draws one token per row of logits on the device (temperature, top-k,
// top-p, min-p, greedy; inverse CDF with a uniform number per row) in one crossing. FuseRows lays
// several weights out back to back in one storage (q/k/v, gate/up) while each stays the same
// parameter, so that one matrix product serves them and updates in place reach it. Decoder runs a
// whole decode step of a pre-norm decoder over a KV cache (every layer, the head, Sample) in one
// crossing from preallocated buffers, and on CUDA replays it from CUDA graphs.
//
// # Build and versions
//
// scripts/build_shim.sh (make shim) compiles csrc/*.cpp against the libtorch chosen by
// scripts/libtorch.sh: Debian's 1.13 on CPU machines, a PyTorch 2.x installation on GPU hosts
// (*_cuda.cpp only there). The first Run compares the shim's ABI version with the shim.h this
// package was built from and refuses a mismatch; Version reports libtorch's version and CUDA
// availability (mtgrpo version).
//
// # Autograd
//
// SetRequiresGrad, Backward (with gradients and an inputs list), Grad, Detach, NoGrad and
// InferenceMode scopes, and Grads (torch.autograd.grad) are enough to drive layer-wise gradient
// checkpointing from Go: forward under no-grad keeping each layer's input, then recompute and
// backpropagate one layer at a time, feeding each layer's input gradient to the layer below
// (TestCheckpointedBackwardMatchesPlain shows the pattern). AdamW and ClipGradNorm update all
// parameters in one crossing each. AdamW takes named parameters (NamedTensor) and keeps float32
// master weights and moments for float16/bfloat16 ones, writing each updated master back into its
// low-precision parameter in the same crossing; its state (State, LoadState) is a flat map keyed
// by parameter name, masters included, that SaveSafetensors writes as it is. A step whose gradient
// norm is not finite is given up with Skip, which leaves weights and state untouched.
// GradBuffers keeps one process's gradients in persistent flat buffers (each .grad a view), with
// the norm, the clipping and AdamW's float32 gradients computed per buffer (AdamW.StepWith).
//
// # Memory counters
//
// CUDAMemoryOf and CUDAAllocCountsOf read the CUDA caching allocator; on the CPU, TrackCPUMemory
// puts a counter in front of libtorch's allocator (allocations, frees, live and peak tensor
// bytes: CPUMemoryStats), for tests and benchmarks that measure a step's memory.
package torch
