package config

import (
	"fmt"
	"strconv"
	"strings"
)

// EnvVar is an environment variable the configuration reads, as the MT-GRPO scripts use them.
type EnvVar struct {
	Name string
	// Key is the configuration key it sets ("" for the special GPUS and N_GPUS).
	Key string
	Doc string
}

// EnvVars are read after the YAML files and before the flags. ENV_NAME, not ENV: POSIX shells
// read $ENV as a start-up file.
var EnvVars = []EnvVar{
	{"MODEL", "model", "the policy's model directory"},
	{"RUN_DIR", "run_dir", "the run directory"},
	{"DATA", "data.train", "training tasks: a parquet or JSONL file in verl's layout"},
	{"VAL_DATA", "data.val", "validation tasks: a parquet or JSONL file"},
	{"ENV_NAME", "env.name", "the environment"},
	{"BATCH_SIZE", "rollout.tasks", "tasks per step (verl's data.train_batch_size)"},
	{"EPOCHS", "train.epochs", "passes over the training tasks, when train.steps is 0"},
	{"STEPS", "train.steps", "RL steps (0: epochs decide)"},
	{"LR", "optim.lr", "the peak learning rate"},
	{"SEED", "seed", "the seed of everything random"},
	{"GPUS", "", "the GPU to train on (an index: GPUS=0 is cuda:0); unset or cpu: the CPU"},
	{"N_GPUS", "", "GPUs to train on; only 1 in this build (more is an error, not a silent single-GPU run)"},
}

// applyEnv sets the keys of the environment variables that are set and not empty.
func (c *Config) applyEnv(lookup func(string) (string, bool)) error {
	for _, v := range EnvVars {
		val, ok := lookup(v.Name)
		if !ok || val == "" || v.Key == "" {
			continue
		}
		if err := c.Set(v.Key, val, "$"+v.Name); err != nil {
			return err
		}
	}
	return c.applyGPUs(lookup)
}

// applyGPUs maps GPUS and N_GPUS onto the device. Several GPUs need the data-parallel launcher,
// which this build does not have: asking for them is an error rather than a run on one GPU that
// the user did not ask for.
func (c *Config) applyGPUs(lookup func(string) (string, bool)) error {
	n := 1
	if s, ok := lookup("N_GPUS"); ok && s != "" {
		v, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || v < 1 {
			return &Error{Where: "$N_GPUS", Err: fmt.Errorf("%q: want a positive integer", s)}
		}
		if v > 1 {
			return &Error{Where: "$N_GPUS", Err: fmt.Errorf("%d GPUs: multi-GPU training is not in this build yet; "+
				"use N_GPUS=1 and GPUS=<index> for one GPU", v)}
		}
		n = v
	}
	gpus, ok := lookup("GPUS")
	gpus = strings.TrimSpace(gpus)
	if !ok || gpus == "" {
		return nil
	}
	if gpus == "cpu" {
		return c.Set("device", "cpu", "$GPUS")
	}
	ids := strings.Split(gpus, ",")
	if len(ids) > n {
		return &Error{Where: "$GPUS", Err: fmt.Errorf("%q lists %d GPUs but N_GPUS is %d; multi-GPU training is not in this build yet",
			gpus, len(ids), n)}
	}
	id, err := strconv.Atoi(strings.TrimSpace(ids[0]))
	if err != nil || id < 0 {
		return &Error{Where: "$GPUS", Err: fmt.Errorf("%q: want a GPU index such as 0, or cpu", gpus)}
	}
	return c.Set("device", fmt.Sprintf("cuda:%d", id), "$GPUS")
}
