package sandbox

import (
	"context"
	"testing"
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
