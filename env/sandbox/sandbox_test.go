package sandbox

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// These tests run the real interpreter in real child processes. The CPU limit is 1 s so that
// runaway programs end quickly; the wall limit is generous, since on a loaded machine (a CI
// runner, or a dev machine shared with other builds) an interpreter can take seconds to start,
// and a run that ends on its own takes no longer for it.

// testPython is the interpreter the tests run: MTGRPO_TEST_PYTHON (a name or a path), or
// python3. Run the package once per Python version users have (3.10 to 3.13).
func testPython() string {
	if p := os.Getenv("MTGRPO_TEST_PYTHON"); p != "" {
		return p
	}
	return "python3"
}

// newTest makes a sandbox over the test interpreter.
func newTest(t *testing.T, l Limits) *Sandbox {
	t.Helper()
	return newTestConfig(t, Config{Limits: l})
}

func newTestConfig(t *testing.T, cfg Config) *Sandbox {
	t.Helper()
	if cfg.Python == "" {
		cfg.Python = testPython()
	}
	cfg.Log = func(msg string) { t.Log(msg) }
	s, err := New(cfg)
	if err != nil {
		t.Skipf("no python3 here: %v", err) // CI and dev machines have python3; see doc.go
	}
	return s
}

func run(t *testing.T, s *Sandbox, code string) Result {
	t.Helper()
	r, err := s.Run(context.Background(), code)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return r
}

var quick = Limits{Wall: 10 * time.Second, CPUSeconds: 1, MemoryBytes: 256 << 20, OutputBytes: 1000}

func TestRunPrintsAndExits(t *testing.T) {
	s := newTest(t, quick)
	r := run(t, s, "import os\nprint(6*7)\nprint(sorted(os.environ))\nprint(os.getcwd() == os.environ['HOME'])")
	if !r.OK() {
		t.Fatalf("not OK: %+v", r)
	}
	// Empty environment except HOME, TMPDIR and LANG; HOME is the fresh working directory.
	want := "42\n['HOME', 'LANG', 'TMPDIR']\nTrue\n"
	if r.Stdout != want {
		t.Fatalf("stdout %q, want %q", r.Stdout, want)
	}
}

func TestTracebackIsAFailure(t *testing.T) {
	s := newTest(t, quick)
	r := run(t, s, "x = 1\ny = x / 0\n")
	if r.OK() || r.ExitCode != 1 || !strings.Contains(r.Stderr, "ZeroDivisionError") || !strings.Contains(r.Stderr, `File "main.py", line 2`) {
		t.Fatalf("want a traceback naming main.py line 2, got %+v", r)
	}
	// As "python main.py" prints it: no frame of the sandbox's preamble.
	want := "Traceback (most recent call last):\n  File \"main.py\", line 2, in <module>\n"
	if !strings.HasPrefix(r.Stderr, want) || strings.Contains(r.Stderr, "<string>") {
		t.Fatalf("traceback shows the preamble:\n%s", r.Stderr)
	}
	// A syntax error: the location and the error, as "python main.py" prints it.
	r = run(t, s, "print(1)\nx = (\n")
	if r.ExitCode != 1 || !strings.HasPrefix(r.Stderr, "  File \"main.py\", line 2\n") || !strings.Contains(r.Stderr, "SyntaxError: ") || strings.Contains(r.Stderr, "<string>") {
		t.Fatalf("syntax error: %+v", r)
	}
}

func TestInfiniteLoopKilledAtWallTime(t *testing.T) {
	s := newTest(t, Limits{Wall: 700 * time.Millisecond, CPUSeconds: 10})
	start := time.Now()
	r := run(t, s, "import time\nwhile True:\n    time.sleep(0.01)\n")
	if !r.TimedOut || r.OK() {
		t.Fatalf("want a timeout, got %+v", r)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("took %v to kill", d)
	}
}

func TestCPULimit(t *testing.T) {
	// Busy loop: RLIMIT_CPU = 1 s kills it (SIGXCPU) before the wall limit.
	s := newTest(t, Limits{Wall: 30 * time.Second, CPUSeconds: 1}) // a loaded machine gives the loop its 1 s slowly
	r := run(t, s, "while True:\n    pass\n")
	if r.TimedOut || r.Signal == "" {
		t.Fatalf("want death by signal from RLIMIT_CPU, got %+v", r)
	}
}

func TestMemoryBomb(t *testing.T) {
	s := newTest(t, quick)
	r := run(t, s, "x = bytearray(2 << 30)\nprint('allocated')\n")
	if r.OK() || strings.Contains(r.Stdout, "allocated") || !strings.Contains(r.Stderr, "MemoryError") {
		t.Fatalf("want MemoryError under RLIMIT_AS, got %+v", r)
	}
}

