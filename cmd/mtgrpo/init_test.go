package main

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mtgrpo/mtgrpo/model"
	"github.com/mtgrpo/mtgrpo/torch"
)

// init refuses a non-empty --out without --force and touches nothing there; with --force it
// replaces its own files, keeps the others, and refuses when another checkpoint's weights would
// shadow the new ones.
func TestInitForce(t *testing.T) {
	out := filepath.Join(t.TempDir(), "m")
	if err := run([]string{"init", "--seed", "1", "--out", out}); err != nil {
		t.Fatal(err)
	}
	first, _ := os.ReadFile(filepath.Join(out, "model.safetensors"))
	os.WriteFile(filepath.Join(out, "notes.txt"), []byte("mine"), 0o644)

	err := run([]string{"init", "--seed", "2", "--out", out})
	if err == nil || !strings.Contains(err.Error(), "is not empty") || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("init over a model without --force: %v", err)
	}
	if now, _ := os.ReadFile(filepath.Join(out, "model.safetensors")); !bytes.Equal(now, first) {
		t.Fatal("a refused init changed the weights")
	}
	if err := run([]string{"init", "--seed", "2", "--out", out, "--force"}); err != nil {
		t.Fatal(err)
	}
	if now, _ := os.ReadFile(filepath.Join(out, "model.safetensors")); bytes.Equal(now, first) {
		t.Error("--force kept the old weights")
	}
	if b, _ := os.ReadFile(filepath.Join(out, "notes.txt")); string(b) != "mine" {
		t.Error("--force removed a file init did not write")
	}

	// Shards of another checkpoint: loading would prefer their index to the new single file.
	shard := filepath.Join(out, "model-00001-of-00002.safetensors")
	os.WriteFile(shard, []byte("old"), 0o644)
	err = run([]string{"init", "--seed", "3", "--out", out, "--force"})
	if err == nil || !strings.Contains(err.Error(), "model-00001-of-00002.safetensors") {
		t.Errorf("init --force beside foreign shards: %v", err)
	}
	if _, err := os.Stat(shard); err != nil {
		t.Error("init deleted a shard it did not write")
	}
	if ents, _ := filepath.Glob(filepath.Join(filepath.Dir(out), ".m.staged-*")); len(ents) != 0 {
		t.Errorf("staging left behind: %v", ents)
	}

	// An empty directory is as good as none.
	empty := filepath.Join(t.TempDir(), "empty")
	os.Mkdir(empty, 0o755)
	if err := run([]string{"init", "--out", empty}); err != nil {
		t.Errorf("init into an empty directory: %v", err)
	}
}

// A SIGKILLed init leaves --out absent or complete, never partial; its staging directory is
// removed by the next init of the same --out. The kill lands at random points of the child's life
// (process start, model build, the writes, the rename).
func TestInitSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("child processes: long")
	}
	parent := t.TempDir()
	out := filepath.Join(parent, "m")
	r := rand.New(rand.NewPCG(7, 7))
	killed, interrupted := 0, 0
	for i := 0; i < 6; i++ {
		c := child("init", "--seed", "4", "--out", out, "--force")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			time.Sleep(time.Duration(r.IntN(2500)) * time.Millisecond)
		} else { // aim at the writes: kill soon after the staging directory appears
			waitFor(filepath.Join(parent, ".m.staged-*"), 10*time.Second)
			time.Sleep(time.Duration(r.IntN(30)) * time.Millisecond)
		}
		if c.Process.Signal(syscall.SIGKILL) == nil {
			killed++
		}
		c.Wait()
		checkWholeOrAbsent(t, out)
		if left, _ := filepath.Glob(filepath.Join(parent, ".m.staged-*")); len(left) > 0 {
			interrupted++
		}
	}
	if err := run([]string{"init", "--seed", "4", "--out", out, "--force"}); err != nil {
		t.Fatal(err)
	}
	checkWholeOrAbsent(t, out)
	if left, _ := filepath.Glob(filepath.Join(parent, ".m.staged-*")); len(left) != 0 {
		t.Errorf("stale staging directories not removed: %v", left)
	}
	t.Logf("%d of 6 children killed before they exited, %d of them while writing", killed, interrupted)
}

