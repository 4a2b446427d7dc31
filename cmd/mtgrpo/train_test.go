package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mtgrpo/mtgrpo/cmd/internal/config"
	rundir "github.com/mtgrpo/mtgrpo/cmd/internal/run"
)

// Each example configuration loads and trains a step on the tiny model (its sizes made tiny by
// overrides): multi-turn GRPO with condensed contexts and the seed's 1/max-context reward, the
// math variant with the python tool, MT-GRPO on the search tool, and PPO with bi-level GAE and a
// critic on FrozenLake. Each run's metrics carry what its algorithm computes.
func TestExampleConfigsTrainAStep(t *testing.T) {
	model := tinyModel(t)
	cases := []struct {
		file    string
		metrics []string
	}{
		{"multiturn_grpo_trainer.yaml", []string{"critic/score/mean", "context/max_tokens/mean", "profile/condense_s", "profile/reward_s"}},
		{"multiturn_grpo_math.yaml", []string{"critic/score/mean", "reward/format/mean"}},
		{"mt_grpo.yaml", []string{"critic/turn_reward/mean", "critic/advantages/max"}},
		{"ppo_multi_turn.yaml", []string{"critic/grad_norm", "critic/vf_loss", "critic/vf_explained_var", "critic/returns/mean", "actor/pg_loss"}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			args := append([]string{"train", "--config", filepath.Join("..", "..", "configs", c.file)}, tinyRun(model, dir)...)
			args = append(args, "--steps", "1", "--set", "eval.before=false", "--set", "train.export=false",
				"--set", "train.report=false", "--set", "multiturn_trajectory.generation.max_sequence_length=1100")
			if err := run(args); err != nil {
				t.Fatal(err)
			}
			recs, err := rundir.ReadMetrics(dir)
			if err != nil || len(recs) != 1 || recs[0].Step != 1 {
				t.Fatalf("metrics: %+v %v; want step 1", recs, err)
			}
			for _, k := range append(c.metrics, "val/score", "timing_s/gen") {
				if _, ok := recs[0].Values[k]; !ok {
					t.Errorf("metric %s missing", k)
				}
			}
			saved, err := config.ReadSaved(filepath.Join(dir, rundir.ConfigFile))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(dir, rundir.CheckpointsDir, "step-00000001", "MANIFEST.json")); err != nil {
				t.Errorf("no final checkpoint: %v", err)
			}
			if saved.Rollout.Tasks != 2 || saved.Model != model {
				t.Errorf("config.yaml: tasks %d model %q", saved.Rollout.Tasks, saved.Model)
			}
		})
	}
}

