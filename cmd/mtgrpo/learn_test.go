package main

import (
	"path/filepath"
	"testing"

	rundir "github.com/mtgrpo/mtgrpo/cmd/internal/run"
)

// learnRL is the number of GRPO steps the learning test runs after the demo's warm-up.
const learnRL = 10

// The demo's recipe learns, end to end, as `make demo` runs it (configs/demo.yaml: a random tiny
// model, calc_mult with two 2-digit numbers): the held-out reward (strict accuracy of the "####"
// answer, greedy decoding, the same held-out tasks each time) is 0 before training, the SFT
// warm-up raises it to most of the tasks, and multi-turn GRPO steps from there keep what the
// warm-up reached. That RL itself raises a reward it is given is TestGRPORaisesReward (grpo);
// docs/bench/learning.md has what RL does and does not yet do on calc_mult. Fixed seeds and two
// threads: the run is the same from run to run on one machine.
func TestDemoRecipeLearns(t *testing.T) {
	if testing.Short() {
		t.Skip("trains for several minutes")
	}
	dir := filepath.Join(t.TempDir(), "run")
	args := []string{"train", "--config", "../../configs/demo.yaml", "--run-dir", dir, "--threads", "2",
		"--steps", itoa(learnRL), "--set", "train.checkpoint_every=0", "--set", "train.report=false",
		"--set", "train.export=false", "--set", "train.samples=0"}
	if err := run(args); err != nil {
		t.Fatal(err)
	}
	recs, err := rundir.ReadMetrics(dir)
	if err != nil {
		t.Fatal(err)
	}
	var steps []int
	val := map[int]float64{}
	sft := 0
	for _, r := range recs {
		if v, ok := r.Values["val/score"]; ok {
			steps = append(steps, r.Step)
			val[r.Step] = v
		}
		if _, ok := r.Values["sft/loss"]; ok {
			sft = max(sft, r.Step)
		}
	}
	t.Logf("held-out score by step %v (SFT steps %d)", val, sft)
	end := sft + learnRL
	for _, step := range []int{0, sft, end} {
		if _, ok := val[step]; !ok {
			t.Fatalf("no evaluation at step %d (evaluated at %v)", step, steps)
		}
	}
	// Observed on 2 cores (AMD EPYC): 0 before, 0.769 after the warm-up (40 of the 52 held-out
	// tasks right), 0.769 after the GRPO steps; about 7 minutes. When the warm-up's copying change
	// comes varies from CPU to CPU (docs/bench/learning.md), so the bar is well under that.
	if val[0] != 0 || !(val[sft] >= 0.4) {
		t.Errorf("held-out score %.3f before training and %.3f after %d SFT steps: want 0 and >= 0.4", val[0], val[sft], sft)
	}
	if !(val[end] >= val[sft]-0.1) {
		t.Errorf("held-out score %.3f after the warm-up, %.3f after %d GRPO steps: want no fall of more than 0.1", val[sft], val[end], learnRL)
	}
}
