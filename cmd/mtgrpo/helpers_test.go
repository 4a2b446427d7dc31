package main

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// sharedDir holds what several tests read and none changes (the tiny model); TestMain removes it.
var (
	sharedDir  string
	sharedOnce sync.Once
	sharedErr  error
	tinyDir    string
)

// tinyModel is the directory of the tiny model (`mtgrpo init --preset tiny --seed 1`), written
// once per test binary. Tests must not write into it.
func tinyModel(t testing.TB) string {
	t.Helper()
	sharedOnce.Do(func() {
		if sharedDir, sharedErr = os.MkdirTemp("", "mtgrpo-cmd-test-"); sharedErr != nil {
			return
		}
		tinyDir = filepath.Join(sharedDir, "tiny")
		sharedErr = run([]string{"init", "--preset", "tiny", "--seed", "1", "--out", tinyDir})
	})
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	return tinyDir
}

// tinyRun are the settings that make a training run take seconds on the tiny model: a few short
// episodes per step, small generated data sets, fixed seeds and one thread.
func tinyRun(model, runDir string) []string {
	return []string{"--model", model, "--run-dir", runDir, "--threads", "1", "--seed", "3",
		"--set", "rollout.tasks=2", "--set", "rollout.group=2", "--set", "rollout.max_new_tokens=12",
		"--set", "rollout.max_context_tokens=1024", "--set", "data.train_size=16", "--set", "data.val_size=2",
		"--set", "train.samples=2", "--set", "rollout.slots=8"}
}