func TestForkBombContained(t *testing.T) {
	l := quick
	l.OutputBytes = 8 << 10 // room for multiprocessing's traceback, refusal last
	s := newTest(t, l)
	for _, code := range []string{
		"import os\nwhile True:\n    os.fork()\n",
		"import subprocess\nsubprocess.run(['sh', '-c', ':(){ :|:& };:'])\n",
		"import os\nos.system('echo escaped')\n",
		// fork_exec raises no audit event of its own: the import is what is refused.
		"import _posixsubprocess\n",
		"import multiprocessing\np = multiprocessing.Process(target=print, args=('escaped',))\np.start()\np.join()\n",
	} {
		r := run(t, s, code)
		// multiprocessing gets as far as importing subprocess, which imports _posixsubprocess.
		refused := refusal(r.Stderr)
		if r.OK() || strings.Contains(r.Stdout, "escaped") || !refused {
			t.Fatalf("%q: want a refusal, got %+v", code, r)
		}
	}
}

func TestHugeOutputTruncated(t *testing.T) {
	s := newTest(t, quick)
	r := run(t, s, "print('x' * 10_000_000)\n")
	if !r.Truncated || len(r.Stdout) > 1100 || !strings.Contains(r.Stdout, "bytes of output truncated") {
		t.Fatalf("want ~1000 bytes kept, got %d bytes, truncated=%v", len(r.Stdout), r.Truncated)
	}
	r = run(t, s, "while True:\n    print('y' * 1000)\n") // endless output: killed, still truncated
	if !r.Truncated || len(r.Stdout) > 1100 || r.OK() {
		t.Fatalf("endless output: got %d bytes, %+v", len(r.Stdout), r.TimedOut)
	}
}

func TestFilesOutsideDirRefused(t *testing.T) {
	s := newTest(t, quick)
	outside := t.TempDir() + "/leak.txt"
	for _, code := range []string{
		"print(open('/etc/passwd').read())",
		"import os\nprint(os.listdir('/'))",
		"open('../escape.txt', 'w').write('x')",
		"open(" + pyQuote(outside) + ", 'w').write('x')",
		"import os\nos.chdir('/')",
		"import ctypes",
	} {
		r := run(t, s, code)
		if r.OK() || !refusal(r.Stderr) || strings.Contains(r.Stdout, "root:") {
			t.Fatalf("%q: want a refusal, got %+v", code, r)
		}
	}
	if _, err := os.Stat(outside); err == nil {
		t.Fatal("a file was written outside the sandbox")
	}
	// Inside its own directory the code may write and read back.
	r := run(t, s, "open('a.txt', 'w').write('hi')\nimport os\nprint(open('a.txt').read(), sorted(os.listdir('.')))")
	if !r.OK() || r.Stdout != "hi ['a.txt', 'main.py']\n" {
		t.Fatalf("own dir: %+v", r)
	}
}

func TestNoNetwork(t *testing.T) {
	s := newTest(t, quick)
	r := run(t, s, "import socket\ns = socket.create_connection(('1.1.1.1', 53), timeout=0.5)\nprint('connected')")
	if r.OK() || strings.Contains(r.Stdout, "connected") {
		t.Fatalf("network reachable: %+v", r)
	}
	if os.Geteuid() == 0 && !s.Isolation().NetNS {
		t.Errorf("running as root but no network namespace: %s", s.Isolation().Note)
	}
}

// The hook's state is out of reach of the code: not in the module globals, not findable
// through gc, and functions cannot be given new code. Subinterpreters, which start without the
// hook, are refused under whichever name this Python has them.
func TestHookStateOutOfReach(t *testing.T) {
	s := newTest(t, quick)
	codes := []string{
		"import sys\nprint(sorted(k for k in vars(sys.modules['__main__']) if not k.startswith('__')))\nopen('/etc/passwd')",
		"import gc\ngc.get_objects()",
		"def f(): pass\nf.__code__ = (lambda: 1).__code__",
	}
	codes = append(codes, subinterpreterEscapes(t, s.Python())...)
	for _, code := range codes {
		r := run(t, s, code)
		if r.OK() || !refusal(r.Stderr) {
			t.Fatalf("%q: want a refusal, got %+v", code, r)
		}
		if strings.Contains(r.Stdout, "deny") || strings.Contains(r.Stdout, "hook") {
			t.Fatalf("hook state visible: %q", r.Stdout)
		}
	}
}

