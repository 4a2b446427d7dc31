package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Every mode New may fall back to runs Python and gives what it claims. The fallback that runs
// as nobody without the minimal root could never start before: the run's directory sat in a
// 0700 directory of root's, so the interpreter was denied and the probe moved on, silently, to
// running as root. The system interpreter is used where there is one, since nobody cannot run
// one installed under /root (pyenv).
func TestEveryModeRuns(t *testing.T) {
	python := testPython()
	if _, err := os.Stat("/usr/bin/python3"); err == nil && os.Getenv("MTGRPO_TEST_PYTHON") == "" {
		python = "/usr/bin/python3"
	}
	s := newTestConfig(t, Config{Python: python, Limits: quick})
	code := "import os\nopen('f', 'w').write('written')\n" +
		"print(os.getuid(), os.getpid() == 1, open('f').read(), os.getcwd() == os.environ['HOME'])"
	for _, iso := range candidates() {
		if iso.Nobody && !iso.Chroot && !nobodyCanRun(s.Python()) {
			t.Logf("%s: not tried, nobody cannot run %s (the probe passes it over the same way)", iso.Note, s.Python())
			continue
		}
		iso.Memory, iso.Seccomp = s.iso.Memory, s.iso.Seccomp
		r, err := s.run(context.Background(), code, iso, s.limits)
		if err != nil {
			t.Errorf("%s: %v", iso.Note, err)
			continue
		}
		uid := os.Getuid()
		switch {
		case iso.Nobody:
			uid = nobody
		case iso.UserNS && iso.Chroot:
			uid = 0 // root of its user namespace, without capabilities
		}
		want := strconv.Itoa(uid) + " " + pyBool(iso.PidNS) + " written True\n"
		if !r.OK() || r.Stdout != want {
			t.Errorf("%s: want %q, got %+v", iso.Note, want, r)
		}
	}
}

// nobodyCanRun is true when uid nobody may traverse every directory above path and execute it
// (a pyenv interpreter under root's 0700 home is out of its reach).
func nobodyCanRun(path string) bool {
	for p := path; ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			return false
		}
		need := os.FileMode(0o001) // others may search the directory
		if p == path {
			need = 0o005 // others may read and execute the binary
		}
		if fi.Mode().Perm()&need != need {
			return false
		}
		if p == "/" {
			return true
		}
	}
}

func pyBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

// A configuration that demands a guarantee gets it or an error, never a weaker mode. Here the
// minimal root fails (a directory it must bind does not exist): without Require, New falls back
// and its log line says what ran and why; with Require: MinimalRoot, New fails naming both.
func TestRequireFailsRatherThanDegrade(t *testing.T) {
	if !newTest(t, quick).iso.Chroot {
		t.Skip("this machine has no minimal root to lose")
	}
	broken := []string{"/nonexistent/mtgrpo-sandbox-test"}
	var logged []string
	s, err := New(Config{Python: testPython(), Limits: quick, ReadDirs: broken, Log: func(m string) { logged = append(logged, m) }})
	if err != nil {
		t.Fatal(err)
	}
	if s.iso.Chroot || s.iso.Guarantees()&MinimalRoot != 0 {
		t.Fatalf("the broken minimal root was chosen: %s", s.iso.Note)
	}
	if len(logged) != 1 || !strings.Contains(logged[0], "stronger modes failed: ") || !strings.Contains(logged[0], "bind /nonexistent/mtgrpo-sandbox-test") {
		t.Fatalf("the fallback was not logged with its reason: %q", logged)
	}
	_, err = New(Config{Python: testPython(), Limits: quick, ReadDirs: broken, Require: MinimalRoot | NoNetwork, Log: func(string) {}})
	if err == nil || !strings.Contains(err.Error(), "cannot give minimal root (Config.Require)") || !strings.Contains(err.Error(), "bind /nonexistent") {
		t.Fatalf("want New to refuse, naming the missing guarantee and the reason: %v", err)
	}
}

// The guarantees of a mode, as Require checks them.
func TestGuarantees(t *testing.T) {
	full := Isolation{Chroot: true, NetNS: true, PidNS: true, Nobody: true, Memory: MemoryCgroupV1, Seccomp: true}
	if g := full.Guarantees(); g != MinimalRoot|NoNetwork|NoLeftovers|Unprivileged|MemoryAccounted|SyscallFilter {
		t.Fatalf("full mode: %s", g)
	}
	weak := Isolation{Memory: MemoryRlimits}
	want := Guarantee(0)
	if os.Geteuid() != 0 {
		want = Unprivileged // the trainer's own user, no capabilities
	}
	if g := weak.Guarantees(); g != want {
		t.Fatalf("hook-only mode: %s, want %s", g, want)
	}
	if s := (MinimalRoot | MemoryAccounted).String(); s != "minimal root, memory accounted" {
		t.Fatalf("String: %q", s)
	}
}
