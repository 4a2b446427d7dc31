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
	{"MODEL", "model", "the policy's model: a directory or a Hugging Face Hub id ORG/NAME[@REVISION]"},
	{"RUN_DIR", "run_dir", "the run directory"},
	{"DATA", "data.train", "training tasks: a parquet or JSONL file in verl's layout"},
	{"VAL_DATA", "data.val", "validation tasks: a parquet or JSONL file"},
	{"ENV_NAME", "env.name", "the environment"},
	{"BATCH_SIZE", "rollout.tasks", "tasks per step (verl's data.train_batch_size)"},
	{"EPOCHS", "train.epochs", "passes over the training tasks, when train.steps is 0"},
	{"STEPS", "train.steps", "RL steps (0: epochs decide)"},
	{"LR", "optim.lr", "the peak learning rate"},
	{"SEED", "seed", "the seed of data, sampling and shuffles (a random model's weights: init.seed)"},
	{"GPUS", "", "the GPUs to train on: an index (GPUS=0 is cuda:0) or a list (0,1,2,3: one process each); unset or cpu: the CPU"},
	{"N_GPUS", "", "data-parallel processes, one per GPU (`mtgrpo train --nproc`; default: the length of GPUS)"},
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

// applyGPUs maps GPUS and N_GPUS onto the device. GPUS is cpu, one GPU index, or a list of them;
// N_GPUS is the number of processes (one per GPU; default: the length of the GPUS list). One
// process on one GPU trains on cuda:INDEX; several processes train on "cuda", each on the GPU
// of its local rank (`mtgrpo train` starts them, `--nproc` defaulting to N_GPUS, with
// CUDA_VISIBLE_DEVICES set to the GPUS list).
func (c *Config) applyGPUs(lookup func(string) (string, bool)) error {
	n, err := NumGPUs(lookup)
	if err != nil {
		return err
	}
	gpus, ok := lookup("GPUS")
	gpus = strings.TrimSpace(gpus)
	if !ok || gpus == "" {
		return nil
	}
	if gpus == "cpu" {
		return c.Set("device", "cpu", "$GPUS")
	}
	ids, err := GPUList(gpus)
	if err != nil {
		return err
	}
	if n == 0 {
		n = len(ids)
	}
	if len(ids) > 1 && len(ids) != n {
		return &Error{Where: "$GPUS", Err: fmt.Errorf("%q lists %d GPUs but N_GPUS is %d (one process per GPU)", gpus, len(ids), n)}
	}
	if n == 1 {
		return c.Set("device", fmt.Sprintf("cuda:%d", ids[0]), "$GPUS")
	}
	return c.Set("device", "cuda", "$GPUS")
}

// NumGPUs reads N_GPUS (0 when unset).
func NumGPUs(lookup func(string) (string, bool)) (int, error) {
	s, ok := lookup("N_GPUS")
	if !ok || strings.TrimSpace(s) == "" {
		return 0, nil
	}
	v, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || v < 1 {
		return 0, &Error{Where: "$N_GPUS", Err: fmt.Errorf("%q: want a positive integer", s)}
	}
	return v, nil
}

// GPUList parses GPUS's list of GPU indexes ("0" or "0,1,2,3").
func GPUList(gpus string) ([]int, error) {
	var ids []int
	for _, f := range strings.Split(gpus, ",") {
		id, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || id < 0 {
			return nil, &Error{Where: "$GPUS", Err: fmt.Errorf("%q: want a GPU index such as 0, a list such as 0,1,2,3, or cpu", gpus)}
		}
		ids = append(ids, id)
	}
	return ids, nil
}
