package staged

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// names lists a directory's entries.
func names(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestHelperWriter is the writer killed by TestKilledWriterLeavesNoFinalDir: it stages a
// directory, reports its path and waits to be killed before committing.
func TestHelperWriter(t *testing.T) {
	dst := os.Getenv("STAGED_TEST_DST")
	if dst == "" {
		t.Skip("run by TestKilledWriterLeavesNoFinalDir")
	}
	d, err := Begin(dst)
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(d.Path, "weights"), "half of them")
	os.Stdout.WriteString(d.Path + "\n")
	time.Sleep(time.Minute)
	d.Commit()
}

func TestKilledWriterLeavesNoFinalDir(t *testing.T) {
	parent := t.TempDir()
	dst := filepath.Join(parent, "model")
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperWriter$")
	cmd.Env = append(os.Environ(), "STAGED_TEST_DST="+dst)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	n, _ := out.Read(buf) // the writer has staged its file
	cmd.Process.Kill()
	cmd.Wait()
	tmp := string(buf[:max(n-1, 0)])
	if _, err := os.Stat(filepath.Join(tmp, "weights")); err != nil {
		t.Fatalf("the killed writer's temporary %q: %v", tmp, err)
	}
	if _, err := os.Lstat(dst); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("%s exists after its writer was killed before committing (%v)", dst, err)
	}
	// The writer's process is gone: the next Begin beside it sweeps its temporary.
	d, err := Begin(filepath.Join(parent, "other"))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Discard()
	if got := names(t, parent); !slices.Equal(got, []string{filepath.Base(d.Path)}) {
		t.Errorf("after the sweep %s holds %v, want only this writer's temporary", parent, got)
	}
}

func TestCommitReplacesWhole(t *testing.T) {
	parent := t.TempDir()
	dst := filepath.Join(parent, "ck")
	d, err := Begin(dst)
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(d.Path, "a"), "1")
	if _, err := os.Lstat(dst); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("dst visible before Commit: %v", err)
	}
	if err := d.Commit(); err != nil {
		t.Fatal(err)
	}
	d.Discard() // no-op after Commit
	if got := names(t, dst); !slices.Equal(got, []string{"a"}) {
		t.Errorf("dst holds %v, want [a]", got)
	}
	// Replacing: dst keeps its old files until the commit, then holds only the new ones.
	d, err = Begin(dst)
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(d.Path, "b"), "2")
	if got := names(t, dst); !slices.Equal(got, []string{"a"}) {
		t.Errorf("before the commit dst holds %v, want [a]", got)
	}
	if err := d.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := names(t, dst); !slices.Equal(got, []string{"b"}) {
		t.Errorf("after the commit dst holds %v, want [b]", got)
	}
	if got := names(t, parent); !slices.Equal(got, []string{"ck"}) {
		t.Errorf("the parent holds %v, want only ck (no temporaries)", got)
	}
	if err := d.Commit(); err == nil {
		t.Error("a second Commit: no error")
	}
}

func TestDiscardRemovesTemporary(t *testing.T) {
	parent := t.TempDir()
	d, err := Begin(filepath.Join(parent, "m"))
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(d.Path, "x"), "")
	d.Discard()
	if got := names(t, parent); len(got) != 0 {
		t.Errorf("after Discard the parent holds %v", got)
	}
}

