package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mtgrpo/mtgrpo/cmd/internal/launch"
	rundir "github.com/mtgrpo/mtgrpo/cmd/internal/run"
	"github.com/mtgrpo/mtgrpo/model/hub/hubtest"
	"github.com/mtgrpo/mtgrpo/torch"
)

// Setup mistakes are found before any work and before the run directory exists: one message
// (printed once, by the launcher, when it would start several processes) and exit status 2.
func TestPreflight(t *testing.T) {
	model := tinyModel(t)
	dir := t.TempDir()
	info, err := torch.Version()
	if err != nil {
		t.Fatal(err)
	}
	twoGPUs := "need the nccl process-group backend" // what GPUS=0,1 lacks here
	switch {
	case !info.CUDABuilt:
		twoGPUs = "GPUS=0,1: this build's libtorch is CPU-only"
	case !info.CUDAAvailable:
		twoGPUs = "no CUDA device works here"
	case info.CUDADevices < 2:
		twoGPUs = "GPUS=0,1: this host has 1 CUDA device(s)"
	case torch.DistBackendBuilt(torch.NCCL):
		twoGPUs = "" // it would train
	}
	gsm8k := filepath.Join(dir, "gsm8k.jsonl") // rows of another environment than calc_mult, the default
	if err := run([]string{"data", "gen", "--task", "gsm8k", "--n", "2", "--out", gsm8k}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		env  []string
		args []string
		want string
	}{
		{nil, []string{"--model", filepath.Join(dir, "mymodel")}, "model: " + filepath.Join(dir, "mymodel") + ": no such directory"},
		{nil, []string{"--data", filepath.Join(dir, "train.parquet")}, "data.train " + filepath.Join(dir, "train.parquet") + ": no such file or directory"},
		{nil, []string{"--device", "cuda:99"}, "device cuda:99: "},
		{nil, []string{"--data", gsm8k}, `row 1 has data_source "openai/gsm8k": not a task of environment calc_mult`},
		{[]string{"GPUS=0,1", "N_GPUS=3"}, nil, `"0,1" lists 2 GPUs but N_GPUS is 3`},
		{[]string{"GPUS=0,1"}, []string{"--nproc", "3"}, "3 processes but GPUS lists 2 GPUs (0,1): one process per GPU"},
		{[]string{"GPUS=0,1"}, nil, twoGPUs},
		{[]string{"HF_HUB_OFFLINE=1", "HF_HUB_CACHE=" + dir}, []string{"--model", "org/tiny"}, "org/tiny is not in the Hugging Face cache " + dir},
		{[]string{"HF_HUB_DOWNLOAD_TIMEOUT=ten"}, []string{"--model", "org/tiny"}, `model: $HF_HUB_DOWNLOAD_TIMEOUT="ten": want a number of seconds`},
		{nil, []string{"--model", "org/tiny@."}, `the revision "." is not a branch, tag or commit name`},
		{nil, []string{"--dtype", "float8"}, `--dtype: dtype: "float8" is not a model dtype (float32, bfloat16, float16)`},
		{nil, []string{"--model", "", "--set", "init.arch=qwen2", "--set", "init.preset=tiny", "--set", "init.hidden_size=100000"},
			"--set: init.hidden_size: 100000: larger than this program supports (at most 65536)"},
		{nil, []string{"--nproc", "2", "--set", "dist.rollout_ranks=2", "--set", "loss.is=token_truncate"}, "dist.rollout_ranks: 2 rollout rank(s) with 2 process(es) (--nproc 2) leave no rank to train: at most 1"},
		{nil, []string{"--set", "dist.rollout_ranks=1", "--set", "loss.is=token_truncate"}, "1 rollout rank(s) with 1 process(es) (one process) leave no rank to train"},
		// Rollout ahead trains one step off-policy: without importance sampling it is refused first.
		{nil, []string{"--nproc", "2", "--set", "dist.rollout_ranks=1"}, "dist.rollout_ranks: 1: rollout ahead trains one step off-policy: set loss.is"},
	} {
		if c.want == "" {
			continue
		}
		runDir := filepath.Join(dir, "run")
		args := append([]string{"train", "--model", model, "--run-dir", runDir, "--threads", "1"}, c.args...)
		cmd := child(args...)
		cmd.Env = append(cmd.Env, c.env...)
		out, _ := cmd.CombinedOutput()
		if code := cmd.ProcessState.ExitCode(); code != 2 || !strings.Contains(string(out), c.want) {
			t.Errorf("%v mtgrpo %q: exit %d, output %q; want 2 and %q", c.env, c.args, code, out, c.want)
		}
		if n := strings.Count(string(out), "mtgrpo:"); n != 1 {
			t.Errorf("%v mtgrpo %q: %d messages, want one:\n%s", c.env, c.args, n, out)
		}
		if _, err := os.Stat(runDir); err == nil {
			t.Errorf("%v mtgrpo %q: the run directory was created", c.env, c.args)
			os.RemoveAll(runDir)
		}
	}
}

