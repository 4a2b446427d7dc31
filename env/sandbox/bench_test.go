package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// BenchmarkRun is the latency of one sandboxed run of a trivial program (interpreter start,
// preamble, temp dir, namespaces), one at a time.
//
//	go test -run XXX -bench Run ./env/sandbox/
func BenchmarkRun(b *testing.B) {
	s, err := New(Config{})
	if err != nil {
		b.Skip(err)
	}
	b.Logf("isolation: %s", s.Isolation().Note)
	for b.Loop() {
		r, err := s.Run(context.Background(), "print(1)")
		if err != nil || !r.OK() {
			b.Fatalf("%v %+v", err, r)
		}
	}
}

// BenchmarkHelpers compares the helper binaries a run can start as, interleaved: each iteration
// runs print(1) once through each helper in turn, so that load on a shared machine falls on all
// alike. MTGRPO_BENCH_HELPERS lists the helpers (comma-separated paths); default: this test
// binary and a freshly built cmd/mtgrpo-sandbox. For each, named by its file name, it reports
// the wall time and the CPU time (user + system of the run's processes, the helper and then the
// interpreter, from getrusage of the children) per run.
//
//	MTGRPO_BENCH_HELPERS=$PWD/bin/mtgrpo,$PWD/bin/mtgrpo-sandbox \
//	  go test -run '^$' -bench Helpers -benchtime 20x ./env/sandbox/
func BenchmarkHelpers(b *testing.B) {
	var paths []string
	if list := os.Getenv("MTGRPO_BENCH_HELPERS"); list != "" {
		paths = strings.Split(list, ",")
	} else {
		exe, _ := os.Executable()
		paths = []string{exe, buildHelper(b, "")}
	}
	sandboxes := make([]*Sandbox, len(paths))
	for i, p := range paths {
		s, err := New(Config{Helper: p, Log: func(m string) { b.Log(m) }})
		if err != nil {
			b.Skip(err)
		}
		sandboxes[i] = s
	}
	wall := make([]time.Duration, len(paths))
	cpu := make([]time.Duration, len(paths))
	b.ResetTimer()
	for range b.N {
		for i, s := range sandboxes {
			before := childrenCPU()
			start := time.Now()
			r, err := s.Run(context.Background(), "print(1)")
			wall[i] += time.Since(start)
			cpu[i] += childrenCPU() - before
			if err != nil || !r.OK() {
				b.Fatalf("%s: %v %+v", paths[i], err, r)
			}
		}
	}
	for i, p := range paths {
		name := filepath.Base(p)
		b.ReportMetric(float64(wall[i].Microseconds())/1e3/float64(b.N), name+"-wall-ms/run")
		b.ReportMetric(float64(cpu[i].Microseconds())/1e3/float64(b.N), name+"-cpu-ms/run")
	}
}

// childrenCPU is the user + system time of this process's waited-for children so far.
func childrenCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
