package main

import (
	"path/filepath"
	"testing"

	rundir "github.com/mtgrpo/mtgrpo/cmd/internal/run"
)

// sft.perfect_first: the warm-up's first steps train on the perfect demonstrations, the rest on
// the environment's mix. With every demonstration direct (env.direct_demos=1: "#### product",
// one turn) and half the 2 steps perfect, step 1 trains on two calculator episodes (the call and
// the answer: two trained turns each) and step 2 on two direct answers (one short turn each), so
// step 1 trains on more than twice as many tokens as step 2.
func TestSFTPerfectFirst(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	args := append(append([]string{"train"}, tinyRun(tinyModel(t), dir)...), "--steps", "1",
		"--set", "env.direct_demos=1", "--set", "sft.steps=2", "--set", "sft.batch=2", "--set", "sft.tasks=4",
		"--set", "sft.lr=1e-3", "--set", "sft.perfect_first=0.5", "--set", "eval.before=false",
		"--set", "train.report=false", "--set", "train.export=false", "--set", "train.checkpoint_every=0")
	if err := run(args); err != nil {
		t.Fatal(err)
	}
	recs, err := rundir.ReadMetrics(dir)
	if err != nil {
		t.Fatal(err)
	}
	tokens := map[int]float64{}
	for _, r := range recs {
		if v, ok := r.Values["sft/tokens"]; ok {
			tokens[r.Step] = v
		}
	}
	if !(tokens[2] > 0 && tokens[1] > 2*tokens[2]) {
		t.Errorf("trained tokens %v at SFT steps 1 and 2, want step 1 (perfect) > 2 × step 2 (direct)", tokens)
	}
}

// `mtgrpo train` with sft.steps on frozenlake runs the warm-up on the lake demonstrator's
// episodes: every SFT step trains on the same 4 demonstrations (sft.tasks = sft.batch), so the
// loss falls from the first step to the last.
func TestSFTFrozenLakeWarmUp(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	args := append(append([]string{"train"}, tinyRun(tinyModel(t), dir)...), "--steps", "1",
		"--set", "env.name=frozenlake", "--set", "rollout.max_context_tokens=2048",
		"--set", "rollout.condenser.type=last_n", "--set", "rollout.condenser.keep_last_n=1",
		"--set", "sft.steps=5", "--set", "sft.batch=4", "--set", "sft.tasks=4", "--set", "sft.lr=1e-3",
		"--set", "eval.before=false", "--set", "train.report=false", "--set", "train.export=false",
		"--set", "train.checkpoint_every=0")
	if err := run(args); err != nil {
		t.Fatal(err)
	}
	recs, err := rundir.ReadMetrics(dir)
	if err != nil {
		t.Fatal(err)
	}
	loss := map[int]float64{}
	for _, r := range recs {
		if v, ok := r.Values["sft/loss"]; ok {
			loss[r.Step] = v
		}
	}
	if len(loss) != 5 || !(loss[5] < loss[1]) {
		t.Errorf("SFT losses by step %v, want 5 steps, the last below the first", loss)
	}
}
