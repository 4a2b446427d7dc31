package run

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain turns the test binary into a checkpoint writer for the kill test when asked.
func TestMain(m *testing.M) {
	if dir := os.Getenv("MTGRPO_TEST_CHECKPOINT_WRITER"); dir != "" {
		os.Exit(writerLoop(dir))
	}
	os.Exit(m.Run())
}

// payload is what a checkpoint of step holds: 1 MiB derived from the step, in two files, one in
// a subdirectory (as optimizer state would be).
func payload(step int) (weights, state []byte) {
	r := rand.New(rand.NewPCG(uint64(step), 9))
	weights = make([]byte, 1<<20)
	for i := range weights {
		weights[i] = byte(r.Uint32())
	}
	return weights, []byte(fmt.Sprintf(`{"step": %d}`, step))
}

func writeStep(step int) func(string) error {
	return func(dir string) error {
		w, s := payload(step)
		if err := os.WriteFile(filepath.Join(dir, "model.safetensors"), w, 0o644); err != nil {
			return err
		}
		if err := os.Mkdir(filepath.Join(dir, "optim"), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, "optim", "state.json"), s, 0o644)
	}
}

// writerLoop resumes from the newest checkpoint and saves one per step until killed.
func writerLoop(dir string) int {
	c, err := OpenCheckpoints(dir, 2)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	last, _, _ := c.Latest()
	for step := last.Step + 1; step < last.Step+1000; step++ {
		if _, err := c.Save(step, writeStep(step)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return 0
}

// checkCheckpoint verifies a checkpoint's manifest and that it holds its own step's payload.
func checkCheckpoint(t *testing.T, ck Checkpoint) {
	t.Helper()
	if err := Verify(ck.Dir, true); err != nil {
		t.Fatal(err)
	}
	w, s := payload(ck.Step)
	gotW, _ := os.ReadFile(filepath.Join(ck.Dir, "model.safetensors"))
	gotS, _ := os.ReadFile(filepath.Join(ck.Dir, "optim", "state.json"))
	if !bytes.Equal(gotW, w) || !bytes.Equal(gotS, s) {
		t.Fatalf("checkpoint %d holds another step's data", ck.Step)
	}
}

func TestCheckpointsSaveListPrune(t *testing.T) {
	dir := t.TempDir()
	c, err := OpenCheckpoints(dir, 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := c.Latest(); ok || err != nil {
		t.Fatalf("empty: %v %v", ok, err)
	}
	for step := 1; step <= 4; step++ {
		ck, err := c.Save(step*10, writeStep(step*10))
		if err != nil {
			t.Fatal(err)
		}
		checkCheckpoint(t, ck)
	}
	all, _ := c.List()
	if len(all) != 2 || all[0].Step != 30 || all[1].Step != 40 {
		t.Fatalf("kept %+v, want steps 30 and 40", all)
	}
	// The same step saved again (after a resume) replaces it whole.
	if _, err := c.Save(40, writeStep(40)); err != nil {
		t.Fatal(err)
	}
	// A failed write leaves nothing, not even its temporary directory.
	boom := errors.New("disk full")
	if _, err := c.Save(50, func(string) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("failed write: %v", err)
	}
	ents, _ := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "step-00000030 step-00000040" {
		t.Errorf("directory holds %v", names)
	}
	// A truncated file makes the checkpoint incomplete: Latest falls back to the one before, and
	// Verify names the file.
	os.Truncate(filepath.Join(dir, "step-00000040", "model.safetensors"), 100)
	if ck, ok, _ := c.Latest(); !ok || ck.Step != 30 {
		t.Errorf("latest after damage: %+v", ck)
	}
	if err := Verify(filepath.Join(dir, "step-00000040"), false); err == nil || !strings.Contains(err.Error(), "model.safetensors has 100 bytes") {
		t.Errorf("verify: %v", err)
	}
	// Same size, different bytes: only the contents check sees it.
	p := filepath.Join(dir, "step-00000030", "optim", "state.json")
	b, _ := os.ReadFile(p)
	b[0] ^= 1
	os.WriteFile(p, b, 0o644)
	if err := Verify(filepath.Join(dir, "step-00000030"), true); err == nil || !strings.Contains(err.Error(), "optim/state.json differs") {
		t.Errorf("verify contents: %v", err)
	}
}

// Kill a process that saves checkpoints with SIGKILL at random points, again and again: every
// restart resumes after the newest complete checkpoint, which always verifies (sizes and hashes)
// and holds its own step's data; interrupted temporary directories are cleared on the next open.
func TestCheckpointsSurviveSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("child processes")
	}
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(1, 2))
	prev := 0
	for i := 0; i < 10; i++ {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "MTGRPO_TEST_CHECKPOINT_WRITER="+dir)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Kill while it writes: once its first temporary directory shows (the process start,
		// which loads libtorch, takes a while here), after a random delay.
		for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(2 * time.Millisecond) {
			if m, _ := filepath.Glob(filepath.Join(dir, ".step-*.staged-"+strconv.Itoa(cmd.Process.Pid)+"-*")); len(m) > 0 {
				break
			}
		}
		time.Sleep(time.Duration(r.IntN(300)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		err := cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
			t.Fatalf("writer ended by itself: %v %s", err, stderr.String())
		}
		c, err := OpenCheckpoints(dir, 2)
		if err != nil {
			t.Fatal(err)
		}
		ck, ok, err := c.Latest()
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			checkCheckpoint(t, ck)
			if ck.Step < prev {
				t.Fatalf("newest checkpoint went back from %d to %d", prev, ck.Step)
			}
			prev = ck.Step
		}
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), ".") {
				t.Errorf("temporary %s survived reopening", e.Name())
			}
			if n, err := strconv.Atoi(strings.TrimPrefix(e.Name(), stepPrefix)); err == nil && Verify(filepath.Join(dir, e.Name()), true) != nil {
				t.Errorf("incomplete checkpoint %d visible", n)
			}
		}
	}
	if prev == 0 {
		t.Fatal("no checkpoint was ever completed")
	}
	t.Logf("reached step %d over 10 kills", prev)
}

