package threads

import (
	"bufio"
	"fmt"
	"math"
	"os"
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

// Apply checks that the address-space limit leaves OpenBLAS its buffers, sizes both pools and runs
// one matmul so that the calling thread's buffer is taken now. Run it on the torch thread, before
// loading a model.
func Apply(s Setting) (InEffect, error) {
	if s.IntraOp < 1 || s.BLAS < 1 {
		return InEffect{}, fmt.Errorf("threads: %v: both pools need at least one thread", s)
	}
	var e InEffect
	err := torch.Do(func() error {
		// Check before setting: new OpenBLAS workers map their buffers as they start, and
		// would spin there.
		_, blasBefore := torch.Threads()
		if err := checkAddressSpace(s, blasBefore); err != nil {
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

// checkAddressSpace fails when ulimit -v leaves less than the BLAS buffers still to be mapped
// need: one per thread that may call a matmul (the intra-op threads) and one per OpenBLAS worker
// beyond those started when the library loaded (blasBefore; -1: not OpenBLAS, nothing to check).
func checkAddressSpace(s Setting, blasBefore int) error {
	if blasBefore < 0 {
		return nil
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_AS, &lim); err != nil || lim.Cur == math.MaxUint64 {
		return nil
	}
	used, err := vmSize()
	if err != nil {
		return nil // no /proc: nothing to check against
	}
	return headroom(lim.Cur, used, s.IntraOp+max(s.BLAS-blasBefore, 0))
}

// headroom is the check itself: limit and used in bytes, buffers the BLAS buffers still to map.
func headroom(limit, used uint64, buffers int) error {
	need := uint64(buffers)*blasBuffer + headroomMargin
	if used <= limit && limit-used >= need {
		return nil
	}
	free := int64(limit) - int64(used)
	return fmt.Errorf("threads: the address-space limit (ulimit -v: %d MiB) leaves %d MiB free, and OpenBLAS needs "+
		"%d MiB for %d more thread buffers (plus %d MiB margin); short of it, OpenBLAS retries its allocation "+
		"forever. Raise or lift ulimit -v, or use fewer threads (--threads 1)",
		limit>>20, free>>20, uint64(buffers)*blasBuffer>>20, buffers, headroomMargin>>20)
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
