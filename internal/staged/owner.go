package staged

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// owner identifies the process that writes a temporary.
type owner struct {
	pid   int
	start uint64 // process start time in clock ticks since boot; 0 when unknown
	host  string
}

// self is this process as an owner (read once).
var self = sync.OnceValue(func() owner {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	pid := os.Getpid()
	start, _ := startTime(pid)
	return owner{pid: pid, start: start, host: strings.ReplaceAll(host, "/", "_")}
})

func (o owner) String() string { return fmt.Sprintf("%d-%d-%s", o.pid, o.start, o.host) }

// temporary is the name of a parsed temporary.
type temporary struct {
	base  string // the destination's base name
	kind  string // "staged" or "old"
	owner owner
}

var temporaryName = regexp.MustCompile(`^\.(.+)\.(staged|old)-(\d+)-(\d+)-(.+)$`)

// parseTemporary reads a temporary's name; ok is false for any other name.
func parseTemporary(name string) (t temporary, ok bool) {
	m := temporaryName.FindStringSubmatch(name)
	if m == nil {
		return t, false
	}
	pid, err1 := strconv.Atoi(m[3])
	start, err2 := strconv.ParseUint(m[4], 10, 64)
	if err1 != nil || err2 != nil || pid <= 0 {
		return t, false
	}
	return temporary{base: m[1], kind: m[2], owner: owner{pid: pid, start: start, host: m[5]}}, true
}

// deadLocal reports whether o is a process of this host (me's) that no longer runs: its pid is
// free, or taken by a process that started at another time than o's.
func deadLocal(o, me owner) bool {
	if o.host != me.host {
		return false
	}
	if o.pid == me.pid {
		return o.start != me.start && o.start != 0 && me.start != 0
	}
	err := syscall.Kill(o.pid, 0)
	if err != nil && !errors.Is(err, syscall.EPERM) {
		return true
	}
	if o.start == 0 {
		return false
	}
	start, ok := startTime(o.pid)
	return ok && start != o.start
}

// startTime is a process's start time in clock ticks since boot, from /proc/<pid>/stat (field
// 22, counted after the command name, which may hold spaces and parentheses).
func startTime(pid int) (uint64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return 0, false
	}
	v, err := strconv.ParseUint(f[19], 10, 64)
	return v, err == nil
}