// What each build and host lacks for a device and a process count, in a sentence that says
// what to change.
func TestDeviceProblem(t *testing.T) {
	cpuOnly := torch.BuildInfo{DistBackends: []torch.DistBackend{torch.Gloo}}
	noNCCL := torch.BuildInfo{CUDABuilt: true, CUDAAvailable: true, CUDADevices: 8, DistBackends: []torch.DistBackend{torch.Gloo}}
	full := torch.BuildInfo{CUDABuilt: true, CUDAAvailable: true, CUDADevices: 8, DistBackends: []torch.DistBackend{torch.Gloo, torch.NCCL}}
	noDriver := torch.BuildInfo{CUDABuilt: true}
	for _, c := range []struct {
		info  torch.BuildInfo
		dev   torch.Device
		nproc int
		gpus  []int
		want  string // "" for no problem
	}{
		{cpuOnly, torch.CPU, 1, nil, ""},
		{cpuOnly, torch.CPU, 2, nil, ""}, // Gloo on the CPU
		{torch.BuildInfo{}, torch.CPU, 2, nil, "2 processes on cpu need the gloo process-group backend, which this build lacks (it has: none"},
		{cpuOnly, torch.CUDA(0), 1, nil, "device cuda:0: this build's libtorch is CPU-only"},
		{noDriver, torch.CUDA(0), 1, nil, "device cuda:0: no CUDA device works here"},
		{full, torch.CUDA(7), 1, nil, ""},
		{full, torch.CUDA(8), 1, nil, "device cuda:8: this host has 8 CUDA device(s), numbered 0 to 7"},
		{full, torch.CUDA(0), 2, []int{4, 5}, ""},
		{full, torch.CUDA(0), 2, []int{7, 8}, "GPUS=7,8: this host has 8 CUDA device(s)"},
		{full, torch.CUDA(0), 9, nil, "9 processes, one per GPU: this host has 8"},
		{full, torch.CUDA(0), 3, []int{4, 5}, "3 processes but GPUS lists 2 GPUs (4,5): one process per GPU: give --nproc 2"},
		{cpuOnly, torch.CUDA(0), 2, []int{4, 5}, "GPUS=4,5: this build's libtorch is CPU-only"},
		{noNCCL, torch.CUDA(0), 2, []int{4, 5}, "2 processes on cuda:0 need the nccl process-group backend, which this build lacks (it has: gloo; see mtgrpo version): train in one process (--nproc 1, or GPUS=4)"},
	} {
		err := deviceProblem(c.info, c.dev, c.nproc, c.gpus)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v %v nproc %d gpus %v: %v, want %q", c.info, c.dev, c.nproc, c.gpus, err, c.want)
		}
	}
}

