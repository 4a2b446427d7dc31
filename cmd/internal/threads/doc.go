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
// Apply also guards failures that cannot be reported where they happen: under an address-space
// limit (ulimit -v) too small, OpenBLAS retries its per-thread buffers' allocation forever, and the
// Go runtime stops with a fatal error when it cannot map the heap's next arena. Apply checks the
// headroom first, for the buffers, the Go heap's growth, a margin and what the command says it will
// take after (Reserve: generate's weights, KV cache and tokenizer), returns an error wrapping
// ErrAddressSpace that names the limit and each part when it is short, and otherwise holds the Go
// heap to its share (a soft memory limit) and makes OpenBLAS take its buffers at once, before the
// model and caches claim the address space. What maps before main (libtorch, OpenBLAS, the Go
// runtime's own reservations: some 2.3 GB here) is counted, not avoidable.
package threads
