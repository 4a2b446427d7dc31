package main

import (
	"path/filepath"
	"testing"

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
func TestDemoRecipeLearns(t *testing.T) {
	if testing.Short() {
		t.Skip("trains for several minutes")
	}
	dir := filepath.Join(t.TempDir(), "run")
	args := []string{"train", "--config", "../../configs/demo.yaml", "--run-dir", dir, "--threads", "1",
		"--set", "train.checkpoint_every=0", "--set", "train.report=false",
		"--set", "train.export=false", "--set", "train.samples=0", "--set", "train.steps=30"}
	if err := run(args); err != nil {
		t.Fatal(err)
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
