package main

import (
	"path/filepath"
	"testing"

	rundir "github.com/mtgrpo/mtgrpo/cmd/internal/run"
)

// learnSFT and learnRL are the learning test's warm-up and RL steps. The warm-up is the demo's,
// cut short: the model has begun to copy numbers into its calculator calls and answers and gets
// about half of the held-out tasks right; multi-turn GRPO then has to do the rest.
const learnSFT, learnRL = 380, 30

// Multi-turn GRPO learns: after a short SFT warm-up on calc_mult (the demo's model, task and RL
// settings), RL raises the held-out reward (strict accuracy of the "####" answer, greedy
// decoding, the same held-out tasks before and after) and never lets it fall on the way. Fixed
// seeds and two threads: the run is the same from run to run on one machine.
func TestMultiTurnGRPOLearns(t *testing.T) {
	if testing.Short() {
		t.Skip("trains for about six minutes")
	}
	dir := filepath.Join(t.TempDir(), "run")
	args := []string{"train", "--config", "../../configs/demo.yaml", "--run-dir", dir, "--threads", "2",
		"--set", "sft.steps=" + itoa(learnSFT), "--steps", itoa(learnRL),
		"--set", "data.val_size=64", "--set", "train.checkpoint_every=0", "--set", "train.report=false",
		"--set", "train.export=false", "--set", "advantage.estimator=grpo_multiturn", "--set", "train.eval_every=10"}
	if err := run(args); err != nil {
		t.Fatal(err)
	}
	recs, err := rundir.ReadMetrics(dir)
	if err != nil {
		t.Fatal(err)
	}
	val := map[int]float64{}
	for _, r := range recs {
		if v, ok := r.Values["val/score"]; ok {
			val[r.Step] = v
		}
	}
	before, after := val[learnSFT], val[learnSFT+learnRL]
	t.Logf("held-out score by step %v", val)
	for _, step := range []int{learnSFT, learnSFT + learnRL} {
		if _, ok := val[step]; !ok {
			t.Fatalf("no evaluation at step %d (evaluated at %v)", step, val)
		}
	}
	// Observed on 2 cores: 0.462 after the warm-up (24 of the 52 held-out tasks right), then
	// 0.519, 0.596, 0.596 every 10 GRPO steps (31 right). The warm-up alone is a moving target
	// (its accuracy climbs from 0.03 at step 360 to 0.73 at step 400), so the test asks for a
	// clear gain over the same starting point rather than a fixed level.
	if !(after >= before+0.1) {
		t.Errorf("held-out score %.3f after the warm-up, %.3f after %d GRPO steps: want at least +0.1", before, after, learnRL)
	}
	for step := learnSFT + 10; step < learnSFT+learnRL; step += 10 {
		if v, ok := val[step]; !ok || v < before-0.05 {
			t.Errorf("held-out score %.3f at step %d (%v): want no fall below the warm-up's %.3f", v, step, ok, before)
		}
	}
}