func TestLimitsCannotBeRaised(t *testing.T) {
	s := newTest(t, quick)
	r := run(t, s, "import resource\nresource.setrlimit(resource.RLIMIT_CPU, (100, 100))\n")
	if r.OK() || !strings.Contains(r.Stderr, "PermissionError") {
		t.Fatalf("setrlimit allowed: %+v", r)
	}
}

func TestConcurrentRuns(t *testing.T) {
	s := newTest(t, quick)
	errs := make(chan string, 8)
	for i := 0; i < 8; i++ {
		go func(i int) {
			r, err := s.Run(context.Background(), "print(sum(range(1000)))")
			if err != nil || r.Stdout != "499500\n" {
				errs <- r.Stdout + r.Stderr
				return
			}
			errs <- ""
		}(i)
	}
	for i := 0; i < 8; i++ {
		if e := <-errs; e != "" {
			t.Fatal(e)
		}
	}
}

// subinterpreterEscapes are programs that start a subinterpreter (which has no audit hooks: it
// could list /, fork, spawn) with the module this interpreter has: _xxsubinterpreters up to
// 3.12, _interpreters from 3.13 on. Each is tried by import and by loading it by hand, through
// the finder that holds it (PathFinder for an extension file, BuiltinImporter for a module built
// into the interpreter, as some distributions build it); both must be refused.
func subinterpreterEscapes(t *testing.T, python string) []string {
	const ask = "import sys, importlib.util\n" +
		"for n in ('_interpreters', '_xxsubinterpreters'):\n" +
		"    if n in sys.builtin_module_names:\n        print(n, 'BuiltinImporter'); break\n" +
		"    if importlib.util.find_spec(n):\n        print(n, 'PathFinder'); break\n"
	out, err := exec.Command(python, "-I", "-S", "-c", ask).Output()
	f := strings.Fields(string(out))
	if err != nil || len(f) != 2 {
		t.Logf("%s has no subinterpreter module (%v %q): nothing to refuse", python, err, out)
		return nil
	}
	name, finder := f[0], f[1]
	t.Logf("subinterpreter module: %s (%s)", name, finder)
	create := "si.run_string(si.create(), 'import os; print(os.listdir(\"/\"))')"
	return []string{
		"import " + name + " as si\n" + create,
		"import sys\nfinder = [f for f in sys.meta_path if getattr(f, '__name__', '') == '" + finder + "'][0]\n" +
			"spec = finder.find_spec('" + name + "', None)\nsi = spec.loader.create_module(spec)\n" +
			"spec.loader.exec_module(si)\n" + create,
	}
}

// refusal is true when stderr shows the audit hook refusing: a PermissionError, or for a denied
// module an ImportError (so that libraries importing it optionally still load).
func refusal(stderr string) bool {
	return strings.Contains(stderr, "PermissionError: sandbox: ") || strings.Contains(stderr, "ImportError: sandbox: importing ")
}

func pyQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `\'`) + "'" }

// fooledHook replaces os.fspath, which the hook's path check calls (through os.path.join and
// os.path.realpath) but open() does not, so the check sees "<cwd>/x" and lets
// open('/etc/passwd') through. Every Python from 3.10 to 3.13 calls os.fspath there; internals
// such as posixpath._joinrealpath (gone in 3.13) are not relied on.
const fooledHook = "import os\n_fspath = os.fspath\n" +
	"os.fspath = lambda p: os.getcwd() + '/x' if _fspath(p) == '/etc/passwd' else _fspath(p)\n"

// The minimal root holds even when the audit hook is fooled (fooledHook): the file is not there.
func TestMinimalRootBehindTheHook(t *testing.T) {
	s := newTest(t, quick)
	if !s.Isolation().Chroot {
		t.Skipf("this machine refused the minimal root (%s); the audit hook is all that guards files", s.Isolation().Note)
	}
	r := run(t, s, "import os\nprint(os.getcwd(), os.path.exists('/etc/passwd'), os.path.exists('/home'), sorted(os.listdir('/work')))")
	if r.Stdout != "/work False False ['main.py']\n" {
		t.Fatalf("view of the file system: %+v", r)
	}
	r = run(t, s, fooledHook+"print(open('/etc/passwd').read())")
	if r.OK() || strings.Contains(r.Stdout, "root:") || !strings.Contains(r.Stderr, "FileNotFoundError") {
		t.Fatalf("hook bypassed and the file was readable: %+v", r)
	}
	// Without the minimal root the same program does read the file: the hook alone is no
	// boundary (doc.go says so), the mount namespace is.
	weak, err := s.run(context.Background(), fooledHook+"print(open('/etc/passwd').read()[:5])", Isolation{}, s.limits)
	if err != nil || !strings.HasPrefix(weak.Stdout, "root:") {
		t.Fatalf("expected the hook-only mode to leak /etc/passwd, got %+v %v", weak, err)
	}
	if os.Geteuid() == 0 {
		r = run(t, s, "import os\nprint(os.getuid(), os.getgid())")
		if r.Stdout != "65534 65534\n" || !s.Isolation().Nobody {
			t.Fatalf("as root the run should be nobody: %+v", r)
		}
	}
}

