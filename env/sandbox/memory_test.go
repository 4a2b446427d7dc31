package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// memfdFill writes 8 MiB memfds, printing the running total in MiB, until it reaches %d MiB or a
// call fails. RLIMIT_AS does not see these pages: write() maps nothing.
const memfdFill = `import os
total = 0
try:
    while total < %d:
        fd = os.memfd_create('m')
        os.write(fd, b'x' * (8 << 20))
        total += 8
        print(total, flush=True)
except OSError as e:
    print('refused', e.errno, flush=True)
`

// A run limited to 128 MiB + 16 MiB of tmpfs once held 1.5 GiB in memfds. Now the syscall filter
// refuses memfd_create outright, and where a memory cgroup exists it counts the pages even with
// the filter off: the run is killed at its limit, having held no more than it.
func TestMemfdCannotHoldMoreThanTheLimit(t *testing.T) {
	l := Limits{Wall: 30 * time.Second, CPUSeconds: 20, MemoryBytes: 128 << 20, DiskBytes: 16 << 20}
	s := newTest(t, l)
	limitMiB := int(s.iso.reservation(s.limits) >> 20)
	code := strings.Replace(memfdFill, "%d", strconv.Itoa(3*limitMiB), 1)
	if !s.iso.Seccomp && s.iso.Memory == MemoryRlimits {
		t.Fatalf("neither the syscall filter nor a memory cgroup here: %s", s.iso.Note)
	}
	if s.iso.Seccomp {
		r := run(t, s, code)
		if r.Stdout != "refused 1\n" {
			t.Fatalf("memfd_create under the filter: want EPERM, got %+v", r)
		}
	}
	if s.iso.Memory == MemoryRlimits {
		t.Skipf("no memory cgroup here (%s): the filter is the bound", s.iso.Note)
	}
	iso := s.iso
	iso.Seccomp = false
	r, err := s.run(context.Background(), code, iso, s.limits)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(r.Stdout)
	held, _ := strconv.Atoi(lines[len(lines)-1])
	// Python itself holds ~10 MiB of the limit, so the memfds stop below it.
	if !r.OutOfMemory || r.OK() || held == 0 || held > limitMiB {
		t.Fatalf("want an OOM kill after at most %d MiB, got %d MiB: %+v", limitMiB, held, r)
	}
	t.Logf("killed at its cgroup limit of %d MiB after %d MiB of memfds", limitMiB, held)
}

// The filter refuses every call that holds memory outside RLIMIT_AS and the run's tmpfs, also
// to code that got past the audit hook and calls libc through ctypes.
func TestSyscallFilterRefusesIPCMemory(t *testing.T) {
	s := newTest(t, quick)
	if !s.iso.Seccomp {
		t.Skipf("no syscall filter here: %s", s.iso.Note)
	}
	hookless := *s
	hookless.hookless = true
	code := "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n" +
		"for name, call in (('memfd_create', lambda: libc.memfd_create(b'x', 0)), ('shmget', lambda: libc.shmget(0, 1 << 20, 0o1600)),\n" +
		"                   ('msgget', lambda: libc.msgget(0, 0o1600)), ('mq_open', lambda: libc.mq_open(b'/q', 0o100 | 2, 0o600, None))):\n" +
		"    ctypes.set_errno(0)\n    print(name, call(), ctypes.get_errno())\n"
	r := run(t, &hookless, code)
	// -1 with errno 1 (EPERM) from the filter for each.
	want := "memfd_create -1 1\nshmget -1 1\nmsgget -1 1\nmq_open -1 1\n"
	if r.Stdout != want {
		t.Fatalf("want every call refused with EPERM:\n%s\ngot %+v", want, r)
	}
}