// A checkpoint's identity is its manifest: a step directory renamed (or a copy kept under another
// step's name) is an error naming both steps, for the newest checkpoint (resume, export RUN) and
// for the directory named directly; a copy under a name that is not a step's is the step its
// manifest says.
func TestCheckpointRenamedIsAnError(t *testing.T) {
	dir := t.TempDir()
	c, err := OpenCheckpoints(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	for step := 4; step <= 5; step++ {
		if _, err := c.Save(step, writeStep(step)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Rename(filepath.Join(dir, "step-00000004"), filepath.Join(dir, "step-00000009")); err != nil {
		t.Fatal(err)
	}
	misnamed := filepath.Join(dir, "step-00000009")
	want := "run: checkpoint " + misnamed + ": name and manifest disagree: its name says step 9, its MANIFEST.json step 4 " +
		"(rename it step-00000004 or move it out of " + dir + ")"
	if _, _, err := c.Latest(); err == nil || err.Error() != want || !errors.Is(err, ErrMisnamed) {
		t.Errorf("Latest: %v\nwant %s", err, want)
	}
	if err := Verify(misnamed, true); err == nil || err.Error() != want {
		t.Errorf("Verify: %v\nwant %s", err, want)
	}
	bookmark := filepath.Join(t.TempDir(), "kept")
	if err := os.Rename(misnamed, bookmark); err != nil {
		t.Fatal(err)
	}
	if err := Verify(bookmark, true); err != nil {
		t.Errorf("a checkpoint moved under another name: %v", err)
	}
	if last, ok, err := c.Latest(); err != nil || !ok || last.Step != 5 {
		t.Errorf("Latest: %+v %v %v; want step 5", last, ok, err)
	}
}
