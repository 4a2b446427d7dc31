package threads

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"syscall"

	"github.com/mtgrpo/mtgrpo/torch"
)

// blasBuffer is the work buffer OpenBLAS maps for each thread that runs BLAS (its compile-time
// BUFFER_SIZE: 128 MiB in Debian's x86-64 build, seen as 134217728-byte mmaps under strace).
const blasBuffer = 128 << 20

// headroomMargin is address space left for libtorch's and Go's own growth during the warm-up.
const headroomMargin = 64 << 20

// goHeapGrowth is address space left for the Go heap: it grows by arenas of 64 MiB, and a
// runtime that cannot map the next one stops with a fatal error no code can catch. One arena
// beyond what the reserves marked Go ask for.
const goHeapGrowth = 64 << 20

// ErrAddressSpace is wrapped by Apply's refusal under an address-space limit (ulimit -v) too
// small for the command: a setup mistake, said before anything large is reserved.
var ErrAddressSpace = errors.New("the address-space limit is too small")

// Reserve is address space a command takes after Apply (a model's weights, its KV cache, a
// tokenizer's tables), named in the refusal. Go marks what the Go heap holds.
type Reserve struct {
	What  string
	Bytes int64
	Go    bool
}

// InEffect is what a process runs with after Apply: the pool sizes read back from libtorch and
// OpenBLAS (BLAS -1: the BLAS is not OpenBLAS and runs on the calling thread).
type InEffect struct {
	Setting
	ReadIntraOp, ReadBLAS int
}

func (e InEffect) String() string {
	blas := strconv.Itoa(e.ReadBLAS)
	if e.ReadBLAS < 0 {
		blas = "none (not OpenBLAS)"
	}
	return fmt.Sprintf("threads: %d intra-op, BLAS %s (asked %d,%d by %s)", e.ReadIntraOp, blas, e.IntraOp, e.BLAS, e.Source)
}

// Apply checks that the address-space limit leaves OpenBLAS its buffers and the command what it
// reserves after (reserves), sizes both pools and runs one matmul so that the calling thread's
// buffer is taken now. Run it on the torch thread, before loading a model or anything large.
func Apply(s Setting, reserves ...Reserve) (InEffect, error) {
	if s.IntraOp < 1 || s.BLAS < 1 {
		return InEffect{}, fmt.Errorf("threads: %v: both pools need at least one thread", s)
	}
	var e InEffect
	err := torch.Do(func() error {
		// Check before setting: new OpenBLAS workers map their buffers as they start, and
		// would spin there.
		_, blasBefore := torch.Threads()
		if err := checkAddressSpace(s, blasBefore, reserves); err != nil {
			return err
		}
		torch.SetNumThreads(s.IntraOp)
		torch.SetBLASThreads(s.BLAS)
		e.Setting = s
		e.ReadIntraOp, e.ReadBLAS = torch.Threads()
		warmBLAS()
		return nil
	})
	return e, err
}

// checkAddressSpace fails when ulimit -v leaves less than what is still to be mapped: one BLAS
// buffer per thread that may call a matmul (the intra-op threads) and per OpenBLAS worker beyond
// those started when the library loaded (blasBefore; -1: not OpenBLAS, none), the command's
// reserves, the Go heap's growth and a margin. When it passes, the Go heap is held to its share
// (limitGoHeap).
func checkAddressSpace(s Setting, blasBefore int, reserves []Reserve) error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_AS, &lim); err != nil || lim.Cur == math.MaxUint64 {
		return nil
	}
	used, err := vmSize()
	if err != nil {
		return nil // no /proc: nothing to check against
	}
	buffers := 0
	if blasBefore >= 0 {
		buffers = s.IntraOp + max(s.BLAS-blasBefore, 0)
	}
	if err := headroom(lim.Cur, used, buffers, reserves); err != nil {
		return err
	}
	limitGoHeap(lim.Cur-used-need(buffers, reserves), reserves)
	return nil
}

// need is what the check asks to be free: buffers BLAS buffers, the reserves, the Go heap's
// growth and the margin.
func need(buffers int, reserves []Reserve) uint64 {
	n := uint64(buffers)*blasBuffer + headroomMargin + goHeapGrowth
	for _, r := range reserves {
		n += uint64(max(r.Bytes, 0))
	}
	return n
}

// headroom is the check itself: limit and used in bytes, buffers the BLAS buffers still to map,
// reserves what the command takes after.
func headroom(limit, used uint64, buffers int, reserves []Reserve) error {
	n := need(buffers, reserves)
	if used <= limit && limit-used >= n {
		return nil
	}
	parts := []string{fmt.Sprintf("%d MiB for %d more OpenBLAS thread buffers", uint64(buffers)*blasBuffer>>20, buffers)}
	for _, r := range reserves {
		parts = append(parts, fmt.Sprintf("%d MiB for %s", r.Bytes>>20, r.What))
	}
	parts = append(parts, fmt.Sprintf("%d MiB for the Go heap's growth and %d MiB margin", goHeapGrowth>>20, headroomMargin>>20))
	free := int64(limit) - int64(used)
	return fmt.Errorf("threads: %w: ulimit -v: %d MiB leaves %d MiB free, and this command needs %d MiB more (%s); short of it, "+
		"OpenBLAS retries its allocation forever and the Go runtime stops with a fatal error. Raise or lift ulimit -v, "+
		"or ask for less (fewer threads with --threads 1, a shorter --max-len, fewer sequences)",
		ErrAddressSpace, limit>>20, free>>20, n>>20, strings.Join(parts, ", "))
}

// limitGoHeap sets the Go runtime's soft memory limit, unless GOMEMLIMIT set one, to what Go
// holds now, its reserves and growth, and its share of the slack left after every reserve: the
// collector then runs before the heap outgrows the address space, rather than after (a
// collection that falls behind under load would let the heap map arenas that are not there).
func limitGoHeap(slack uint64, reserves []Reserve) {
	if debug.SetMemoryLimit(-1) != math.MaxInt64 {
		return
	}
	sample := []metrics.Sample{{Name: "/memory/classes/total:bytes"}}
	metrics.Read(sample)
	budget := sample[0].Value.Uint64() + goHeapGrowth + slack/2
	for _, r := range reserves {
		if r.Go {
			budget += uint64(max(r.Bytes, 0))
		}
	}
	debug.SetMemoryLimit(int64(min(budget, math.MaxInt64)))
}

// warmBLAS multiplies two small matrices: OpenBLAS maps the calling thread's buffer on first use.
func warmBLAS() {
	s := torch.NewScope()
	defer s.Close()
	a := torch.Ones([]int64{64, 64}, torch.Float32, torch.CPU)
	a.Matmul(a)
}

// vmSize reads the process's mapped address space (VmSize of /proc/self/status) in bytes.
func vmSize() (uint64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmSize:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmSize in /proc/self/status")
}