// Bad input to train, eval, export and demo is an error that names what is wrong: the flag, the
// key with its file and line, the file or directory. Mistakes in what was asked are usage errors
// (exit 2); failures of the work are not (exit 1).
func TestTrainEvalExportBadInput(t *testing.T) {
	model := tinyModel(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	os.WriteFile(file, []byte("x"), 0o644)
	unknown := filepath.Join(dir, "unknown.yaml")
	os.WriteFile(unknown, []byte("rollout:\n  tasks: 2\n  temprature: 0.5\n"), 0o644)
	wrongType := filepath.Join(dir, "type.yaml")
	os.WriteFile(wrongType, []byte("optim:\n  lr: fast\n"), 0o644)
	broken := filepath.Join(dir, "broken.yaml")
	os.WriteFile(broken, []byte("rollout: [\n"), 0o644)
	twoRows := filepath.Join(dir, "val.jsonl")
	if err := run([]string{"data", "gen", "--task", "calc_mult", "--n", "2", "--out", twoRows}); err != nil {
		t.Fatal(err)
	}
	run1 := func(extra ...string) []string {
		return append([]string{"train", "--model", model, "--run-dir", filepath.Join(t.TempDir(), "r"), "--steps", "1"}, extra...)
	}
	cases := []struct {
		args  []string
		want  []string
		usage bool
	}{
		{[]string{"train", "--bogus"}, []string{"unknown flag: --bogus"}, true},
		{[]string{"train", "--run-dir", dir}, []string{"model", "no model"}, true},
		{run1("--config", unknown), []string{unknown + ":3:", "unknown key rollout.temprature", "did you mean rollout.temperature?"}, true},
		{run1("--config", wrongType), []string{wrongType + ":2:", "optim.lr", `want a number, got "fast"`}, true},
		{run1("--config", broken), []string{broken}, true},
		{run1("--config", filepath.Join(dir, "none.yaml")), []string{filepath.Join(dir, "none.yaml"), "no such file"}, true},
		{run1("--steps", "abc"), []string{"--steps", "train.steps", `want an integer, got "abc"`}, true},
		{run1("--lr", "-1"), []string{"optim.lr"}, true},
		{run1("--set", "rollout"), []string{"--set", "want key=value"}, true},
		{run1("stray"), []string{`unexpected argument "stray"`}, true},
		{run1("--preset", "huge"), []string{"--preset", `unknown preset "huge"`}, true},
		{run1("--env", "chess"), []string{"--env", `unknown environment "chess"`}, true},
		{run1("--resume=" + dir), []string{"--resume " + dir, "MANIFEST.json"}, false},
		{[]string{"train", "--model", filepath.Join(dir, "none"), "--run-dir", filepath.Join(dir, "r1")}, []string{"model", filepath.Join(dir, "none"), "no such directory"}, true},
		{run1("--data", filepath.Join(dir, "none.parquet")), []string{"data.train", "none.parquet", "no such file"}, true},
		{run1("--set", "data.val="+filepath.Join(dir, "none.jsonl")), []string{"data.val", "none.jsonl"}, true},
		{run1("--device", "cuda:99"), []string{"device cuda:99"}, true},
		{[]string{"train", "--model", model, "--run-dir", filepath.Join(file, "run")}, []string{"cannot create run directory"}, false},
		{[]string{"eval"}, []string{"give --model DIR or --checkpoint PATH"}, true},
		{[]string{"eval", "--checkpoint", dir}, []string{"no checkpoint there"}, false},
		{[]string{"eval", "--model", model, "--samples", "0"}, []string{"--samples", "eval.samples", "at least 1"}, true},
		{[]string{"eval", "--model", filepath.Join(dir, "none")}, []string{"model", "no such directory"}, true},
		{[]string{"eval", "--model", model, "--val-data", filepath.Join(dir, "none.jsonl")}, []string{"data.val", "none.jsonl"}, true},
		// A file's tasks × samples are bounded as generated tasks' are: 2 × 2^20 > 2^20.
		{[]string{"eval", "--model", model, "--val-data", twoRows, "--samples", "1048576"},
			[]string{"--samples: eval.samples: the 2 rows of data.val " + twoRows + " × eval.samples 1048576 trajectories per evaluation: must be at most 1048576"}, true},
		{run1("--val-data", twoRows, "--set", "eval.samples=1048576"), []string{"the 2 rows of data.val"}, true},
		{[]string{"export"}, []string{"want one checkpoint or run directory, got 0"}, true},
		{[]string{"export", dir}, []string{"--out is required"}, true},
		{[]string{"export", dir, "--out", filepath.Join(dir, "o"), "--dtype", "int8"}, []string{`--dtype "int8"`}, true},
		{[]string{"export", dir, "--out", filepath.Join(dir, "o")}, []string{"no checkpoint there"}, false},
		{[]string{"demo", "--bogus"}, []string{"unknown flag: --bogus"}, true},
		{[]string{"demo", "--run-dir", dir}, []string{dir, "holds files the demo did not write"}, false},
	}
	for _, c := range cases {
		err := run(c.args)
		if err == nil {
			t.Errorf("mtgrpo %q: no error; want one containing %q", c.args, c.want)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("mtgrpo %q: %v; want an error containing %q", c.args, err, w)
			}
		}
		if isUsage := errors.As(err, new(usageError)); isUsage != c.usage {
			t.Errorf("mtgrpo %q: usage error %v, want %v (%v)", c.args, isUsage, c.usage, err)
		}
	}
	// The process's exit status and message, for a usage error and a failure.
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{run1("--config", unknown), 2, "unknown key rollout.temprature"},
		{[]string{"train", "--model", model, "--run-dir", filepath.Join(file, "run")}, 1, "cannot create run directory"},
		{[]string{"train", "--help"}, 0, ""},
	} {
		code, stderr := runChild(t, time.Minute, c.args...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("mtgrpo %q: exit %d, stderr %q; want %d and %q", c.args, code, stderr, c.code, c.want)
		}
	}
}
