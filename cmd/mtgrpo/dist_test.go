package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mtgrpo/mtgrpo/cmd/internal/launch"
	rundir "github.com/mtgrpo/mtgrpo/cmd/internal/run"
	"github.com/mtgrpo/mtgrpo/torch/safetensors"
)

// dpTol bounds |one process − two processes| on any exported weight after the script below (2 SFT
// steps at lr 1e-3, 1 RL step). The ranks sum their halves of each gradient, so gradient elements
// differ from one process's in the last float32 bits; AdamW divides by √v + ε (ε = 1e-8), so an
// element whose gradient is itself near ε moves by up to lr·Δg/ε more or less. Observed: 3.2e-6 on
// one element (the grpo package's distributed test states the same bound for the same reason).
const dpTol = 1e-4

// dpArgs is a short run with a learning signal (SFT on calc_mult's demonstrations) and an RL step.
func dpArgs(model, runDir string) []string {
	return append([]string{"train"}, append(tinyRun(model, runDir), "--env", "calc_mult", "--steps", "1",
		"--set", "sft.steps=2", "--set", "sft.batch=4", "--set", "sft.tasks=8", "--set", "sft.lr=1e-3",
		"--set", "train.report=false", "--set", "rollout.max_new_tokens=8")...)
}

// `mtgrpo train --nproc 2` trains as one process does: the same exported weights within dpTol,
// every step's metrics written once by rank 0; ZeRO-1 and ZeRO-3 (with gradient checkpointing)
// give the same weights; the same run under torchrun's variables (set by the test, as torchrun would) is the
// --nproc run bit for bit; and a world-size-2 checkpoint (ZeRO-1's) resumes in one process.
func TestTrainDataParallel(t *testing.T) {
	if testing.Short() {
		t.Skip("starts several training processes")
	}
	model := tinyModel(t)
	dir := t.TempDir()
	runOne := func(name string, extra ...string) string {
		runDir := filepath.Join(dir, name)
		code, stderr := runChild(t, 3*time.Minute, append(dpArgs(model, runDir), extra...)...)
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s", name, code, stderr)
		}
		return runDir
	}
	one := runOne("one")
	two := runOne("two", "--nproc", "2")
	zero := runOne("zero", "--nproc", "2", "--set", "dist.zero1=true")
	zero3 := runOne("zero3", "--nproc", "2", "--set", "dist.zero_stage=3", "--set", "update.gradient_checkpointing=true")

	ref := exported(t, one)
	for name, run := range map[string]string{"--nproc 2": two, "--nproc 2 with ZeRO-1": zero, "--nproc 2 with ZeRO-3": zero3} {
		d, at := maxWeightDiff(t, ref, exported(t, run))
		t.Logf("%s vs one process: largest weight difference %.3g (%s)", name, d, at)
		if d > dpTol {
			t.Errorf("%s: weights differ from one process by %g at %s", name, d, at)
		}
		recs, err := rundir.ReadMetrics(run)
		if err != nil {
			t.Fatal(err)
		}
		var steps []int
		for _, r := range recs {
			steps = append(steps, r.Step)
		}
		if fmt.Sprint(steps) != "[0 1 2 3]" {
			t.Errorf("%s: metrics.jsonl steps %v, want each of 0..3 once (rank 0 alone writes)", name, steps)
		}
	}

	// Rollout ahead: rank 1 generates one batch ahead of rank 0, which trains and writes the run.
	ahead := runOne("ahead", "--nproc", "2", "--set", "dist.rollout_ranks=1", "--set", "loss.is=token_truncate")
	recs, err := rundir.ReadMetrics(ahead)
	if err != nil || len(recs) == 0 {
		t.Fatalf("rollout ahead: metrics %v", err)
	}
	if _, ok := recs[len(recs)-1].Values["async/staleness"]; !ok {
		t.Errorf("rollout ahead: no async/staleness in the last step's metrics %v", recs[len(recs)-1].Values)
	}

	// torchrun's contract, set by hand: two processes with RANK, WORLD_SIZE, LOCAL_RANK,
	// MASTER_ADDR, MASTER_PORT.
	tr := filepath.Join(dir, "torchrun")
	cmds, outs := startRanks(t, 2, dpArgs(model, tr))
	for r, c := range cmds {
		if err := waitExit(c, 3*time.Minute); err != nil {
			t.Fatalf("torchrun rank %d: %v\n%s", r, err, outs[r])
		}
	}
	if d, at := maxWeightDiff(t, exported(t, two), exported(t, tr)); d != 0 {
		t.Errorf("torchrun's variables vs --nproc: weights differ by %g at %s", d, at)
	}
	if strings.Contains(outs[1].String(), "mtgrpo train: run") {
		t.Errorf("rank 1 printed the run's header:\n%s", outs[1])
	}

	// The ZeRO-1 run's checkpoint (world size 2) continues in one process.
	code, stderr := runChild(t, 3*time.Minute, append(dpArgs(model, zero), "--resume", "--steps", "2")...)
	if code != 0 {
		t.Fatalf("resuming the ZeRO-1 run in one process: exit %d\n%s", code, stderr)
	}
	recs, _ = rundir.ReadMetrics(zero)
	if n := len(recs); n == 0 || recs[n-1].Step != 4 {
		t.Errorf("resumed run: metrics %+v, want it to end at step 4", recs)
	}
}

