package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// A new Sandbox removes what dead processes of its own PID namespace left behind (a trainer
// SIGKILLed mid-run: run directories, pool cgroups), and nothing else: not its own, not a live
// process's, not another namespace's (another container's pid numbers mean nothing here), not
// what merely looks alike.
func TestSweepLeftovers(t *testing.T) {
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Skip(err)
	}
	tag := ownerTag() // namespace + "-" + pid + "-"
	ns := tag[:len(tag)-len(strconv.Itoa(os.Getpid()))-1]
	const prefix = "mtgrpo-py-"
	parent := t.TempDir()
	names := map[string]bool{ // name: removed
		prefix + ns + strconv.Itoa(dead.Process.Pid) + "-123": true,
		prefix + tag + "123":                                       false,
		prefix + ns + strconv.Itoa(os.Getppid()) + "-123":          false,
		prefix + "1-" + strconv.Itoa(dead.Process.Pid) + "-123":    false,
		"other-" + ns + strconv.Itoa(dead.Process.Pid) + "-123":    false,
		prefix + ns + "x" + strconv.Itoa(dead.Process.Pid) + "-12": false,
	}
	for n := range names {
		if err := os.MkdirAll(filepath.Join(parent, n, "work"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sweepLeftovers(parent, prefix, func(dir string) { os.RemoveAll(dir) })
	for n, removed := range names {
		if _, err := os.Stat(filepath.Join(parent, n)); os.IsNotExist(err) != removed {
			t.Errorf("%s: removed %v, want %v", n, os.IsNotExist(err), removed)
		}
	}
}
