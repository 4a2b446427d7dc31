package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// A trainer killed mid-run (SIGKILL, OOM) cannot clean up: its runs' directories stay in
// Config.TempDir and its pool cgroups in the cgroup tree. Both are named after their owner
// (ownerTag), and New removes those whose owner is dead.

// ownerTag names this process in what it makes: its PID namespace (the inode of
// /proc/self/ns/pid) and its pid, as "<namespace>-<pid>-". Containers that share a directory
// (the containers of one pod share a parent cgroup) number their processes alike; a leftover is
// removed only by a process of its own namespace, where "pid is dead" means what it says.
func ownerTag() string {
	var st syscall.Stat_t
	_ = syscall.Stat("/proc/self/ns/pid", &st)
	return fmt.Sprintf("%d-%d-", st.Ino, os.Getpid())
}

// sweepLeftovers calls remove on each directory in parent named prefix + an owner tag of this
// namespace whose process is dead.
func sweepLeftovers(parent, prefix string, remove func(dir string)) {
	tag := ownerTag()
	ns := tag[:strings.IndexByte(tag, '-')+1] // "<namespace>-"
	entries, _ := os.ReadDir(parent)
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefix+ns)
		if !ok || !e.IsDir() || strings.HasPrefix(e.Name(), prefix+tag) {
			continue
		}
		pidText, _, _ := strings.Cut(rest, "-")
		if pid, err := strconv.Atoi(pidText); err == nil && pid > 0 && !processAlive(pid) {
			remove(filepath.Join(parent, e.Name()))
		}
	}
}

// processAlive is true while pid exists and is not a zombie (dead, not yet reaped by its
// parent).
func processAlive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		err := syscall.Kill(pid, 0) // no /proc: existence is all that can be known
		return err == nil || errors.Is(err, syscall.EPERM)
	}
	// pid (comm) state ...: comm may hold spaces and parentheses, so look after the last ')'.
	rest := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(rest) > 0 && rest[0] != "Z" && rest[0] != "X"
}