// A rank that dies makes the other stop with an error naming it, within the watchdog's bound
// (watchdogDead) plus a step, rather than waiting for the collective timeout.
func TestTrainRankDies(t *testing.T) {
	if testing.Short() {
		t.Skip("starts training processes")
	}
	model := tinyModel(t)
	runDir := filepath.Join(t.TempDir(), "run")
	args := append(dpArgs(model, runDir), "--steps", "500", "--set", "train.eval_every=0", "--set", "train.checkpoint_every=0")
	cmds, outs := startRanks(t, 2, args)
	out0 := outs[0]
	defer cmds[0].Process.Kill()
	// Wait until training runs (rank 0 has written a step), then kill rank 1.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if recs, _ := rundir.ReadMetrics(runDir); len(recs) > 0 && recs[len(recs)-1].Step >= 3 {
			break
		}
		if time.Now().After(deadline) {
			cmds[1].Process.Kill()
			t.Fatalf("no training step within 2 minutes:\n%s", out0.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	cmds[1].Process.Kill()
	cmds[1].Wait()
	killed := time.Now()
	bound := watchdogDead + 45*time.Second
	err := waitExit(cmds[0], bound)
	took := time.Since(killed)
	t.Logf("rank 0 stopped %v after rank 1 was killed: %v; its last lines:\n%s", took.Round(time.Millisecond), err, lastLines(out0.String(), 3))
	if err == nil || strings.Contains(err.Error(), "still running") {
		t.Fatalf("rank 0: %v after %v; want a failure within %v\n%s", err, took, bound, out0.String())
	}
	if last := lastLines(out0.String(), 1); !strings.Contains(last, "rank 0 of 2") || !strings.Contains(last, "another rank died") {
		t.Errorf("rank 0's error does not say which rank it is and what to look for:\n%s", last)
	}
}

// startRanks starts n copies of `mtgrpo args` under torchrun's variables (the store on 127.0.0.1
// at a free port), as torchrun would, each with its stdout and stderr in its buffer.
func startRanks(t *testing.T, n int, args []string) ([]*exec.Cmd, []*bytes.Buffer) {
	t.Helper()
	port, err := launch.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	var cmds []*exec.Cmd
	var outs []*bytes.Buffer
	for r := range n {
		c := child(args...)
		c.Env = append(c.Env, "WORLD_SIZE="+strconv.Itoa(n), "RANK="+strconv.Itoa(r), "LOCAL_RANK="+strconv.Itoa(r),
			"MASTER_ADDR=127.0.0.1", "MASTER_PORT="+strconv.Itoa(port))
		var b bytes.Buffer
		c.Stderr, c.Stdout = &b, &b
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, c), append(outs, &b)
	}
	return cmds, outs
}

// waitExit waits for c at most d.
func waitExit(c *exec.Cmd, d time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		c.Process.Kill()
		<-done
		return fmt.Errorf("still running after %v", d)
	}
}

// exported reads the float32 weights of a run's exported model.
func exported(t *testing.T, runDir string) map[string][]float32 {
	t.Helper()
	ck, err := safetensors.OpenDir(filepath.Join(runDir, "model"))
	if err != nil {
		t.Fatal(err)
	}
	defer ck.Close()
	w := map[string][]float32{}
	for _, n := range ck.Names() {
		b, err := ck.Data(n)
		if err != nil {
			t.Fatal(err)
		}
		v := make([]float32, len(b)/4)
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		w[n] = v
	}
	return w
}

