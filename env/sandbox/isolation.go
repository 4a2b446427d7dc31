package sandbox

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"
)

// nobody is the unprivileged uid/gid the sandbox drops to when it starts as root.
const nobody = 65534

// Guarantee is one kernel-enforced property of every run. Config.Require lists the ones a
// configuration demands: New fails rather than run without them.
type Guarantee uint

const (
	// MinimalRoot: the run sees only the minimal root filesystem (no /etc, /home, /proc, no
	// other run's files), and all it writes is bounded by Limits.DiskBytes.
	MinimalRoot Guarantee = 1 << iota
	// NoNetwork: the run has its own network namespace with only a down loopback interface.
	NoNetwork
	// NoLeftovers: the run has its own PID namespace; nothing it starts outlives it.
	NoLeftovers
	// Unprivileged: the interpreter holds no capabilities and, where the trainer is root, runs
	// as uid nobody (so RLIMIT_NPROC is enforced and file permissions apply).
	Unprivileged
	// MemoryAccounted: a memory cgroup counts every page of the run (heap, memfd, tmpfs, shared
	// memory, page tables) against its limit, and all runs' pages against the budget.
	MemoryAccounted
	// SyscallFilter: a seccomp filter refuses the calls that hold memory outside RLIMIT_AS and
	// outside the run's tmpfs (memfd_create, memfd_secret, SysV shm and message queues, POSIX
	// message queues).
	SyscallFilter
)

var guaranteeNames = []string{"minimal root", "no network", "no leftovers", "unprivileged", "memory accounted", "syscall filter"}

func (g Guarantee) String() string {
	var names []string
	for i, n := range guaranteeNames {
		if g&(1<<i) != 0 {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// Isolation is the OS-level isolation New found to work on this machine. It tries, strongest
// first, and keeps the first mode in which a probe program runs:
//
//   - as root: minimal root (see chroot.go) + network, IPC and PID namespaces + uid/gid nobody;
//   - not root: a user namespace holding the same minimal root and namespaces, where the kernel
//     permits unprivileged user namespaces;
//   - as root: network, IPC and PID namespaces + uid nobody;
//   - network, IPC and PID namespaces only (root without capabilities), or inside a user
//     namespace (not root);
//   - none: the audit hook, the syscall filter and the rlimits remain.
//
// Each mode is tried with a memory cgroup where one can be made (cgroup.go) and with the syscall
// filter; a mode is retried without either when that alone is what failed.
type Isolation struct {
	// Chroot is true when runs see only the minimal root filesystem.
	Chroot bool
	// NetNS is true when runs get their own network namespace (no interfaces but a down lo) and
	// their own IPC namespace (System V and POSIX IPC objects die with the run).
	NetNS bool
	// PidNS is true when runs get their own PID namespace, whose init is the interpreter: when it
	// exits the kernel kills every process it left behind, even one that left the process group
	// (setsid) through a hole in the audit hook.
	PidNS bool
	// UserNS is true when the namespaces sit in a new user namespace (unprivileged case).
	UserNS bool
	// Nobody is true when runs drop to uid/gid 65534.
	Nobody bool
	// Memory is how a run's memory is bounded (cgroup v1, cgroup v2, or rlimits alone).
	Memory MemoryMode
	// Seccomp is true when the syscall filter is installed before the interpreter starts.
	Seccomp bool
	// Note says in words what was chosen and why the stronger modes were not, for logs.
	Note string
}

// Guarantees lists the guarantees this mode gives.
func (iso Isolation) Guarantees() Guarantee {
	var g Guarantee
	set := func(ok bool, x Guarantee) {
		if ok {
			g |= x
		}
	}
	set(iso.Chroot, MinimalRoot)
	set(iso.NetNS, NoNetwork)
	set(iso.PidNS, NoLeftovers)
	// The helper empties the interpreter's capabilities in every mode; as root, only the drop
	// to nobody makes it unprivileged, since uid 0 still owns the host's files.
	set(iso.Nobody || (os.Geteuid() != 0), Unprivileged)
	set(iso.Memory != MemoryRlimits, MemoryAccounted)
	set(iso.Seccomp, SyscallFilter)
	return g
}

// attr sets up the helper: its own process group (killed whole), SIGKILL when the parent dies
// (the helper re-arms it after its own uid drop, which clears it), and the namespaces of the
// mode. Pdeathsig follows the OS thread that started the child; Go keeps its threads alive unless
// a goroutine exits while locked to one, which the sandbox's callers never do.
func (iso Isolation) attr() *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if iso.NetNS {
		a.Cloneflags |= syscall.CLONE_NEWNET | syscall.CLONE_NEWIPC
	}
	if iso.PidNS {
		a.Cloneflags |= syscall.CLONE_NEWPID
	}
	if iso.Chroot {
		a.Cloneflags |= syscall.CLONE_NEWNS
	}
	if iso.UserNS {
		a.Cloneflags |= syscall.CLONE_NEWUSER
		uid, gid := os.Getuid(), os.Getgid()
		inside := uid // keep the same uid inside...
		if iso.Chroot {
			inside = 0 // ...except that the helper needs root inside the namespace to mount
		}
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: inside, HostID: uid, Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: min(inside, gid), HostID: gid, Size: 1}}
		a.GidMappingsEnableSetgroups = false
	}
	return a
}