// As root with a system interpreter that nobody may run, runs drop to uid 65534, where
// RLIMIT_NPROC is enforced by the kernel.
func TestDropsToNobodyWhenRoot(t *testing.T) {
	const system = "/usr/bin/python3"
	if os.Geteuid() != 0 {
		t.Skip("only root can switch uid")
	}
	if _, err := os.Stat(system); err != nil {
		t.Skip("no system python3")
	}
	s, err := New(Config{Python: system, Limits: quick, Log: func(m string) { t.Log(m) }})
	if err != nil {
		t.Fatal(err)
	}
	if !s.Isolation().Nobody || !s.Isolation().NetNS {
		t.Fatalf("want netns + nobody, got %s", s.Isolation().Note)
	}
	r := run(t, s, "import os, resource\nprint(os.getuid(), resource.getrlimit(resource.RLIMIT_NPROC)[0])\nopen('f', 'w').write('ok')\nprint(open('f').read())")
	if r.Stdout != "65534 64\nok\n" {
		t.Fatalf("got %+v", r)
	}
}

// Standard-library packages import: the import system lists each package's directory the first
// time it imports from it, so listings of the interpreter's installation must pass the hook.
func TestStdlibPackagesImport(t *testing.T) {
	s := newTest(t, quick)
	r := run(t, s, "import json, email.utils, xml.etree.ElementTree, importlib.util, urllib.parse, concurrent.futures\n"+
		"print(json.dumps({'a': [1, 2]}), urllib.parse.quote('a b'))")
	if !r.OK() || r.Stdout != "{\"a\": [1, 2]} a%20b\n" {
		t.Fatalf("stdlib imports: %+v", r)
	}
	// Listing stays refused outside what the code may read.
	r = run(t, s, "import os\nprint(os.listdir('/etc'))")
	if r.OK() || !strings.Contains(r.Stderr, "PermissionError") {
		t.Fatalf("listing /etc: %+v", r)
	}
}

// In the minimal root all the code writes together is capped by Limits.DiskBytes (a tmpfs), not
// just each file by FileBytes: 6 files of 1 MiB do not fit in 4 MiB, and nothing reaches the
// host's temp dir.
func TestDiskCapped(t *testing.T) {
	l := quick
	l.FileBytes, l.DiskBytes = 1<<20, 4<<20
	s := newTest(t, l)
	if !s.Isolation().Chroot {
		t.Skipf("no minimal root here (%s): only FileBytes bounds writes", s.Isolation().Note)
	}
	// Nothing outside /work takes a write, even from code past the hook (in a user namespace
	// the interpreter owns the root's tmpfs).
	hookless := *s
	hookless.hookless = true
	if r := run(t, &hookless, "open('/x', 'w')"); r.OK() || !strings.Contains(r.Stderr, "Read-only file system: '/x'") && !strings.Contains(r.Stderr, "Permission denied: '/x'") {
		t.Fatalf("wrote to the minimal root outside /work: %+v", r)
	}
	r := run(t, s, "n = 0\ntry:\n    for i in range(6):\n        with open('f%d' % i, 'wb') as f:\n            f.write(b'x' * (1 << 20))\n        n += 1\n"+
		"finally:\n    print(n)\n")
	// 4 MiB of tmpfs minus main.py's page: 3 whole files fit, the 4th fails with ENOSPC.
	if r.OK() || r.Stdout != "3\n" || !strings.Contains(r.Stderr, "No space left on device") {
		t.Fatalf("want 3 files then ENOSPC, got %+v", r)
	}
	// Empty files take no tmpfs size but an inode each (kernel memory): the tmpfs holds one
	// inode per page of its size, 4 MiB / 4 KiB = 1024, the root directory and main.py
	// included, so the 1023rd new file fails.
	r = run(t, s, "n = 0\ntry:\n    for i in range(5000):\n        open('e%d' % i, 'w').close()\n        n += 1\nfinally:\n    print(n)\n")
	if r.OK() || r.Stdout != "1022\n" || !strings.Contains(r.Stderr, "No space left on device") {
		t.Fatalf("want 1022 empty files then ENOSPC, got %+v", r)
	}
}

