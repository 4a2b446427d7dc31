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
