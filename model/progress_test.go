package model

import (
	"os"
	"strings"
	"testing"
)

// Off a terminal, a checkpoint of 2 GB or more reports every quarter; a small one says nothing.
func TestProgressLines(t *testing.T) {
	for _, tc := range []struct {
		total int64
		lines int
	}{{3 << 30, 4}, {100 << 20, 0}} {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		p := newProgress(w, "loading x", tc.total)
		for range 8 {
			p.add(tc.total / 8)
		}
		p.done()
		w.Close()
		buf := make([]byte, 4096)
		n, _ := r.Read(buf)
		r.Close()
		got := strings.Count(string(buf[:max(n, 0)]), "\n")
		if got != tc.lines {
			t.Errorf("total %d: %d lines %q, want %d", tc.total, got, buf[:max(n, 0)], tc.lines)
		}
	}
}
