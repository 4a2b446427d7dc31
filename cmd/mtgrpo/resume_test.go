package main

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	rundir "github.com/mtgrpo/mtgrpo/cmd/internal/run"
)

// killRunArgs is a run with every phase a resume must cross: the evaluation before training, 2
// SFT steps, the boundary checkpoint, 4 RL steps with evaluations, a checkpoint after every step
// (the newest 2 kept) and the exported model. --resume on every start: the first one finds no
// checkpoint and starts from the beginning.
func killRunArgs(model, dir string) []string {
	return append(append([]string{"train", "--resume"}, tinyRun(model, dir)...), "--steps", "4",
		"--set", "sft.steps=2", "--set", "sft.batch=2", "--set", "sft.tasks=4", "--set", "sft.lr=1e-3",
		"--set", "optim.lr=1e-4", "--set", "train.checkpoint_every=1", "--set", "train.keep_checkpoints=2",
		"--set", "train.eval_every=2", "--set", "train.report=false", "--set", "data.val_size=2")
}

// startChild starts `mtgrpo args...` with its output in a buffer; the channel delivers its exit.
func startChild(t *testing.T, args []string) (*bytes.Buffer, <-chan error, func()) {
	t.Helper()
	c := child(args...)
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	return &out, done, func() { c.Process.Signal(syscall.SIGKILL) }
}

// SIGKILL at random points of a loop of runs: every run resumes from the newest checkpoint, no
// checkpoint is ever corrupt, and on the CPU with fixed seeds the interrupted-and-resumed run ends
// with the uninterrupted run's weights and optimizer state, bit for bit, having logged the same
// metrics for every step exactly once.
func TestKillAndResume(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and resumes a dozen training processes")
	}
	model := tinyModel(t)
	ref := filepath.Join(t.TempDir(), "ref")
	t0 := time.Now()
	out, done, _ := startChild(t, killRunArgs(model, ref))
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("uninterrupted run: %v\n%s", err, out)
		}
	case <-time.After(5 * time.Minute):
		t.Fatal("uninterrupted run still going after 5 minutes")
	}
	whole := time.Since(t0)

	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 1))
	t.Logf("uninterrupted run: %v; kill points drawn with seed %d", whole.Round(time.Millisecond), seed)
	// Rounds of starts, each killed at a random point of the uninterrupted run's length until one
	// finishes; each round's result must equal the uninterrupted run. Rounds go on until enough
	// kills have landed and enough starts have resumed from a checkpoint.
	kills, resumed := 0, 0
	for round := 0; kills < 6 || resumed < 3; round++ {
		if round == 10 {
			t.Fatalf("after %d rounds only %d kills and %d resumes", round, kills, resumed)
		}
		dir := filepath.Join(t.TempDir(), "killed")
		for attempt := 0; ; attempt++ {
			started := time.Now()
			out, done, kill := startChild(t, killRunArgs(model, dir))
			// A kill point within the shortest whole run seen so far: the machine's load changes,
			// and a point past a run's end kills nothing.
			wait := time.Duration(rng.Int64N(int64(whole))) + 100*time.Millisecond
			if attempt == 6 { // on a loaded machine starts may be slower than the kills: let it finish
				wait = 5 * time.Minute
			}
			var err error
			select {
			case err = <-done:
			case <-time.After(wait):
				kill()
				<-done
				kills++
				err = errKilled
			}
			checkCheckpoints(t, dir)
			if err == nil {
				if attempt == 0 {
					whole = min(whole, time.Since(started))
				}
				break
			}
			if err != errKilled {
				t.Fatalf("round %d start %d: %v\n%s", round, attempt, err, out)
			}
			t.Logf("round %d start %d: killed after %v", round, attempt, wait.Round(time.Millisecond))
		}
		n := strings.Count(logOf(dir), "resuming")
		resumed += n
		t.Logf("round %d: finished; %d starts resumed from a checkpoint", round, n)
		sameRun(t, ref, dir)
	}
	t.Logf("%d kills, %d resumes from a checkpoint", kills, resumed)
}

// sameRun checks that a run ended with the reference's final checkpoint (weights and trainer
// state) and exported model, bit for bit, having logged the same metrics.
func sameRun(t *testing.T, ref, dir string) {
	t.Helper()
	final := filepath.Join(rundir.CheckpointsDir, "step-00000006")
	for _, f := range []string{filepath.Join(final, "model", "model.safetensors"), filepath.Join(final, "trainer.safetensors"),
		filepath.Join("model", "model.safetensors")} {
		a, errA := os.ReadFile(filepath.Join(ref, f))
		b, errB := os.ReadFile(filepath.Join(dir, f))
		if errA != nil || errB != nil || !bytes.Equal(a, b) {
			t.Errorf("%s: the resumed run's differs from the uninterrupted run's (%v, %v)", f, errA, errB)
		}
	}
	sameMetrics(t, ref, dir)
}

