package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mtgrpo/mtgrpo/cmd/internal/config"
	rundir "github.com/mtgrpo/mtgrpo/cmd/internal/run"
)

// The demo's recipe learns, end to end, as `make demo` runs it on 2 cores (configs/demo.yaml, one
// thread: a random tiny model, calc_mult with two 2-digit numbers, 800 SFT steps), stopped after
// 30 of its 50 GRPO steps, where every rise checked here is already clear.
// Its demonstrations skip the calculator on 30% of the tasks, which the model cannot imitate, so
// each stage has its own job, and the test checks both on the held-out tasks (4 samples per task
// at temperature 1, the policy as it samples; the same tasks at every evaluation):
//   - the warm-up takes the score (strict accuracy of the "####" answer) from 0 to a real share
//     of the tasks, and leaves a policy that calls the tool in only part of its episodes;
//   - GRPO raises both: the tool calls, since the episodes that call it earn the reward, and with
//     them the score.
//
// Fixed seeds and one thread: the run is the same from run to run on one machine.
// docs/bench/learning.md has the figures on several seeds.
//
// With MTGRPO_DEMO_RUN set to the run directory of a finished `make demo` (`mtgrpo demo`) of this
// checkout, the test checks that run's evaluations instead of training the recipe a second time:
// the demo is this recipe run 20 RL steps further, evaluated at the same steps, so its first 30
// RL steps are this test's run. check-fresh runs `make demo` then `make test` in one fresh root and
// sets it (docs/setup.md). The run must have been made from the recipe (its config.yaml, save for
// where and how often it writes and how long it runs) after the last change to the sources.
func TestDemoRecipeLearns(t *testing.T) {
	if testing.Short() {
		t.Skip("trains for several minutes")
	}
	dir := os.Getenv("MTGRPO_DEMO_RUN")
	if dir != "" {
		checkDemoRun(t, dir)
	} else {
		dir = filepath.Join(t.TempDir(), "run")
		args := []string{"train", "--config", "../../configs/demo.yaml", "--run-dir", dir, "--threads", "1",
			"--set", "train.checkpoint_every=0", "--set", "train.report=false",
			"--set", "train.export=false", "--set", "train.samples=0", "--set", "train.steps=30"}
		if err := run(args); err != nil {
			t.Fatal(err)
		}
	}
	recs, err := rundir.ReadMetrics(dir)
	if err != nil {
		t.Fatal(err)
	}
	score, tools := map[int]float64{}, map[int]float64{}
	sft, last := 0, 0
	for _, r := range recs {
		if v, ok := r.Values["val/score"]; ok {
			score[r.Step], tools[r.Step] = v, r.Values["val/tool_call_counts/mean"]
			last = max(last, r.Step)
		}
		if _, ok := r.Values["sft/loss"]; ok {
			sft = max(sft, r.Step)
		}
	}
	t.Logf("held-out score by step %v, tool calls per episode %v (SFT steps %d)", score, tools, sft)
	for _, step := range []int{0, sft, sft + 30} {
		if _, ok := score[step]; !ok {
			t.Fatalf("no evaluation at step %d (last at %d)", step, last)
		}
	}
	end := sft + 30
	// Observed (2 cores, Intel Xeon, 8 heads of 16): score 0 before, 0.486 after the warm-up,
	// 0.678 after GRPO; tool calls per episode 0.68 after the warm-up, 0.97 after GRPO. Seeds 1-4
	// pass the same warm-up and gain 0.08 to 0.16 (docs/bench/learning.md); how well a warm-up
	// copies varies from CPU to CPU, so the bars are lower than what they reach here. A warm-up
	// that never passes the copying change (one seed in five with the earlier 4-head shape)
	// scores 0 and fails the first check: RL cannot start from there.
	// With the outcome advantage's sign flipped (grpo/credit.go; measured on the 4-head shape) GRPO
	// ends at a score of 0.000 and 0.58 tool calls per episode, and both GRPO checks fail.
	if score[0] != 0 || !(score[sft] >= 0.1) {
		t.Errorf("held-out score %.3f before training and %.3f after %d SFT steps: want 0 and >= 0.1", score[0], score[sft], sft)
	}
	if !(tools[sft] <= 0.9) {
		t.Errorf("%.2f tool calls per episode after the warm-up: the direct demonstrations left no habit to unlearn (want <= 0.9)", tools[sft])
	}
	if !(tools[end] >= tools[sft]+0.15) {
		t.Errorf("tool calls per episode %.2f after the warm-up, %.2f after GRPO: want a rise of 0.15 at least", tools[sft], tools[end])
	}
	if !(score[end] >= score[sft]+0.02) {
		t.Errorf("held-out score %.3f after the warm-up, %.3f after GRPO: want a rise of 0.02 at least", score[sft], score[end])
	}
}

// checkDemoRun fails unless dir holds a run of the demo's recipe made after the last change to
// the sources: its configuration is configs/demo.yaml's but for where and how often it writes and
// how long it runs, and no source file is newer than its start (config.yaml).
func checkDemoRun(t *testing.T, dir string) {
	t.Helper()
	saved := filepath.Join(dir, "config.yaml")
	got, err := config.ReadSaved(saved)
	if err != nil {
		t.Fatalf("MTGRPO_DEMO_RUN: %v", err)
	}
	want, err := config.ResolveUnchecked(config.Sources{Files: []string{"../../configs/demo.yaml"},
		LookupEnv: func(string) (string, bool) { return "", false }})
	if err != nil {
		t.Fatal(err)
	}
	free := []string{"run_dir", "train.steps", "train.checkpoint_every", "train.keep_checkpoints", "train.report",
		"train.export", "train.samples"}
	for _, d := range config.Diff(want, got) {
		if !slices.Contains(free, strings.SplitN(d, ":", 2)[0]) {
			t.Fatalf("MTGRPO_DEMO_RUN=%s is not a run of configs/demo.yaml: %s", dir, d)
		}
	}
	st, err := os.Stat(saved)
	if err != nil {
		t.Fatal(err)
	}
	skip := []string{"runs", "build", "bin", "third_party"}
	err = filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "../.." && (strings.HasPrefix(d.Name(), ".") || slices.Contains(skip, d.Name())) {
			return filepath.SkipDir
		}
		switch filepath.Ext(path) {
		case ".go", ".yaml", ".cpp", ".h":
			if fi, err := d.Info(); err == nil && fi.ModTime().After(st.ModTime()) {
				return fmt.Errorf("%s changed after the run started", path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("MTGRPO_DEMO_RUN=%s is older than the sources (run make demo again, or unset it): %v", dir, err)
	}
	t.Logf("checking the evaluations of %s, a run of the demo", dir)
}
