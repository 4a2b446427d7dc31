package sandbox

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The syscall filter. RLIMIT_AS bounds what a process maps, not what it holds: a memfd written
// with write() and never mapped holds its pages with no mapping at all (a run limited to 512 MiB
// held 1.5 GiB in memfds), and System V shared memory and message queues outlive the process
// that made them. The helper installs a seccomp filter before it execs the interpreter that
// makes these calls fail with EPERM, so the rlimits and the tmpfs size bound the run's memory
// even where no cgroup counts it. Ordinary Python never makes these calls (os.memfd_create is
// the only standard-library entry point); multiprocessing is refused by the audit hook anyway.
//
// The filter is a classic BPF program: check the architecture (another ABI, such as i386's int
// 0x80 or x32 on x86-64, would number calls differently: refused whole), load the call number,
// compare it with each denied number, allow the rest.

// seccomp_data offsets (linux/seccomp.h): int nr; __u32 arch; ...
const (
	seccompDataNr   = 0
	seccompDataArch = 4
	// x32SyscallBit marks x32 calls on x86-64; they would bypass the numbers above.
	x32SyscallBit = 0x40000000
)

// seccompSupported says whether this build has a filter for this architecture, in words for the
// isolation note.
func seccompSupported() (bool, string) {
	if auditArch == 0 {
		return false, "none (no filter for " + runtime.GOARCH + ")"
	}
	return true, "memfd_create, memfd_secret, shmget, msgget, mq_open refused"
}

// seccompProgram is the filter: EPERM for the denied calls and for any other ABI, allow the rest.
func seccompProgram() []unix.SockFilter {
	const (
		ld  = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jge = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
		ret = unix.BPF_RET | unix.BPF_K
	)
	// Layout: [arch check][nr load][x32 check][one jeq per denied call][allow][deny]. Jump
	// offsets count instructions after the jump; deny is the last instruction.
	n := len(deniedSyscalls)
	prog := []unix.SockFilter{
		{Code: ld, K: seccompDataArch},
		{Code: jeq, K: auditArch, Jt: 0, Jf: uint8(n + 3)}, // other ABI: deny
		{Code: ld, K: seccompDataNr},
		{Code: jge, K: x32SyscallBit, Jt: uint8(n + 1), Jf: 0},
	}
	for i, nr := range deniedSyscalls {
		prog = append(prog, unix.SockFilter{Code: jeq, K: nr, Jt: uint8(n - i), Jf: 0})
	}
	return append(prog,
		unix.SockFilter{Code: ret, K: unix.SECCOMP_RET_ALLOW},
		unix.SockFilter{Code: ret, K: unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)&unix.SECCOMP_RET_DATA},
	)
}

// installSeccomp applies the filter to the calling thread, which then execs the interpreter
// (the filter survives exec). It needs no_new_privs, set here, unless the thread is privileged.
func installSeccomp() error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	prog := seccompProgram()
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&fprog)), 0, 0); err != nil {
		return fmt.Errorf("seccomp filter: %w", err)
	}
	runtime.KeepAlive(prog)
	return nil
}