var errKilled = errors.New("killed")

func logOf(dir string) string {
	b, _ := os.ReadFile(filepath.Join(dir, rundir.LogFile))
	return string(b)
}

// checkCheckpoints verifies every checkpoint of a run against its manifest, contents included.
func checkCheckpoints(t *testing.T, dir string) {
	t.Helper()
	ents, _ := os.ReadDir(filepath.Join(dir, rundir.CheckpointsDir))
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), "step-") {
			continue // a killed writer's temporary directory: removed by the next start
		}
		if err := rundir.Verify(filepath.Join(dir, rundir.CheckpointsDir, e.Name()), true); err != nil {
			t.Errorf("corrupt checkpoint: %v", err)
		}
	}
}

// sameMetrics checks that two runs logged the same steps, once each, with the same values
// (wall-clock timings and throughput aside).
func sameMetrics(t *testing.T, a, b string) {
	t.Helper()
	ra, errA := rundir.ReadMetrics(a)
	rb, errB := rundir.ReadMetrics(b)
	if errA != nil || errB != nil {
		t.Fatal(errA, errB)
	}
	if len(ra) != len(rb) || len(ra) != 7 {
		t.Fatalf("%d and %d metric records, want 7 each (steps 0 to 6)", len(ra), len(rb))
	}
	timing := func(k string) bool {
		return strings.HasPrefix(k, "timing_") || strings.HasPrefix(k, "perf/throughput") || k == "val/timing_s"
	}
	for i := range ra {
		if ra[i].Step != i || rb[i].Step != i {
			t.Errorf("record %d: steps %d and %d", i, ra[i].Step, rb[i].Step)
		}
		for k, v := range ra[i].Values {
			if w, ok := rb[i].Values[k]; !timing(k) && (!ok || w != v) {
				t.Errorf("step %d %s: %v uninterrupted, %v resumed", i, k, v, w)
			}
		}
		if len(ra[i].Values) != len(rb[i].Values) {
			t.Errorf("step %d: %d and %d metrics", i, len(ra[i].Values), len(rb[i].Values))
		}
	}
}

// SIGINT stops training after the step in progress with a checkpoint of that step, exiting 130;
// SIGTERM the same with 143. The run then resumes from that checkpoint.
func TestSignalStopsAfterStepWithCheckpoint(t *testing.T) {
	model := tinyModel(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		dir := filepath.Join(t.TempDir(), "run")
		args := append(append([]string{"train"}, tinyRun(model, dir)...), "--steps", "50", "--set", "eval.before=false",
			"--set", "train.report=false")
		c := child(args...)
		var out bytes.Buffer
		c.Stdout, c.Stderr = &out, &out
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- c.Wait() }()
		deadline := time.Now().Add(2 * time.Minute)
		for {
			if recs, _ := rundir.ReadMetrics(dir); len(recs) > 0 {
				break
			}
			if time.Now().After(deadline) {
				c.Process.Kill()
				t.Fatalf("no step logged in 2 minutes")
			}
			time.Sleep(50 * time.Millisecond)
		}
		c.Process.Signal(sig)
		select {
		case <-done:
		case <-time.After(2 * time.Minute):
			c.Process.Kill()
			t.Fatalf("%v: still running 2 minutes after the signal", sig)
		}
		if code := c.ProcessState.ExitCode(); code != 128+int(sig) || !strings.Contains(out.String(), "continue with: mtgrpo train --resume") {
			t.Errorf("%v: exit %d, want %d; output:\n%s", sig, code, 128+int(sig), out.String())
		}
		recs, err := rundir.ReadMetrics(dir)
		if err != nil || len(recs) == 0 {
			t.Fatal(err)
		}
		lastStep := recs[len(recs)-1].Step
		cs, err := rundir.OpenCheckpoints(filepath.Join(dir, rundir.CheckpointsDir), 0)
		if err != nil {
			t.Fatal(err)
		}
		ck, ok, err := cs.Latest()
		if err != nil || !ok || ck.Step != lastStep || lastStep >= 50 {
			t.Errorf("%v: newest checkpoint %+v (%v %v), last step logged %d", sig, ck, ok, err, lastStep)
		}
		// The run continues from there.
		more := append(append([]string{"train", "--resume"}, tinyRun(model, dir)...), "--steps", "50", "--set", "eval.before=false",
			"--set", "train.report=false", "--set", "train.steps="+itoa(lastStep+1), "--set", "train.export=false")
		if err := run(more); err != nil {
			t.Fatal(err)
		}
		if recs, _ := rundir.ReadMetrics(dir); recs[len(recs)-1].Step != lastStep+1 {
			t.Errorf("%v: resumed run ended at step %d, want %d", sig, recs[len(recs)-1].Step, lastStep+1)
		}
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