// A rank that torchrun or srun started checks its own device and the backend before it joins:
// the CPU with Gloo passes; a CUDA device is refused here by what this build lacks.
func TestCheckRank(t *testing.T) {
	info, err := torch.Version()
	if err != nil {
		t.Fatal(err)
	}
	cpu := launch.Launch{Source: launch.Torchrun, Dist: torch.DistConfig{Rank: 1, WorldSize: 2, Device: torch.CPU}}
	if err := checkRank("train", cpu); (err == nil) != torch.DistBackendBuilt(torch.Gloo) {
		t.Errorf("a CPU rank: %v", err)
	}
	if info.CUDABuilt {
		t.Skip("a CUDA build: the refusal below is for CPU builds")
	}
	gpu := launch.Launch{Source: launch.SLURM, Dist: torch.DistConfig{Rank: 3, WorldSize: 8, Device: torch.CUDA(3)}}
	err = checkRank("train", gpu)
	if want := "train: rank 3 of 8: device cuda:3: this build's libtorch is CPU-only"; err == nil || !strings.Contains(err.Error(), want) || !errors.As(err, new(usageError)) {
		t.Errorf("a CUDA rank on a CPU build: %v, want a usage error with %q", err, want)
	}
}

// A model given by Hub id is read from the Hugging Face cache (offline here: a snapshot put
// there by hand, as huggingface_hub lays it out).
func TestHubModelFromCache(t *testing.T) {
	cache := t.TempDir()
	commit := strings.Repeat("c", 40)
	repo := filepath.Join(cache, "models--org--tiny")
	if err := os.CopyFS(filepath.Join(repo, "snapshots", commit), os.DirFS(tinyModel(t))); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(repo, "refs"), 0o755)
	os.WriteFile(filepath.Join(repo, "refs", "main"), []byte(commit), 0o644)
	t.Setenv("HF_HUB_CACHE", cache)
	t.Setenv("HF_HUB_OFFLINE", "1")
	if err := run([]string{"generate", "--model", "org/tiny", "--prompt", "hi", "--max-new-tokens", "2", "--threads", "1"}); err != nil {
		t.Errorf("generate --model org/tiny: %v", err)
	}
	if err := run([]string{"generate", "--model", "org/tiny@" + commit, "--prompt", "hi", "--max-new-tokens", "2", "--threads", "1"}); err != nil {
		t.Errorf("generate --model org/tiny@COMMIT: %v", err)
	}
}

// A model given by Hub id is downloaded into the Hugging Face cache from HF_ENDPOINT (a fake
// Hub here) and loads from its snapshot; the second use reads the cache.
func TestHubModelDownload(t *testing.T) {
	commit := strings.Repeat("d", 40)
	repo, err := hubtest.DirRepo(tinyModel(t), commit)
	if err != nil {
		t.Fatal(err)
	}
	h := hubtest.New(t, map[string]*hubtest.Repo{"org/tiny": repo})
	cache := t.TempDir()
	t.Setenv("HF_ENDPOINT", h.URL)
	t.Setenv("HF_HUB_CACHE", cache)
	t.Setenv("HF_HUB_OFFLINE", "")
	for range 2 {
		if err := run([]string{"generate", "--model", "org/tiny", "--prompt", "hi", "--max-new-tokens", "2", "--threads", "1"}); err != nil {
			t.Fatalf("generate --model org/tiny: %v", err)
		}
	}
	if n := h.Gets["model.safetensors"]; n != 1 {
		t.Errorf("model.safetensors fetched %d times, want once", n)
	}
	if _, err := os.Stat(filepath.Join(cache, "models--org--tiny", "snapshots", commit, "tokenizer.json")); err != nil {
		t.Error(err)
	}
}

// A run that fails after its run directory exists ends its train.log with the error.
func TestFailedRunLogEndsWithError(t *testing.T) {
	broken := filepath.Join(t.TempDir(), "broken")
	if err := os.CopyFS(broken, os.DirFS(tinyModel(t))); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(broken, "model.safetensors"), []byte("not safetensors"), 0o644); err != nil {
		t.Fatal(err)
	}
	runDir := filepath.Join(t.TempDir(), "run")
	code, stderr := runChild(t, time.Minute, "train", "--model", broken, "--run-dir", runDir, "--threads", "1")
	if code != 1 {
		t.Fatalf("exit %d, want 1:\n%s", code, stderr)
	}
	b, err := os.ReadFile(filepath.Join(runDir, rundir.LogFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if last := lines[len(lines)-1]; !strings.Contains(last, "model.safetensors") || !strings.Contains(last, "ERR") {
		t.Errorf("train.log ends with %q, want the error", last)
	}
}
