package sandbox

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// builtHelpers caches the helper binaries the tests build, by linker flags, in one directory
// that TestMain removes.
var builtHelpers struct {
	sync.Mutex
	dir   string
	paths map[string]string
}

// buildHelper builds cmd/mtgrpo-sandbox with the given -ldflags and returns its path.
func buildHelper(t testing.TB, ldflags string) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go tool to build the helper with: %v", err)
	}
	builtHelpers.Lock()
	defer builtHelpers.Unlock()
	if p, ok := builtHelpers.paths[ldflags]; ok {
		return p
	}
	if builtHelpers.dir == "" {
		if builtHelpers.dir, err = os.MkdirTemp("", "mtgrpo-helper-test-"); err != nil {
			t.Fatal(err)
		}
		builtHelpers.paths = map[string]string{}
	}
	out := filepath.Join(builtHelpers.dir, HelperName+"-"+string(rune('a'+len(builtHelpers.paths))))
	cmd := exec.Command(goTool, "build", "-ldflags", ldflags, "-o", out, "github.com/mtgrpo/mtgrpo/cmd/mtgrpo-sandbox")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build the helper: %v\n%s", err, msg)
	}
	builtHelpers.paths[ldflags] = out
	return out
}

func removeBuiltHelpers() {
	if builtHelpers.dir != "" {
		os.RemoveAll(builtHelpers.dir)
	}
}

// staleFlags link a helper of another revision, as an older build would be.
const staleFlags = "-X github.com/mtgrpo/mtgrpo/env/sandbox.helperRevision=stale"

// copyExecutable copies the file at src to dir/name, executable.
func copyExecutable(t *testing.T, src, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, name)
	if err := os.WriteFile(dst, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return dst
}

// A configured helper is the binary every run starts as: the probes and the runs go through it,
// and once it is gone a run fails to start, naming it (this test binary, the fallback, would
// have run the code). The description says which helper and why.
func TestConfiguredHelperRuns(t *testing.T) {
	helper := copyExecutable(t, buildHelper(t, ""), t.TempDir(), HelperName)
	if _, _, err := resolvePython(testPython()); err != nil {
		t.Skip(err)
	}
	var logged []string
	s, err := New(Config{Python: testPython(), Limits: quick, Helper: helper, Log: func(m string) { logged = append(logged, m) }})
	if err != nil {
		t.Fatal(err)
	}
	if s.Helper() != helper || len(logged) != 1 || !strings.Contains(logged[0], "helper: "+helper+" (Config.Helper); isolation: ") {
		t.Fatalf("helper %q, logged %q", s.Helper(), logged)
	}
	if r := run(t, s, "print(6*7)"); !r.OK() || r.Stdout != "42\n" {
		t.Fatalf("run through the built helper: %+v", r)
	}
	if err := os.Remove(helper); err != nil {
		t.Fatal(err)
	}
	_, err = s.Run(context.Background(), "print('ran')")
	if err == nil || !strings.Contains(err.Error(), "start "+helper) {
		t.Fatalf("with the helper gone, want a start error naming it, got %v", err)
	}
}

// A helper that is configured but unusable is an error at New that names it and says what is
// wrong: never a run through another helper.
func TestConfiguredHelperBroken(t *testing.T) {
	dir := t.TempDir()
	notExec := filepath.Join(dir, "not-executable")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	notHelper := filepath.Join(dir, "not-a-helper")
	if err := os.WriteFile(notHelper, []byte("#!/bin/sh\necho hello\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	stale := buildHelper(t, staleFlags)
	for _, c := range []struct{ helper, want string }{
		{"/nonexistent/" + HelperName, "no such file"},
		{notExec, "permission denied"},
		{notHelper, `did not answer as the sandbox helper (stdout "hello"`},
		{stale, "is the helper of another build (protocol stale-"},
	} {
		s, err := New(Config{Python: testPython(), Limits: quick, Helper: c.helper, Log: func(string) {}})
		if err == nil {
			t.Errorf("%s: New accepted it: %s", c.helper, s)
			continue
		}
		t.Log(err)
		if msg := err.Error(); !strings.Contains(msg, `Config.Helper "`+c.helper+`"`) || !strings.Contains(msg, c.want) {
			t.Errorf("%s: want an error naming it and %q, got %v", c.helper, c.want, err)
		}
	}
}

// Unconfigured, the helper is mtgrpo-sandbox beside the executable when it is of this build,
// else this binary, and the note says why.
func TestHelperBesideExecutable(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "mtgrpo")
	for _, c := range []struct {
		build    string // the -ldflags of the helper put beside exe; "-" for none
		wantPath string
		wantNote string
	}{
		{"-", selfExe, "no " + HelperName + " beside it"},
		{staleFlags, selfExe, HelperName + " beside it is not used: " + filepath.Join(dir, HelperName) + " is the helper of another build"},
		{"", filepath.Join(dir, HelperName), filepath.Join(dir, HelperName) + " (beside " + exe + ")"},
	} {
		if c.build != "-" {
			copyExecutable(t, buildHelper(t, c.build), dir, HelperName)
		}
		got := besideOrSelf(exe)
		if got.path != c.wantPath || !strings.Contains(got.note, c.wantNote) {
			t.Errorf("helper %q: got %+v, want %s and a note with %q", c.build, got, c.wantPath, c.wantNote)
		}
	}
}

// The helper carries out only a spec of its own protocol: one from another build is refused
// before any step is taken.
func TestHelperRefusesAnotherProtocol(t *testing.T) {
	err := runHelper(`{"Protocol": "0-000000000000", "Python": "/nonexistent/python"}`)
	if err == nil || !strings.Contains(err.Error(), `the trainer speaks protocol "0-000000000000", this helper "`+HelperProtocol()+`"`) {
		t.Fatalf("want the protocol refused, got %v", err)
	}
}

// The protocol follows the spec's shape: a field added, removed or retyped changes it.
func TestHelperProtocolFollowsTheSpec(t *testing.T) {
	type v1 struct {
		A string
		B *struct{ C []int }
	}
	type v2 struct {
		A string
		B *struct{ C []int64 }
	}
	s1, s := typeShape(reflect.TypeOf(v1{})), typeShape(reflect.TypeOf(v2{}))
	if s1 != "{A string; B *{C []int}}" || s1 == s {
		t.Fatalf("shapes %q and %q", s1, s)
	}
	if !strings.HasPrefix(HelperProtocol(), helperRevision+"-") || len(HelperProtocol()) != len(helperRevision)+1+12 {
		t.Fatalf("protocol %q", HelperProtocol())
	}
}
