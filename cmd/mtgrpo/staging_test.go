package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	rundir "github.com/mtgrpo/mtgrpo/cmd/internal/run"
)

// A command that writes never writes into a checkpoint: not the checkpoint itself, not a
// directory inside it (export's source holds its weights in model/), not through a symlink to
// either. The checkpoint's files stay as its manifest lists them.
func TestStagingRefusesACheckpoint(t *testing.T) {
	dir := t.TempDir()
	ck := filepath.Join(dir, "run", "checkpoints", "step-00000004")
	os.MkdirAll(filepath.Join(ck, "model"), 0o755)
	os.WriteFile(filepath.Join(ck, rundir.ManifestName), []byte(`{"step":4}`), 0o644)
	os.WriteFile(filepath.Join(ck, "model", "model.safetensors"), []byte("weights"), 0o644)
	link := filepath.Join(dir, "link")
	os.Symlink(ck, link)
	real, _ := filepath.EvalSymlinks(ck)
	for _, dst := range []string{ck, filepath.Join(ck, "model"), filepath.Join(ck, "model", "new", "deeper"),
		link, filepath.Join(link, "model")} {
		_, err := newStaging(dst, true)
		want := dst + " is inside the checkpoint " + real + ": writing there would break the checkpoint's manifest"
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("newStaging(%s): %v; want %q", dst, err, want)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(ck, "model", "model.safetensors")); string(b) != "weights" {
		t.Errorf("the checkpoint's weights changed: %q", b)
	}
	if left, _ := filepath.Glob(filepath.Join(ck, "*staging*")); len(left) != 0 {
		t.Errorf("staging directories left in the checkpoint: %v", left)
	}
	// Beside the checkpoint is fine.
	st, err := newStaging(filepath.Join(dir, "run", "model"), false)
	if err != nil {
		t.Fatal(err)
	}
	st.discard()
}

// init refuses, before any work, an --out inside a checkpoint (a usage error).
func TestInitRefusesCheckpointAsOut(t *testing.T) {
	ck := filepath.Join(t.TempDir(), "step-00000004")
	os.MkdirAll(filepath.Join(ck, "model"), 0o755)
	os.WriteFile(filepath.Join(ck, rundir.ManifestName), []byte(`{"step":4,"files":[]}`), 0o644)
	err := run([]string{"init", "--out", filepath.Join(ck, "model"), "--force"})
	if err == nil || !strings.Contains(err.Error(), "init: "+filepath.Join(ck, "model")+" is inside the checkpoint") ||
		!errors.As(err, new(usageError)) {
		t.Errorf("init into a checkpoint: %v; want a usage error naming the checkpoint", err)
	}
}