// candidates lists the modes to try on this machine, strongest first.
func candidates() []Isolation {
	if os.Geteuid() == 0 {
		return []Isolation{
			{Chroot: true, NetNS: true, PidNS: true, Nobody: true, Note: "minimal root, network, IPC and PID namespaces, uid nobody"},
			{NetNS: true, PidNS: true, Nobody: true, Note: "network, IPC and PID namespaces, uid nobody (no minimal root: files readable by nobody stay reachable, other runs' directories included)"},
			{NetNS: true, PidNS: true, Note: "network, IPC and PID namespaces; uid 0 without capabilities, so RLIMIT_NPROC is not enforced and root's own files stay reachable"},
			{Note: "no namespaces; uid 0 without capabilities"},
		}
	}
	return []Isolation{
		{Chroot: true, NetNS: true, PidNS: true, UserNS: true, Note: "user namespace with minimal root, network, IPC and PID namespaces"},
		{NetNS: true, PidNS: true, UserNS: true, Note: "user + network + IPC + PID namespaces (no minimal root)"},
		{Note: "no namespaces (unprivileged user namespaces refused)"},
	}
}

// probe runs a tiny program in each candidate mode and keeps the first that works. A mode whose
// probe failed only because the helper could not join the memory cgroup or install the syscall
// filter is retried without that part, and the note says so. ok is false when no mode works.
func (s *Sandbox) probe() (Isolation, bool) {
	var why []string
	l := s.limits
	l.Wall = 10 * time.Second
	memory, memNote := MemoryRlimits, s.poolNote
	if s.pool != nil {
		memory = s.pool.mode
	}
	seccomp, secNote := seccompSupported()
	for _, iso := range candidates() {
		for {
			iso.Memory, iso.Seccomp = memory, seccomp
			r, err := s.run(context.Background(), "print('ok')", iso, l)
			if err == nil && r.OK() && r.Stdout == "ok\n" {
				if memory != MemoryRlimits {
					memNote = fmt.Sprintf("%s, %d MiB per run, %d MiB for all runs", memory, iso.reservation(s.limits)>>20, s.budget.Total()>>20)
				}
				iso.Note = fmt.Sprintf("%s; memory: %s; syscall filter: %s", iso.Note, memNote, secNote)
				if len(why) > 0 {
					iso.Note += " [stronger modes failed: " + strings.Join(why, "; ") + "]"
				}
				return iso, true
			}
			reason := failure(r, err)
			switch {
			case memory != MemoryRlimits && strings.Contains(reason, helperCgroupFailed):
				memory, memNote = MemoryRlimits, "rlimits only (the helper could not join the cgroup: "+reason+")"
				continue
			case seccomp && strings.Contains(reason, helperSeccompFailed):
				seccomp, secNote = false, "none ("+reason+")"
				continue
			}
			why = append(why, iso.Note+": "+reason)
			break
		}
	}
	return Isolation{Note: "no isolation mode could run python: " + strings.Join(why, "; ")}, false
}

// failure says in one short line why a probe run failed.
func failure(r Result, err error) string {
	reason := fmt.Sprint(err)
	if err == nil {
		reason = strings.TrimSpace(r.Stderr)
		if reason == "" {
			reason = fmt.Sprintf("exit status %d %s, stdout %q", r.ExitCode, r.Signal, r.Stdout)
		}
	}
	if len(reason) > 300 {
		reason = reason[:300]
	}
	return reason
}