// maxWeightDiff is the largest |a − b| over all weights, and where.
func maxWeightDiff(t *testing.T, a, b map[string][]float32) (float64, string) {
	t.Helper()
	var d float64
	where := ""
	for n, x := range a {
		y, ok := b[n]
		if !ok || len(x) != len(y) {
			t.Fatalf("weight %s missing or resized", n)
		}
		for i := range x {
			if e := math.Abs(float64(x[i] - y[i])); e > d || math.IsNaN(e) {
				d, where = e, fmt.Sprintf("%s[%d]", n, i)
			}
		}
	}
	return d, where
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(l[max(0, len(l)-n):], "\n")
}

// A SageMaker training job on two hosts (two processes here, each with its own fake /opt/ml):
// hyperparameters.json's keys and the train and model channels configure the run, the first
// host's /opt/ml/checkpoints holds the run directory and its /opt/ml/model the exported model.
func TestTrainSageMaker(t *testing.T) {
	if testing.Short() {
		t.Skip("starts training processes")
	}
	model := tinyModel(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "train.jsonl")
	if err := run([]string{"data", "gen", "--task", "gsm8k", "--n", "16", "--seed", "2", "--out", data}); err != nil {
		t.Fatal(err)
	}
	port, err := launch.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	hyper := `{"env.name": "gsm8k", "train.steps": "1", "rollout.tasks": 2, "rollout.group": "2", "rollout.max_new_tokens": "8",
		"data.val_size": "2", "train.report": "false", "seed": "3"}`
	var cmds []*exec.Cmd
	var outs []*bytes.Buffer
	for h, host := range []string{"localhost", "algo-2"} {
		root := filepath.Join(dir, host, "opt", "ml")
		train := filepath.Join(root, "input", "data", "train")
		for _, d := range []string{filepath.Join(root, "input", "config"), train} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		os.WriteFile(filepath.Join(root, "input", "config", "hyperparameters.json"), []byte(hyper), 0o644)
		b, _ := os.ReadFile(data)
		os.WriteFile(filepath.Join(train, "train.jsonl"), b, 0o644)
		c := child("train", "--threads", "1")
		c.Env = append(c.Env, "SM_HOSTS=[\"localhost\",\"algo-2\"]", "SM_CURRENT_HOST="+[]string{"localhost", "algo-2"}[h],
			"SM_NUM_GPUS=0", "SM_CHANNEL_TRAIN="+train, "SM_CHANNEL_MODEL="+model, "MTGRPO_SAGEMAKER_ROOT="+root,
			"MASTER_PORT="+strconv.Itoa(port))
		var out bytes.Buffer
		c.Stdout, c.Stderr = &out, &out
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, c), append(outs, &out)
	}
	for h, c := range cmds {
		if err := waitExit(c, 3*time.Minute); err != nil {
			t.Fatalf("host %d: %v\n%s", h, err, outs[h])
		}
	}
	first := filepath.Join(dir, "localhost", "opt", "ml")
	recs, err := rundir.ReadMetrics(filepath.Join(first, "checkpoints"))
	if err != nil || len(recs) == 0 || recs[len(recs)-1].Step != 1 {
		t.Fatalf("/opt/ml/checkpoints: metrics %+v %v\n%s", recs, err, outs[0])
	}
	if _, err := os.Stat(filepath.Join(first, "model", "config.json")); err != nil {
		t.Errorf("/opt/ml/model: %v", err)
	}
	saved, err := os.ReadFile(filepath.Join(first, "checkpoints", rundir.ConfigFile))
	if err != nil || !strings.Contains(string(saved), "train.jsonl") || !strings.Contains(string(saved), "max_new_tokens: 8") {
		t.Errorf("config.yaml does not carry the channel and hyperparameters (%v):\n%s", err, saved)
	}
	second := filepath.Join(dir, "algo-2", "opt", "ml")
	if ents, _ := os.ReadDir(filepath.Join(second, "checkpoints")); len(ents) > 0 {
		t.Errorf("the second host wrote a run directory: %v", ents)
	}
}