// System V shared memory lives in the run's own IPC namespace: a segment the code leaves behind
// (here with the filter off, so shmget succeeds) dies with the run instead of holding host memory
// for ever. The test looks for the segment's key in the host's table after the run.
func TestSharedMemoryDiesWithTheRun(t *testing.T) {
	s := newTest(t, quick)
	if !s.iso.NetNS {
		t.Skipf("no IPC namespace here: %s", s.iso.Note)
	}
	hookless := *s
	hookless.hookless = true
	iso := s.iso
	iso.Seccomp = false
	const key = 0x6d74677270 & 0x7fffffff
	code := "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n" +
		"print(libc.shmget(" + strconv.Itoa(key) + ", 1 << 20, 0o1600) >= 0)\n"
	r, err := hookless.run(context.Background(), code, iso, s.limits)
	if err != nil || r.Stdout != "True\n" {
		t.Fatalf("shmget in the run: %v %+v", err, r)
	}
	table, err := os.ReadFile("/proc/sysvipc/shm")
	if err != nil {
		t.Skip(err)
	}
	for _, line := range strings.Split(string(table), "\n")[1:] {
		if f := strings.Fields(line); len(f) > 0 && f[0] == strconv.Itoa(key) {
			t.Fatalf("the run's segment outlived it in the host's namespace: %s", line)
		}
	}
}

// The budget caps what runs hold together: with room for three reservations, six concurrent runs
// hold at most three at once (and do hold three: they overlap), a run larger than the whole
// budget fails at once, and a run waiting for room gives up when its context ends.
func TestBudgetCapsConcurrentRuns(t *testing.T) {
	l := Limits{Wall: 20 * time.Second, CPUSeconds: 10, MemoryBytes: 64 << 20, DiskBytes: 8 << 20}
	// Room for three runs, whether or not the mode counts DiskBytes (3 × 72 < 4 × 64).
	b := NewBudget(3 * (l.MemoryBytes + l.DiskBytes))
	s := newTestConfig(t, Config{Limits: l, Budget: b})
	one := s.iso.reservation(s.limits)
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for i := 0; i < 6; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := s.Run(context.Background(), "import time\ntime.sleep(0.3)\nprint('ok')")
			if err == nil && r.Stdout != "ok\n" {
				err = errors.New(r.Stdout + r.Stderr)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if b.Peak() != 3*one {
		t.Fatalf("peak held %d MiB, want 3 runs' worth = %d MiB", b.Peak()>>20, 3*one>>20)
	}

	big := *s
	big.limits.MemoryBytes = 4 * one
	if _, err := big.Run(context.Background(), "print(1)"); err == nil || !strings.Contains(err.Error(), "memory budget") {
		t.Fatalf("a run larger than the budget: %v", err)
	}

	release, err := b.reserve(context.Background(), b.Total()) // the budget is spent
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	// The bound is loose: on a loaded machine the run's set-up before the wait takes seconds.
	if _, err := s.Run(ctx, "print(1)"); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 15*time.Second {
		t.Fatalf("waiting for a spent budget: %v after %v", err, time.Since(start))
	}
}

// With a memory cgroup, the pool's limit is the budget's total (the kernel's cap on all runs
// together) and each run's limit its reservation; the pool is gone once no run is in flight.
func TestCgroupLimits(t *testing.T) {
	s := newTest(t, quick)
	if s.iso.Memory == MemoryRlimits {
		t.Skipf("no memory cgroup here: %s", s.iso.Note)
	}
	file := "memory.limit_in_bytes"
	if s.iso.Memory == MemoryCgroupV2 {
		file = "memory.max"
	}
	// The run reads its own limits; /proc is not in the minimal root, so the test reads them
	// from the cgroup directories while the run sleeps.
	done := make(chan Result, 1)
	go func() {
		r, _ := s.Run(context.Background(), "import time\ntime.sleep(1)")
		done <- r
	}()
	var poolLimit, runLimit string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && runLimit == ""; time.Sleep(20 * time.Millisecond) {
		s.pool.mu.Lock()
		dir := s.pool.dir
		s.pool.mu.Unlock()
		if dir == "" {
			continue
		}
		poolLimit = readString(filepath.Join(dir, file))
		runs, _ := filepath.Glob(filepath.Join(dir, "run-*"))
		if len(runs) == 1 {
			runLimit = readString(filepath.Join(runs[0], file))
		}
	}
	<-done
	if poolLimit != strconv.FormatInt(s.budget.Total(), 10) || runLimit != strconv.FormatInt(s.iso.reservation(s.limits), 10) {
		t.Fatalf("pool limit %s (want the budget %d), run limit %s (want %d)", poolLimit, s.budget.Total(), runLimit, s.iso.reservation(s.limits))
	}
	if left, _ := filepath.Glob(filepath.Join(s.pool.parent, poolPrefix+ownerTag()+"*")); len(left) != 0 {
		t.Fatalf("pool cgroups left with no run in flight: %v", left)
	}
}