// RLIMIT_NOFILE bounds the descriptors a run holds (and with them its pipe and socket buffers).
func TestOpenFilesLimit(t *testing.T) {
	l := quick
	l.OpenFiles = 16
	s := newTest(t, l)
	r := run(t, s, "import errno\nfs = []\ntry:\n    while True:\n        fs.append(open('main.py'))\nexcept OSError as e:\n    print(e.errno == errno.EMFILE, len(fs) < 16)\n")
	if r.Stdout != "True True\n" {
		t.Fatalf("want EMFILE before 16 open files, got %+v", r)
	}
}

// Nothing the code starts outlives the run, even a process that left the process group (setsid)
// after getting past the audit hook: the interpreter is the init of its own PID namespace, and
// the kernel kills the rest of the namespace when it exits. The run below has no hook at all
// and spawns a detached "sleep 737" in a new session.
func TestNoProcessOutlivesTheRun(t *testing.T) {
	s := newTest(t, quick)
	if !s.Isolation().PidNS {
		t.Skipf("no PID namespace here (%s)", s.Isolation().Note)
	}
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	hookless := *s
	hookless.hookless = true
	r := run(t, &hookless, "import os\nprint(os.getpid(), os.posix_spawn("+pyQuote(sleep)+", ['sleep', '737'], {}, setsid=True) > 1)")
	if !r.OK() || r.Stdout != "1 True\n" {
		t.Fatalf("want the interpreter as pid 1 and a spawned child, got %+v", r)
	}
	time.Sleep(200 * time.Millisecond) // the kernel's kill is asynchronous
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range cmdlines {
		if b, _ := os.ReadFile(f); string(b) == "sleep\x00737\x00" && processAlive(pidOf(f)) {
			t.Fatalf("a process started by the run outlived it: sleep 737 (%s)", f)
		}
	}
}

// In the user-namespace mode (a non-root trainer) the helper is uid 0 of its namespace; the
// interpreter must not inherit that namespace's capabilities, or code past the audit hook could
// leave the minimal root by the classic chroot escape and read the host's files. The run has no
// hook at all and tries exactly that, aiming at a file of this test.
func TestUserNamespaceRunHasNoCapabilities(t *testing.T) {
	s := newTest(t, quick)
	secret := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(secret, []byte("host secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	hookless := *s
	hookless.hookless = true
	iso := Isolation{Chroot: true, NetNS: true, PidNS: true, UserNS: true}
	code := "import os\nos.mkdir('x')\nos.chroot('x')\nfor _ in range(30):\n    os.chdir('..')\nos.chroot('.')\nprint(open(" + pyQuote(secret) + ").read())"
	r, err := hookless.run(context.Background(), code, iso, s.limits)
	if err != nil {
		// The kernel refused the user namespace (no unprivileged ones, or a chrooted trainer)
		// or the helper could not build the root in it: there is no such run to test.
		t.Skipf("this machine refuses the user-namespace mode: %v", err)
	}
	if strings.Contains(r.Stdout, "host secret") || !strings.Contains(r.Stderr, "PermissionError: [Errno 1] Operation not permitted: 'x'") {
		t.Fatalf("want chroot refused (no CAP_SYS_CHROOT), got %+v", r)
	}
}

// With SitePackages the code imports what is installed for the interpreter; without, it cannot.
// The package tried is the first of a few common pure-Python ones that this interpreter has.
func TestSitePackages(t *testing.T) {
	s := newTestConfig(t, Config{SitePackages: true, Limits: quick})
	const find = "import importlib.util\nfor m in ['six', 'packaging', 'idna', 'certifi', 'yaml', 'annotated_types', 'pip']:\n" +
		"    s = importlib.util.find_spec(m)\n    if s and 'packages' in (s.origin or ''):\n        print(m)\n        break\n"
	out, err := exec.Command(s.Python(), "-I", "-c", find).Output()
	pkg := strings.TrimSpace(string(out))
	if err != nil || pkg == "" {
		t.Skipf("none of the probe packages is installed for %s", s.Python())
	}
	code := "import " + pkg + ", os\nprint('imported', os.environ['OMP_NUM_THREADS'])"
	if r := run(t, s, code); !r.OK() || r.Stdout != "imported 1\n" {
		t.Fatalf("import %s with SitePackages: %+v", pkg, r)
	}
	if r := run(t, newTest(t, quick), code); r.OK() || !strings.Contains(r.Stderr, "ModuleNotFoundError") {
		t.Fatalf("import %s without SitePackages: %+v", pkg, r)
	}
}
