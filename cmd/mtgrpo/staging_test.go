package main

import (
	"errors"
	"os"
	"os/exec"
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
	os.WriteFile(filepath.Join(ck, rundir.ManifestName), []byte(`{"step":4,"files":[]}`), 0o644)
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
	// Beside the checkpoint is fine, and so is a directory whose MANIFEST.json is another kind's.
	st, err := newStaging(filepath.Join(dir, "run", "model"), false)
	if err != nil {
		t.Fatal(err)
	}
	st.discard()
	other := filepath.Join(dir, "other")
	os.MkdirAll(other, 0o755)
	os.WriteFile(filepath.Join(other, rundir.ManifestName), []byte(`{"name": "a dataset"}`), 0o644)
	if st, err = newStaging(filepath.Join(other, "model"), false); err != nil {
		t.Errorf("beside another kind of MANIFEST.json: %v", err)
	} else {
		st.discard()
	}
}

// init, eval, train and demo refuse, before any work, an --out or run directory inside a
// checkpoint.
func TestCommandsRefuseCheckpointAsOut(t *testing.T) {
	ck := filepath.Join(t.TempDir(), "step-00000004")
	os.MkdirAll(filepath.Join(ck, "model"), 0o755)
	os.WriteFile(filepath.Join(ck, rundir.ManifestName), []byte(`{"step":4,"files":[]}`), 0o644)
	real, _ := filepath.EvalSymlinks(ck)
	err := run([]string{"init", "--out", filepath.Join(ck, "model"), "--force"})
	if err == nil || !strings.Contains(err.Error(), "init: "+filepath.Join(ck, "model")+" is inside the checkpoint "+real) ||
		!errors.As(err, new(usageError)) {
		t.Errorf("init into a checkpoint: %v; want a usage error naming the checkpoint", err)
	}
	err = run([]string{"train", "--model", tinyModel(t), "--run-dir", filepath.Join(ck, "run")})
	if err == nil || !strings.Contains(err.Error(), "train: run_dir "+filepath.Join(ck, "run")+" is inside the checkpoint "+real) ||
		!errors.As(err, new(usageError)) {
		t.Errorf("train into a checkpoint: %v; want a usage error naming the checkpoint", err)
	}
	err = run([]string{"demo", "--run-dir", filepath.Join(ck, "demo")})
	if err == nil || !strings.Contains(err.Error(), filepath.Join(ck, "demo")+" is inside the checkpoint "+real) {
		t.Errorf("demo into a checkpoint: %v; want an error naming the checkpoint", err)
	}
	err = run([]string{"eval", "--model", tinyModel(t), "--out", filepath.Join(ck, "eval")})
	if err == nil || !strings.Contains(err.Error(), "eval: --out "+filepath.Join(ck, "eval")+" is inside the checkpoint "+real) ||
		!errors.As(err, new(usageError)) {
		t.Errorf("eval into a checkpoint: %v; want a usage error naming the checkpoint", err)
	}
}

// export onto its own source (the checkpoint's model/, directly or through a link) with --force
// is refused before any work, and the checkpoint still matches its manifest and exports.
func TestExportOntoItsSourceIsRefused(t *testing.T) {
	model := tinyModel(t)
	dir := filepath.Join(t.TempDir(), "run")
	args := append([]string{"train"}, tinyRun(model, dir)...)
	if err := run(append(args, "--steps", "1", "--set", "eval.before=false", "--set", "train.export=false", "--set", "train.report=false")); err != nil {
		t.Fatal(err)
	}
	ck := filepath.Join(dir, rundir.CheckpointsDir, "step-00000001")
	real, _ := filepath.EvalSymlinks(ck)
	link := filepath.Join(t.TempDir(), "link")
	os.Symlink(ck, link)
	for _, c := range []struct{ src, dst string }{{ck, filepath.Join(ck, "model")}, {dir, filepath.Join(link, "model")}} {
		err := run([]string{"export", c.src, "--out", c.dst, "--force", "--dtype", "bfloat16"})
		want := "export: " + c.dst + " is inside the checkpoint " + real + ": writing there would break the checkpoint's manifest"
		if err == nil || !strings.Contains(err.Error(), want) || !errors.As(err, new(usageError)) {
			t.Errorf("export %s --out %s: %v\nwant a usage error containing %s", c.src, c.dst, err, want)
		}
	}
	if err := rundir.Verify(ck, true); err != nil {
		t.Errorf("the checkpoint no longer matches its manifest: %v", err)
	}
	if err := run([]string{"export", dir, "--out", filepath.Join(t.TempDir(), "m"), "--threads", "1"}); err != nil {
		t.Errorf("export after the refusals: %v", err)
	}
}

// A copy of a checkpoint kept under a later step's name stops resume and export with an error
// naming both steps, instead of passing for the newest checkpoint.
func TestRenamedCheckpointStopsResumeAndExport(t *testing.T) {
	model := tinyModel(t)
	dir := filepath.Join(t.TempDir(), "run")
	args := append([]string{"train"}, tinyRun(model, dir)...)
	args = append(args, "--set", "eval.before=false", "--set", "train.export=false", "--set", "train.report=false")
	if err := run(append(args, "--steps", "1")); err != nil {
		t.Fatal(err)
	}
	cks := filepath.Join(dir, rundir.CheckpointsDir)
	if out, err := exec.Command("cp", "-a", filepath.Join(cks, "step-00000001"), filepath.Join(cks, "step-00000009")).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	want := "checkpoint " + filepath.Join(cks, "step-00000009") + ": name and manifest disagree: its name says step 9, its MANIFEST.json step 1"
	for _, a := range [][]string{
		append(append([]string{}, args...), "--steps", "2", "--resume"),
		{"export", dir, "--out", filepath.Join(t.TempDir(), "m")},
		{"export", filepath.Join(cks, "step-00000009"), "--out", filepath.Join(t.TempDir(), "m")},
	} {
		if err := run(a); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("mtgrpo %s: %v\nwant an error containing %s", a[0], err, want)
		}
	}
}
