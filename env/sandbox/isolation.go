package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
)

// nobody is the unprivileged uid/gid the sandbox drops to when it starts as root.
const nobody = 65534

// Isolation is the OS-level isolation New found to work on this machine, strongest first:
//
//   - as root: a new network namespace and the uid/gid nobody (65534), so RLIMIT_NPROC bites
//     and file permissions apply; this needs an interpreter that nobody may execute;
//   - as root, when nobody cannot run the interpreter (it lives under /root): a new network
//     namespace only;
//   - not root: a new user namespace (uid mapped to itself) holding a new network namespace,
//     where the kernel permits unprivileged user namespaces;
//   - otherwise none: the audit hook and rlimits of the preamble remain.
type Isolation struct {
	// NetNS is true when runs get their own network namespace (no interfaces but a down lo).
	NetNS bool
	// UserNS is true when that namespace sits in a new user namespace (unprivileged case).
	UserNS bool
	// Nobody is true when runs drop to uid/gid 65534.
	Nobody bool
	// Note says in words what was chosen and why, for logs.
	Note string
}

func (iso Isolation) attr() *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if iso.NetNS {
		a.Cloneflags |= syscall.CLONE_NEWNET
	}
	if iso.UserNS {
		a.Cloneflags |= syscall.CLONE_NEWUSER
		uid, gid := os.Getuid(), os.Getgid()
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		a.GidMappingsEnableSetgroups = false
	}
	if iso.Nobody {
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

// probe tries each isolation mode with a trivial program and keeps the first that runs.
func probe(python string) Isolation {
	var tries []Isolation
	if os.Geteuid() == 0 {
		tries = []Isolation{
			{NetNS: true, Nobody: true, Note: "network namespace, uid nobody"},
			{NetNS: true, Note: "network namespace; running as root (nobody cannot execute " + python + "), so RLIMIT_NPROC is not enforced by the kernel"},
			{Note: "no namespaces (clone refused); running as root"},
		}
	} else {
		tries = []Isolation{
			{NetNS: true, UserNS: true, Note: "user + network namespace"},
			{Note: "no namespaces (unprivileged user namespaces refused)"},
		}
	}
	var why []string
	for _, iso := range tries {
		cmd := exec.Command(python, "-I", "-S", "-c", "pass")
		cmd.Dir = "/"
		cmd.Env = []string{}
		cmd.SysProcAttr = iso.attr()
		err := cmd.Run()
		if err == nil {
			if len(why) > 0 {
				iso.Note += " [stronger modes failed: " + strings.Join(why, "; ") + "]"
			}
			return iso
		}
		why = append(why, fmt.Sprintf("%s: %v", iso.Note, err))
	}
	return Isolation{Note: "no isolation mode could start python: " + strings.Join(why, "; ")}
}