// deadPid is the pid of a process that has exited.
func deadPid(t *testing.T) int {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

func TestSweep(t *testing.T) {
	me := self()
	if me.start == 0 {
		t.Skip("process start times are unknown here (no /proc)")
	}
	parent := t.TempDir()
	ppid := os.Getppid()
	pstart, ok := startTime(ppid)
	if !ok {
		t.Fatal("no start time for the parent process")
	}
	dead := deadPid(t)
	entry := func(base, kind string, o owner) string { return "." + base + "." + kind + "-" + o.String() }
	gone := []string{
		// A dead local writer, staged and moved aside.
		entry("model", "staged", owner{pid: dead, start: 12345, host: me.host}),
		entry("step-00000002", "old", owner{pid: dead, start: 0, host: me.host}),
		// The parent's pid with another start time: the writer died and the pid was reused.
		entry("model", "staged", owner{pid: ppid, start: pstart + 1, host: me.host}),
	}
	kept := []string{
		// Another host's writer, whose pid here names no process: its work in progress.
		entry("model", "staged", owner{pid: dead, start: 12345, host: "node-7.cluster"}),
		// Live local writers: the parent (its real start time) and this process.
		entry("model", "staged", owner{pid: ppid, start: pstart, host: me.host}),
		entry("ck", "staged", me),
		// Not temporaries, or names that do not parse.
		"model", ".model.staged-x", ".model.staged-12-34", "step-00000001",
	}
	for _, n := range append(slices.Clone(gone), kept...) {
		if err := os.Mkdir(filepath.Join(parent, n), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := Sweep(parent); err != nil {
		t.Fatal(err)
	}
	got := names(t, parent)
	for _, n := range gone {
		if slices.Contains(got, n) {
			t.Errorf("Sweep kept %s", n)
		}
	}
	for _, n := range kept {
		if !slices.Contains(got, n) {
			t.Errorf("Sweep removed %s", n)
		}
	}
}

func TestParseTemporary(t *testing.T) {
	o := owner{pid: 4242, start: 987654, host: "ip-10-0-0-1.ec2.internal"}
	name := ".model-00001-of-00002.safetensors.staged-" + o.String()
	got, ok := parseTemporary(name)
	if !ok || got.base != "model-00001-of-00002.safetensors" || got.kind != "staged" || got.owner != o {
		t.Errorf("parseTemporary(%q) = %+v, %v", name, got, ok)
	}
	for _, bad := range []string{"model", ".model.staged-0-1-h", ".model.tmp-12", ".model.staged-" + strconv.Itoa(12) + "-x-h"} {
		if _, ok := parseTemporary(bad); ok {
			t.Errorf("parseTemporary(%q) parsed", bad)
		}
	}
}

func TestRemoveAndWriteFile(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "step-00000001")
	if err := os.MkdirAll(filepath.Join(dir, "optim"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Remove(dir); err != nil {
		t.Fatal(err)
	}
	if err := Remove(dir); err != nil {
		t.Errorf("removing a missing directory: %v", err)
	}
	f := filepath.Join(parent, "config.yaml")
	for _, s := range []string{"first", "second"} {
		if err := WriteFile(f, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if b, _ := os.ReadFile(f); string(b) != "second" {
		t.Errorf("WriteFile: %q, want second", b)
	}
	if got := names(t, parent); !slices.Equal(got, []string{"config.yaml"}) {
		t.Errorf("the parent holds %v, want only config.yaml", got)
	}
}

// WriteFileIn stays inside its root: a link at the name is replaced (the file it pointed to is
// untouched), and a name whose directory links out of the root is refused.
func TestWriteFileInStaysInside(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	victim := filepath.Join(outside, "victim")
	os.WriteFile(victim, []byte("keep"), 0o644)
	os.Symlink(victim, filepath.Join(dir, "page.html"))
	os.Symlink(outside, filepath.Join(dir, "plots"))
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if err := WriteFileIn(root, "page.html", []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Errorf("written through the link: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "page.html")); string(b) != "new" {
		t.Errorf("page.html: %q", b)
	}
	if err := WriteFileIn(root, "plots/a.png", []byte("x"), 0o644); err == nil || !strings.Contains(err.Error(), "staged: writing "+filepath.Join(dir, "plots", "a.png")) {
		t.Errorf("through a directory that links out: %v", err)
	}
	if got := names(t, outside); !slices.Equal(got, []string{"victim"}) {
		t.Errorf("outside holds %v", got)
	}
}