// waitFor polls until a file matches pattern or the timeout passes.
func waitFor(pattern string, timeout time.Duration) {
	for end := time.Now().Add(timeout); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if m, _ := filepath.Glob(pattern); len(m) > 0 {
			return
		}
	}
}

// checkWholeOrAbsent: dir does not exist, or it loads as a model and holds no temporary files.
func checkWholeOrAbsent(t *testing.T, dir string) {
	t.Helper()
	if _, err := os.Stat(dir); os.IsNotExist(err) {
		return
	}
	if tmp, _ := filepath.Glob(filepath.Join(dir, ".*")); len(tmp) != 0 {
		t.Errorf("temporary files in %s: %v", dir, tmp)
	}
	err := torch.Run(func() error {
		m, err := model.Load(dir, model.Options{})
		if err == nil {
			m.Close()
		}
		return err
	})
	if err != nil {
		t.Errorf("%s exists but does not load: %v", dir, err)
	}
}

// Under an address-space limit too small for what a command will take (the BLAS buffers of the
// threads asked for, the KV cache of the --max-len asked for), it stops before anything large is
// reserved, with exit status 2 and an error naming the limit and what does not fit, instead of
// spinning inside OpenBLAS, failing in libtorch's allocator or dying in the Go runtime.
func TestAddressSpaceLimitIsReported(t *testing.T) {
	if testing.Short() {
		t.Skip("child processes: long")
	}
	dir := filepath.Join(t.TempDir(), "m")
	if err := run([]string{"init", "--out", dir}); err != nil {
		t.Fatal(err)
	}
	// 3 GB leaves a few hundred MB above the ~2.3 GB a started process maps here; 16 intra-op
	// threads would need 2 GB of OpenBLAS buffers, and a KV cache of 8,000,000 positions of the
	// tiny model's 1 KiB (2 · 4 layers · 2 KV heads · head_dim 16 · 4 bytes) some 7.6 GiB.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--threads", "16,1"}, "2048 MiB for 16 more OpenBLAS thread buffers"},
		{[]string{"--threads", "1", "--max-len", "8000000"}, "7812 MiB for the KV cache (1 sequences of --max-len 8000000)"},
	} {
		script := `ulimit -v 3000000 && exec "$@"`
		cmd := child()
		cmd.Path, cmd.Args = "/bin/sh", append([]string{"sh", "-c", script, "sh", os.Args[0]},
			append([]string{"generate", "--model", dir, "--prompt", "hi", "--max-new-tokens", "2"}, c.args...)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		done := make(chan error, 1)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(90 * time.Second):
			cmd.Process.Kill()
			t.Fatalf("generate %q under ulimit -v did not finish: %s", c.args, stderr.String())
		}
		if code := cmd.ProcessState.ExitCode(); code != 2 || !strings.Contains(stderr.String(), "address-space limit is too small: ulimit -v: 2929 MiB") ||
			!strings.Contains(stderr.String(), c.want) {
			t.Errorf("generate %q: exit %d, stderr %q; want 2 and a message naming ulimit -v and %q", c.args, code, stderr.String(), c.want)
		}
	}
}

// --rope-theta replaces the architecture's RoPE base in config.json; a negative one is refused.
func TestInitRopeTheta(t *testing.T) {
	out := filepath.Join(t.TempDir(), "m")
	if err := run([]string{"init", "--arch", "qwen2", "--out", out, "--rope-theta", "10000"}); err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		RopeTheta float64 `json:"rope_theta"`
	}
	b, _ := os.ReadFile(filepath.Join(out, "config.json"))
	if err := json.Unmarshal(b, &cfg); err != nil || cfg.RopeTheta != 10000 {
		t.Fatalf("config.json rope_theta %v (%v), want 10000 (qwen2's own is 1000000)", cfg.RopeTheta, err)
	}
	err := run([]string{"init", "--out", filepath.Join(t.TempDir(), "n"), "--rope-theta", "-1"})
	if err == nil || !strings.Contains(err.Error(), "--rope-theta: -1: must be at least 0") {
		t.Fatalf("negative rope theta: %v", err)
	}
}
