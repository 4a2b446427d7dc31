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

// Isolation is the OS-level isolation New found to work on this machine. It tries, strongest
// first, and keeps the first mode in which a probe program runs:
//
//   - as root: minimal root (see chroot.go) + network and PID namespaces + uid/gid nobody;
//   - not root: a user namespace holding the same minimal root, network and PID namespaces,
//     where the kernel permits unprivileged user namespaces;
//   - as root: network and PID namespaces + uid nobody, when nobody may run the interpreter;
//   - network and PID namespaces only (root), or inside a user namespace (not root);
//   - none: the audit hook and rlimits of the preamble remain.
type Isolation struct {
	// Chroot is true when runs see only the minimal root filesystem.
	Chroot bool
	// NetNS is true when runs get their own network namespace (no interfaces but a down lo).
	NetNS bool
	// PidNS is true when runs get their own PID namespace, whose init is the interpreter: when it
	// exits the kernel kills every process it left behind, even one that left the process group
	// (setsid) through a hole in the audit hook.
	PidNS bool
	// UserNS is true when the namespaces sit in a new user namespace (unprivileged case).
	UserNS bool
	// Nobody is true when runs drop to uid/gid 65534.
	Nobody bool
	// Note says in words what was chosen and why the stronger modes were not, for logs.
	Note string
}

// attr sets up the child: its own process group (killed whole), SIGKILL when the parent dies
// (Pdeathsig follows the OS thread that started the child; Go keeps its threads alive unless a
// goroutine exits while locked to one, which the sandbox's callers never do), and the
// namespaces of the mode.
func (iso Isolation) attr() *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if iso.NetNS {
		a.Cloneflags |= syscall.CLONE_NEWNET
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
	if iso.Nobody && !iso.Chroot { // with a chroot the helper drops privileges after mounting
		a.Credential = &syscall.Credential{Uid: nobody, Gid: nobody, Groups: []uint32{}}
	}
	return a
}

// prepareDir hands the run's directory to the sandbox user.
func (iso Isolation) prepareDir(dir string) error {
	if !iso.Nobody {
		return nil
	}
	for _, p := range []string{dir, dir + "/main.py"} {
		if err := os.Chown(p, nobody, nobody); err != nil {
			return fmt.Errorf("sandbox: chown %s: %w", p, err)
		}
	}
	return nil
}

// candidates lists the modes to try on this machine, strongest first.
func candidates() []Isolation {
	if os.Geteuid() == 0 {
		return []Isolation{
			{Chroot: true, NetNS: true, PidNS: true, Nobody: true, Note: "minimal root, network and PID namespaces, uid nobody"},
			{NetNS: true, PidNS: true, Nobody: true, Note: "network and PID namespaces, uid nobody (no minimal root: files readable by nobody stay reachable)"},
			{NetNS: true, PidNS: true, Note: "network and PID namespaces; running as root, so RLIMIT_NPROC is not enforced and files stay reachable"},
			{Note: "no namespaces; running as root"},
		}
	}
	return []Isolation{
		{Chroot: true, NetNS: true, PidNS: true, UserNS: true, Note: "user namespace with minimal root, network and PID namespaces"},
		{NetNS: true, PidNS: true, UserNS: true, Note: "user + network + PID namespaces (no minimal root)"},
		{Note: "no namespaces (unprivileged user namespaces refused)"},
	}
}

// probe runs a tiny program in each candidate mode and keeps the first that works.
func (s *Sandbox) probe() Isolation {
	var why []string
	l := s.limits
	l.Wall = 10 * time.Second
	for _, iso := range candidates() {
		r, err := s.run(context.Background(), "print('ok')", iso, l)
		if err == nil && r.OK() && r.Stdout == "ok\n" {
			if len(why) > 0 {
				iso.Note += " [stronger modes failed: " + strings.Join(why, "; ") + "]"
			}
			return iso
		}
		reason := fmt.Sprint(err)
		if err == nil {
			reason = strings.TrimSpace(r.Stderr)
			if len(reason) > 200 {
				reason = reason[:200]
			}
		}
		why = append(why, iso.Note+": "+reason)
	}
	return Isolation{Note: "no isolation mode could run python: " + strings.Join(why, "; ")}
}
