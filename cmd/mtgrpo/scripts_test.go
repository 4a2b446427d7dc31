package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mtgrpo/mtgrpo/cmd/internal/config"
	rundir "github.com/mtgrpo/mtgrpo/cmd/internal/run"
)

// script runs scripts/NAME with the test binary standing in for bin/mtgrpo and the given
// variables; it returns the exit code and the output.
func script(t *testing.T, name string, vars map[string]string, args ...string) (int, string) {
	t.Helper()
	c := exec.Command(filepath.Join("..", "..", "scripts", name), args...)
	c.Env = append(os.Environ(), "MTGRPO_TEST_MAIN=1", "MTGRPO_PROGRESS=0", "MTGRPO_BIN="+os.Args[0])
	for k, v := range vars {
		c.Env = append(c.Env, k+"="+v)
	}
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	err := c.Run()
	if err != nil && c.ProcessState == nil {
		t.Fatal(err)
	}
	return c.ProcessState.ExitCode(), out.String()
}

// scripts/train.sh and scripts/eval.sh are driven by the MT-GRPO scripts' variables: the run's
// saved configuration shows MODEL, BATCH_SIZE, LR, SEED and STEPS; N_GPUS=2 trains in two processes; eval
// reads the run's checkpoint.
func TestTrainAndEvalScripts(t *testing.T) {
	model := tinyModel(t)
	dir := filepath.Join(t.TempDir(), "run")
	vars := map[string]string{"MODEL": model, "RUN_DIR": dir, "BATCH_SIZE": "2", "LR": "2e-5", "SEED": "4", "STEPS": "1",
		"N_GPUS": "1", "MTGRPO_THREADS": "1"}
	code, out := script(t, "train.sh", vars, "--group", "2", "--set", "rollout.max_new_tokens=8", "--set", "data.train_size=4",
		"--set", "data.val_size=2", "--set", "eval.before=false", "--set", "train.report=false")
	if code != 0 {
		t.Fatalf("train.sh: exit %d\n%s", code, out)
	}
	c, err := config.ReadSaved(filepath.Join(dir, rundir.ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	if c.Model != model || c.Rollout.Tasks != 2 || c.Optim.LR != 2e-5 || c.Seed != 4 || c.Train.Steps != 1 || c.RunDir != dir {
		t.Errorf("saved config: model %q tasks %d lr %v seed %d steps %d run_dir %q", c.Model, c.Rollout.Tasks, c.Optim.LR, c.Seed, c.Train.Steps, c.RunDir)
	}
	// N_GPUS=2 (on the CPU here: two Gloo processes) trains data parallel; rank 0 writes the run.
	vars["N_GPUS"], vars["RUN_DIR"] = "2", filepath.Join(filepath.Dir(dir), "run2")
	code, out = script(t, "train.sh", vars, "--group", "2", "--set", "rollout.max_new_tokens=8", "--set", "data.train_size=4",
		"--set", "data.val_size=2", "--set", "eval.before=false", "--set", "train.report=false")
	if recs, err := rundir.ReadMetrics(vars["RUN_DIR"]); code != 0 || err != nil || len(recs) != 1 || recs[0].Step != 1 {
		t.Errorf("N_GPUS=2: exit %d, metrics %+v %v\n%s", code, recs, err, out)
	}
	code, out = script(t, "eval.sh", map[string]string{"CHECKPOINT": dir, "MTGRPO_THREADS": "1"})
	if code != 0 || !strings.Contains(out, "val/score") {
		t.Errorf("eval.sh: exit %d\n%s", code, out)
	}
	if code, out := script(t, "eval.sh", map[string]string{"MODEL": "", "CHECKPOINT": ""}); code != 2 || !strings.Contains(out, "set CHECKPOINT") {
		t.Errorf("eval.sh without a model: exit %d\n%s", code, out)
	}
}
