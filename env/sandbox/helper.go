package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// Every run starts as the helper: a binary that imports this package (cmd/mtgrpo-sandbox, or the
// running binary itself; helper_binary.go says which), whose copy of this package's init sees
// helperEnv, prepares the process and execs the interpreter, which keeps the helper's pid. The helper exists because these steps must happen between clone and exec, where Go's exec
// runs no code of ours, and in this order:
//
//  1. join the run's memory cgroup, so every page of the interpreter is charged to it;
//  2. in the minimal-root mode, build the root and chroot into it (chroot.go);
//  3. drop to uid nobody, or empty the capability sets;
//  4. re-arm the parent-death signal: the kernel clears it when the uid changes, and without it
//     an interpreter whose trainer was SIGKILLed ran on forever (as the init of its PID
//     namespace, nothing else would stop it). Then check that the trainer did not die before
//     the signal was re-armed: through a pipe whose only write end the trainer holds (getppid
//     is no use: it is 0 inside a PID namespace);
//  5. install the syscall filter (seccomp.go);
//  6. exec the interpreter.
//
// A failure is written to the trainer through the error pipe and the helper exits with
// helperExit; the pipe closes on exec, so the trainer tells "the helper failed" from "the
// program failed" without guessing from exit codes. Every binary that imports this package
// carries the helper; nothing needs to call it. The helper refuses a spec of another protocol
// (helper_binary.go) rather than carry out part of it.

const helperEnv = "MTGRPO_SANDBOX_HELPER"

// Descriptors the trainer passes to the helper (ExtraFiles) and the helper's exit status.
const (
	aliveFD    = 3 // read end of a pipe whose write end only the trainer holds: EOF = trainer gone
	errorFD    = 4 // write end of the pipe the helper reports its failure on
	helperExit = 125
)

// Failure prefixes probe recognises: a mode is retried without the part that failed.
const (
	helperCgroupFailed  = "join memory cgroup"
	helperSeccompFailed = "install syscall filter"
)

// errTrainerGone ends a helper whose trainer died before the parent-death signal was re-armed.
var errTrainerGone = errors.New("the trainer exited")

// helperSpec is what the trainer tells the helper, as JSON in helperEnv.
type helperSpec struct {
	Protocol string   // the trainer's HelperProtocol: the helper runs only a spec of its own
	Python   string   // interpreter path (the same inside the minimal root, via the binds), or a program's
	Args     []string // argv, Args[0] included
	Env      []string // the interpreter's environment
	// UID is the uid/gid to switch to; -1 keeps the current one and empties the capabilities.
	UID int
	// Cgroup is the cgroup.procs file of the run's memory cgroup; "" for none.
	Cgroup  string
	Seccomp bool
	// Root is the minimal root to build and enter; nil runs in the current directory.
	Root *rootSpec
	// Rlimits are set (soft = hard) just before exec: programs (program.go) get their limits
	// here; the interpreter's preamble sets its own.
	Rlimits []rlimit
}

// rlimit is one resource limit for the helper to set.
type rlimit struct {
	Resource int
	Value    uint64
}

func init() {
	if os.Getenv(helperPingEnv) != "" {
		fmt.Println(helperGreeting + HelperProtocol())
		os.Exit(0)
	}
	if spec := os.Getenv(helperEnv); spec != "" {
		// Capabilities, the parent-death signal and the seccomp filter are per thread: the thread
		// that sets them must be the one that execs. init runs on the main thread, locked.
		runtime.LockOSThread()
		err := runHelper(spec)
		if !errors.Is(err, errTrainerGone) {
			report := os.NewFile(errorFD, "helper-error")
			fmt.Fprint(report, err)
		}
		os.Exit(helperExit)
	}
}

// runHelper never returns on success: it ends in exec.
func runHelper(specJSON string) error {
	var s helperSpec
	if err := json.Unmarshal([]byte(specJSON), &s); err != nil {
		return err
	}
	if s.Protocol != HelperProtocol() {
		return fmt.Errorf("the trainer speaks protocol %q, this helper %q: build both from the same source (make build)", s.Protocol, HelperProtocol())
	}
	if s.Cgroup != "" {
		if err := os.WriteFile(s.Cgroup, []byte("0"), 0); err != nil {
			return fmt.Errorf("%s: %w", helperCgroupFailed, err)
		}
	}
	if s.Root != nil {
		if err := buildRoot(*s.Root, s.UID); err != nil {
			return err
		}
	}
	if s.UID >= 0 {
		if err := dropTo(s.UID); err != nil {
			return err
		}
	} else if err := dropCaps(); err != nil {
		return err
	}
	if err := rearmParentDeath(); err != nil {
		return err
	}
	if s.Seccomp {
		if err := installSeccomp(); err != nil {
			return fmt.Errorf("%s: %w", helperSeccompFailed, err)
		}
	}
	for _, r := range s.Rlimits {
		if err := unix.Setrlimit(r.Resource, &unix.Rlimit{Cur: r.Value, Max: r.Value}); err != nil {
			return fmt.Errorf("setrlimit %d: %w", r.Resource, err)
		}
	}
	unix.CloseOnExec(aliveFD)
	unix.CloseOnExec(errorFD)
	return syscall.Exec(s.Python, s.Args, s.Env)
}

// rearmParentDeath sets SIGKILL on the trainer's death again (a uid change cleared it), then
// returns errTrainerGone if the trainer already died: its end of the alive pipe is closed.
func rearmParentDeath() error {
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0, 0, 0); err != nil {
		return fmt.Errorf("parent-death signal: %w", err)
	}
	if trainerGone(aliveFD) {
		return errTrainerGone
	}
	return nil
}

// trainerGone reports whether every write end of the pipe whose read end is fd is closed.
func trainerGone(fd int) bool {
	p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(p, 0)
		if err == syscall.EINTR {
			continue
		}
		return err == nil && n > 0 && p[0].Revents&(unix.POLLHUP|unix.POLLERR) != 0
	}
}

// dropCaps leaves the helper with no capabilities, through the exec that follows. Inside a user
// namespace the helper is uid 0 with every capability of that namespace, and an interpreter
// exec'd as uid 0 would get them all back: with CAP_SYS_CHROOT, code past the audit hook could
// leave the minimal root (chroot into a subdirectory, chdir up, chroot ".") and read or write
// whatever the host user may; with CAP_SYS_ADMIN it could mount an unbounded tmpfs. Emptying the
// bounding set stops exec from granting any, and capset clears what the helper holds now.
func dropCaps() error {
	for c := 0; c < 64; c++ {
		err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0)
		if err == syscall.EINVAL {
			break // past the kernel's last capability
		}
		if err == syscall.EPERM && os.Geteuid() != 0 {
			// An unprivileged helper outside a user namespace has no CAP_SETPCAP, and no
			// capability to lose: no_new_privs, set below, keeps exec from granting any.
			break
		}
		if err != nil {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
		}
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData // all zero: no effective, permitted or inheritable capability
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	return unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
}

func dropTo(uid int) error {
	if err := syscall.Setgroups([]int{}); err != nil {
		return fmt.Errorf("setgroups: %w", err)
	}
	if err := syscall.Setgid(uid); err != nil {
		return fmt.Errorf("setgid: %w", err)
	}
	if err := syscall.Setuid(uid); err != nil {
		return fmt.Errorf("setuid: %w", err)
	}
	return nil
}
