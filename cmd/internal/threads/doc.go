// Package threads decides how many CPU threads a command's tensor work uses and applies it.
//
// Two pools compete for the cores of a CPU machine: libtorch's intra-op pool (element-wise ops,
// softmax, reductions, split across threads by at::parallel_for) and OpenBLAS' own pool (every
// matmul). OpenBLAS sizes its pool from OPENBLAS_NUM_THREADS or the core count when the process
// loads it, and libtorch 1.13 picks its own size from the physical cores; left alone, both may use
// every core and each matmul issued from several intra-op threads oversubscribes the machine.
// Every command therefore resolves one Setting (--threads, else MTGRPO_THREADS, else the default
// measured fastest in docs/bench/threads.md) and applies it on the torch thread before any work.
//
// Apply also guards a failure OpenBLAS cannot report: under an address-space limit (ulimit -v) too
// small for its per-thread buffers, OpenBLAS retries the allocation forever. Apply checks the
// headroom first, returns an error naming the limit when it is short, and otherwise makes OpenBLAS
// take its buffers at once, before the model and caches claim the address space.
package threads
