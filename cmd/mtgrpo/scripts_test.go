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
	return scriptIn(t, "", name, vars, args...)
}

// scriptIn is script run from the directory cwd ("": this package's).
func scriptIn(t *testing.T, cwd, name string, vars map[string]string, args ...string) (int, string) {
	t.Helper()
	path, err := filepath.Abs(filepath.Join("..", "..", "scripts", name))
	if err != nil {
		t.Fatal(err)
	}
	c := exec.Command(path, args...)
	c.Dir = cwd
	c.Env = append(os.Environ(), "MTGRPO_TEST_MAIN=1", "MTGRPO_PROGRESS=0", "MTGRPO_BIN="+os.Args[0])
	for k, v := range vars {
		c.Env = append(c.Env, k+"="+v)
	}
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	err = c.Run()
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

// The scripts run from the caller's directory: MODEL=./mymodel is the caller's, and the run
// (runs/train by default) and the default model (models/tiny) are written there, not in the
// install.
func TestScriptsFromCallersDirectory(t *testing.T) {
	cwd := t.TempDir()
	if err := os.CopyFS(filepath.Join(cwd, "mymodel"), os.DirFS(tinyModel(t))); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"MODEL": "./mymodel", "STEPS": "1", "BATCH_SIZE": "2", "MTGRPO_THREADS": "1"}
	settings := []string{"--group", "2", "--set", "rollout.max_new_tokens=8", "--set", "data.train_size=4",
		"--set", "data.val_size=2", "--set", "eval.before=false", "--set", "train.report=false", "--set", "train.export=false"}
	code, out := scriptIn(t, cwd, "train.sh", vars, settings...)
	if code != 0 {
		t.Fatalf("train.sh: exit %d\n%s", code, out)
	}
	c, err := config.ReadSaved(filepath.Join(cwd, "runs", "train", rundir.ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	if c.Model != "./mymodel" {
		t.Errorf("saved model %q, want ./mymodel", c.Model)
	}
	code, out = scriptIn(t, cwd, "eval.sh", map[string]string{"CHECKPOINT": "runs/train", "MTGRPO_THREADS": "1"})
	if code != 0 || !strings.Contains(out, "val/score") {
		t.Errorf("eval.sh CHECKPOINT=runs/train: exit %d\n%s", code, out)
	}
	// Without MODEL, the tiny model is written under the caller's directory.
	delete(vars, "MODEL")
	vars["RUN_DIR"] = "runs/tiny"
	if code, out := scriptIn(t, cwd, "train.sh", vars, settings...); code != 0 {
		t.Fatalf("train.sh without MODEL: exit %d\n%s", code, out)
	}
	for _, p := range []string{"models/tiny/config.json", "runs/tiny/" + rundir.ConfigFile} {
		if _, err := os.Stat(filepath.Join(cwd, p)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}
