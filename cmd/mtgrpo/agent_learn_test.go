package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	rundir "github.com/mtgrpo/mtgrpo/cmd/internal/run"
	"github.com/mtgrpo/mtgrpo/env/sandbox"
)

// GRPO through the agent endpoint raises the reward an agent program reports. `mtgrpo train` on
// calc_mult tasks with env.agent: every episode is a run of testdata/digitagent, a calculator
// tool loop over plain HTTP (a Go program starts in milliseconds; the real clients' tests are
// rollout/serve's and serve_test.go), whose calls the engine serves and the trainer trains on,
// and which reports the share of digits in the model's final answer (reward: program). This is the
// one-turn reward of grpo's TestOutcomeEstimatorsRaiseReward (digitShare) on calc_mult's prompts,
// with grpo's learning settings (4 tasks × 8 samples, 12 new tokens, lr 1e-2 after 3 warm-up
// steps) on the random tiny model, for 20 steps: the mean sampled reward of the last five is at
// least 0.5 and five times that of the first five. The random model writes no tool call that
// parses, so each episode is one call.
// Observed (one thread): 0.014 over the first five steps, a take-off at step 8, 0.90 over the last
// five (0.96 at step 20, 1.0 from step 24 when run on). With the advantage's sign flipped
// (grpo/credit.go) the reward falls to 0.000–0.001 from step 9 on and the test fails.
// About 40 s of CPU. docs/bench/learning.md has the demo's recipe (warm-up, then GRPO on
// calc_mult's own reward) through the TypeScript agent beside the built-in environment.
func TestGRPOThroughAgentEndpointRaisesReward(t *testing.T) {
	if testing.Short() {
		t.Skip("trains for 20 steps")
	}
	dir := t.TempDir()
	agent := filepath.Join(dir, "digitagent")
	if out, err := exec.Command("go", "build", "-o", agent, "./testdata/digitagent").CombinedOutput(); err != nil {
		t.Fatalf("building the agent: %v: %s", err, out)
	}
	helper, _ := filepath.Abs("../../bin/" + sandbox.HelperName) // starts in milliseconds; the fallback loads libtorch
	if _, err := os.Stat(helper); err != nil {
		helper = ""
	}
	cfg := filepath.Join(dir, "agent.yaml")
	yaml := fmt.Sprintf("env:\n  name: calc_mult\n  agent:\n    command: [%q]\n    reward: program\n    time: 1m\n    helper: %q\n", agent, helper)
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	runDir := filepath.Join(dir, "run")
	args := []string{"train", "--config", cfg, "--model", tinyModel(t), "--run-dir", runDir, "--threads", "1", "--seed", "11",
		"--set", "advantage.estimator=grpo", "--set", "rollout.tasks=4", "--set", "rollout.group=8",
		"--set", "rollout.max_new_tokens=12", "--set", "optim.lr=1e-2", "--set", "optim.warmup=3",
		"--set", "data.train_size=64", "--set", "data.val_size=4", "--set", "train.steps=20", "--set", "train.eval_every=0",
		"--set", "eval.before=false", "--set", "train.checkpoint_every=0", "--set", "train.export=false",
		"--set", "train.report=false", "--set", "train.samples=0"}
	if err := run(args); err != nil {
		t.Fatal(err)
	}
	recs, err := rundir.ReadMetrics(runDir)
	if err != nil {
		t.Fatal(err)
	}
	var scores []float64
	failed := 0.0
	for _, r := range recs {
		if v, ok := r.Values["critic/score/mean"]; ok {
			scores = append(scores, v)
			failed += r.Values["episode/failed"]
		}
	}
	t.Logf("sampled reward per step: %.3f", scores)
	if len(scores) != 20 || failed != 0 {
		t.Fatalf("%d steps logged, %v episodes failed: want 20 and 0 (RUN/train.log says why)", len(scores), failed)
	}
	first, last := meanOf(scores[:5]), meanOf(scores[15:])
	if !(last >= 0.5 && last >= 5*first) {
		t.Errorf("sampled reward: mean %.3f over the first 5 steps, %.3f over the last 5: want at least 0.5 and 5 times as much", first, last)
	}
}

func meanOf(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}
