package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/mtgrpo/mtgrpo/cmd/internal/config"
	"github.com/mtgrpo/mtgrpo/cmd/internal/inputs"
	"github.com/mtgrpo/mtgrpo/cmd/internal/launch"
	"github.com/mtgrpo/mtgrpo/cmd/internal/progress"
	"github.com/mtgrpo/mtgrpo/env/data"
	"github.com/mtgrpo/mtgrpo/model/hub"
	"github.com/mtgrpo/mtgrpo/torch"
)

// Checks before any work: a run's device, models and data are checked, and Hub models
// downloaded, before its run directory exists, so that a setup mistake costs nothing and leaves
// nothing behind. Every mistake found is a usageError (exit status 2) saying what to change.

// runModels are the local directories of a run's models (a Hub id resolved into the cache).
type runModels struct {
	policy, critic string // "" when the configuration names none
}

// preflight checks a run's configuration for nproc processes on this host (1 for one process,
// or for one rank of a run that a launcher started).
func preflight(cmd string, cfg *config.Config, nproc int) (runModels, error) {
	if err := checkDevice(cmd, cfg.Device, nproc); err != nil {
		return runModels{}, err
	}
	var m runModels
	var err error
	if m.policy, err = resolveModel(cmd, "model", cfg.Model); err != nil {
		return runModels{}, err
	}
	if m.critic, err = resolveModel(cmd, "critic_model", cfg.CriticModel); err != nil {
		return runModels{}, err
	}
	return m, checkDataFiles(cmd, cfg, true)
}

// resolveModel finds the model directory a --model value stands for (package hub: a
// directory, or a Hub id from the Hugging Face cache, downloaded there unless HF_HUB_OFFLINE=1);
// "" stays "". A name that leads to no model is a usage error naming the key.
func resolveModel(cmd, key, name string) (string, error) {
	return resolveModelFiles(cmd, key, name, false)
}

// resolveModelConfig is resolveModel for a caller that reads config.json alone: of a Hub id
// nothing else is fetched.
func resolveModelConfig(cmd, key, name string) (string, error) {
	return resolveModelFiles(cmd, key, name, true)
}

func resolveModelFiles(cmd, key, name string, configOnly bool) (string, error) {
	if name == "" {
		return "", nil
	}
	env, err := hub.FromEnv(os.LookupEnv)
	if err != nil {
		return "", usagef("%s: %s: %v", cmd, key, err)
	}
	bars := progress.New(os.Stderr)
	defer bars.Wait()
	dir, err := hub.Resolve(context.Background(), name, hub.Options{Env: env,
		Progress: func(file string, size int64) hub.Meter { return bars.Bar(file, size, progress.Bytes) }, Note: func(s string) { fmt.Fprintf(os.Stderr, "mtgrpo %s: %s\n", cmd, s) },
		ConfigOnly: configOnly})
	switch {
	case errors.Is(err, hub.ErrNoModel):
		return "", usagef("%s: %s: %v", cmd, key, err)
	case err != nil:
		return "", fmt.Errorf("%s: %s: %w", cmd, key, err)
	}
	return dir, nil
}

// checkDataFiles checks that the data files the configuration names exist (the training
// tasks only when train).
func checkDataFiles(cmd string, cfg *config.Config, train bool) error {
	if cfg.Data.GroundTruthFile != "" {
		if _, err := os.Stat(cfg.Data.GroundTruthFile); err != nil {
			return usagef("%s: data.ground_truth_file %s: %v: give an existing parquet or JSONL file", cmd, cfg.Data.GroundTruthFile, errors.Unwrap(err))
		}
	}
	sets := []struct {
		key   string
		files config.Files
	}{{"data.val", cfg.Data.Val}}
	if train {
		sets = append([]struct {
			key   string
			files config.Files
		}{{"data.train", cfg.Data.Train}}, sets...)
	}
	for _, set := range sets {
		rows := 0
		for _, f := range set.files {
			if _, err := os.Stat(f); err != nil {
				return usagef("%s: %s %s: %v: give an existing parquet or JSONL file", cmd, set.key, f, errors.Unwrap(err))
			}
			// Rows of another environment's tasks, or more validation tasks than an evaluation may
			// play, are configuration mistakes: said here, before any work. A file that does not
			// read is left to the run, which names the row. The run gets this reading (package
			// inputs): a FIFO is read once.
			rs, _, err := inputs.Rows(f, data.Options{SkipInvalid: cfg.Data.SkipInvalid})
			if err != nil {
				continue
			}
			if err := cfg.CheckRows(f, rs); err != nil {
				return usagef("%s: %v", cmd, err)
			}
			rows += len(rs)
		}
		if set.key == "data.val" && len(set.files) > 0 {
			if err := cfg.CheckEvalSize(rows, fmt.Sprintf("the %d rows of data.val %s", rows, set.files)); err != nil {
				return usagef("%s: %v", cmd, err)
			}
		}
	}
	return nil
}

