package sandbox

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func newPrograms(t *testing.T) *Programs {
	t.Helper()
	p, err := NewPrograms(ProgramConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(p)
	return p
}

// A program reads its stdin and environment, and what it started in the background dies with it.
func TestProgramRuns(t *testing.T) {
	p := newPrograms(t)
	r, err := p.Run(context.Background(), Program{Path: "sh", Args: []string{"-c", `cat; echo " $FOO"; sleep 30 & echo $!`},
		Env: []string{"FOO=bar", "PATH=/usr/bin:/bin"}, Stdin: []byte("task")})
	if err != nil || !r.OK() {
		t.Fatalf("%+v %v", r, err)
	}
	lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
	if len(lines) != 2 || lines[0] != "task bar" {
		t.Fatalf("stdout %q", r.Stdout)
	}
	pid, _ := strconv.Atoi(lines[1])
	if !gone(pid, 5*time.Second) {
		t.Errorf("the background sleep %d outlived the program", pid)
	}
}

// gone waits until pid is dead (no process, or a zombie left for its new parent to reap).
func gone(pid int, wait time.Duration) bool {
	for end := time.Now().Add(wait); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil || strings.Contains(string(stat), ") Z ") {
			return true
		}
	}
	return syscall.Kill(pid, 0) != nil
}

// The wall limit kills a program that hangs; the memory limit stops one that allocates past it.
func TestProgramLimits(t *testing.T) {
	p := newPrograms(t)
	t0 := time.Now()
	r, err := p.Run(context.Background(), Program{Path: "sleep", Args: []string{"30"}, Limits: ProgramLimits{Wall: 300 * time.Millisecond}})
	if err != nil || !r.TimedOut || time.Since(t0) > 10*time.Second {
		t.Errorf("hanging program: %+v %v after %v", r, err, time.Since(t0))
	}
	r, err = p.Run(context.Background(), Program{Path: "python3", Args: []string{"-c", "x = bytearray(400 << 20); print('allocated')"},
		Limits: ProgramLimits{MemoryBytes: 128 << 20}})
	if err != nil || r.OK() || strings.Contains(r.Stdout, "allocated") {
		t.Errorf("a program past its memory: %+v %v", r, err)
	}
	if _, err := p.Run(context.Background(), Program{Path: "no-such-program-here"}); err == nil || !strings.Contains(err.Error(), "no-such-program-here") {
		t.Errorf("missing program: %v", err)
	}
}
