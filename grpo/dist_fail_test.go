package grpo

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mtgrpo/mtgrpo/env"
	"github.com/mtgrpo/mtgrpo/torch"
)

// A rank that dies (exits in the middle of its second step) or hangs (stops answering) makes the
// other's Step return an error: at once for a death (its connections close), within the group's
// collective timeout for a hang (10 s here).
func TestDistributedRankFailure(t *testing.T) {
	if testing.Short() {
		t.Skip("starts four processes")
	}
	requireGloo(t)
	dir := tinyDir(t, 12, nil)
	for _, mode := range []string{"die", "hang"} {
		outs := runDistWorkers(t, mode, dir, t.TempDir(), 2*time.Minute, false, true)
		if m := failureLine(outs[0]); m != "" {
			t.Logf("%s: rank 0 saw: %s", mode, m)
		}
	}
}

func failureLine(out string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "rank 0 failed after") {
			return l
		}
	}
	return ""
}

// failSource serves tasks and, at its second call (the second step's rollout), dies or hangs.
type failSource struct {
	sliceSource
	mode  string
	calls int
}

func (s *failSource) Next(n int) ([]env.Task, error) {
	if s.calls++; s.calls == 2 {
		if s.mode == "die" {
			fmt.Println("rank 1 exits")
			os.Exit(3)
		}
		time.Sleep(14 * time.Second) // longer than rank 0's rollout and timeout; then leave quietly
		os.Exit(0)
	}
	return s.sliceSource.Next(n)
}

// failingWorker: rank 1 fails in its second step; rank 0 must get an error from that step within
// the bound, and says how long it took.
func failingWorker(t *testing.T, pg *torch.ProcessGroup, mode, dir string) {
	d, err := NewDist(pg, DistConfig{})
	if err != nil {
		t.Fatal(err)
	}
	r := newRun(t, dir, newPromptEnv(), distConfig(), nil, WithDist(d))
	defer r.close()
	var src TaskSource = &sliceSource{tasks: distTasks(8)}
	if pg.Rank() == 1 {
		src = &failSource{sliceSource: sliceSource{tasks: distTasks(8)}, mode: mode}
	}
	if _, _, err := r.tr.Step(context.Background(), src); err != nil {
		t.Fatalf("step 0: %v", err)
	}
	start := time.Now()
	_, _, err = r.tr.Step(context.Background(), src)
	took := time.Since(start)
	bound := 30 * time.Second // the rollout of rank 0's share, then at most the 10 s timeout
	if mode == "die" {
		bound = 20 * time.Second
	}
	fmt.Printf("rank 0 failed after %v: %v\n", took.Round(time.Millisecond), err)
	if err == nil || took > bound {
		t.Errorf("%s: step 1 returned %v after %v, want an error within %v", mode, err, took, bound)
	}
	if err != nil && !strings.Contains(err.Error(), "exchanging trajectories") {
		t.Errorf("%s: the error does not say where it happened: %v", mode, err)
	}
}