// checkDevice checks that device exists for nproc processes, with what `mtgrpo version`
// reports of the libtorch behind the shim.
func checkDevice(cmd, device string, nproc int) error {
	dev, err := torch.ParseDevice(device)
	if err != nil {
		return usagef("%s: device: %v", cmd, err)
	}
	if !dev.IsCUDA() && nproc == 1 {
		return nil
	}
	info, err := torch.Version()
	if err != nil {
		return err
	}
	gpus, err := launcherGPUs(nproc)
	if err != nil {
		return usagef("%s: %v", cmd, err)
	}
	if err := deviceProblem(info, dev, nproc, gpus); err != nil {
		return usagef("%s: %v", cmd, err)
	}
	return nil
}

// launcherGPUs is the GPUS list that this process hands its nproc > 1 ranks as
// CUDA_VISIBLE_DEVICES (spawnRanks), nil when it hands none.
func launcherGPUs(nproc int) ([]int, error) {
	gpus := strings.TrimSpace(os.Getenv("GPUS"))
	if nproc == 1 || gpus == "" || gpus == "cpu" || os.Getenv("CUDA_VISIBLE_DEVICES") != "" {
		return nil, nil
	}
	return config.GPUList(gpus)
}

// deviceProblem says what is wrong with training on dev in nproc processes (the GPUs of the
// list gpus, when the launcher restricts them to it) with the libtorch info describes; nil when
// nothing is.
func deviceProblem(info torch.BuildInfo, dev torch.Device, nproc int, gpus []int) error {
	if nproc > 1 && len(gpus) > 0 && len(gpus) != nproc {
		return fmt.Errorf("%d processes but GPUS lists %d GPUs (%s): one process per GPU: give --nproc %d (or N_GPUS=%d), or list %d GPUs",
			nproc, len(gpus), joinInts(gpus), len(gpus), len(gpus), nproc)
	}
	if dev.IsCUDA() {
		if err := cudaProblem(info, dev, nproc, gpus); err != nil {
			return err
		}
	}
	return backendProblem(info, dev, nproc, gpus)
}

// backendProblem says what is missing for nproc processes to form a process group on dev.
func backendProblem(info torch.BuildInfo, dev torch.Device, nproc int, gpus []int) error {
	if nproc == 1 {
		return nil
	}
	backend := torch.Gloo
	if dev.IsCUDA() {
		backend = torch.NCCL
	}
	if !slices.Contains(info.DistBackends, backend) {
		return fmt.Errorf("%d processes on %s need the %s process-group backend, which this build lacks (it has: %s; see mtgrpo version): train in one process (--nproc 1, or GPUS=%s), or build the shim with %s",
			nproc, dev, backend, backendList(info.DistBackends), firstGPU(gpus), backend)
	}
	return nil
}

// checkRank checks, in one process of a run that a launcher (torchrun, srun, --nproc) started,
// its own device and the process group's backend, before it joins the others.
func checkRank(cmd string, l launch.Launch) error {
	if !l.Distributed() {
		return nil
	}
	info, err := torch.Version()
	if err != nil {
		return err
	}
	err = deviceProblem(info, l.Dist.Device, 1, nil)
	if err == nil {
		err = backendProblem(info, l.Dist.Device, max(l.Dist.WorldSize, 2), nil)
	}
	if err != nil {
		return usagef("%s: rank %d of %d: %v", cmd, l.Dist.Rank, l.Dist.WorldSize, err)
	}
	return nil
}

// cudaProblem says what is wrong with training on the CUDA device dev (the GPUs gpus, or nproc
// of them, for several processes).
func cudaProblem(info torch.BuildInfo, dev torch.Device, nproc int, gpus []int) error {
	need, what := dev.Index()+1, fmt.Sprintf("device %s", dev)
	switch {
	case len(gpus) > 0:
		need, what = slices.Max(gpus)+1, "GPUS="+joinInts(gpus)
	case nproc > 1:
		need, what = nproc, fmt.Sprintf("%d processes, one per GPU", nproc)
	}
	switch {
	case !info.CUDABuilt:
		return fmt.Errorf("%s: this build's libtorch is CPU-only (see mtgrpo version): use --device cpu (or GPUS=cpu), or build the shim against a CUDA libtorch (docs/setup.md)", what)
	case !info.CUDAAvailable || info.CUDADevices == 0:
		return fmt.Errorf("%s: no CUDA device works here (CUDA_VISIBLE_DEVICES=%q; see nvidia-smi and mtgrpo version): fix the driver or the visible devices, or use --device cpu", what, os.Getenv("CUDA_VISIBLE_DEVICES"))
	case need > info.CUDADevices:
		return fmt.Errorf("%s: this host has %d CUDA device(s), numbered 0 to %d: pick GPUs in that range (GPUS, --device cuda:N)",
			what, info.CUDADevices, info.CUDADevices-1)
	}
	return nil
}

func backendList(bs []torch.DistBackend) string {
	if len(bs) == 0 {
		return "none"
	}
	s := make([]string, len(bs))
	for i, b := range bs {
		s[i] = string(b)
	}
	return strings.Join(s, ", ")
}

func firstGPU(gpus []int) string {
	if len(gpus) == 0 {
		return "0"
	}
	return fmt.Sprint(gpus[0])
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ",")
}
