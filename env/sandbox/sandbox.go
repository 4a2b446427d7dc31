package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Limits bound one run. Zero fields take the defaults of DefaultLimits.
type Limits struct {
	// Wall is the wall-clock limit; the whole process group is killed when it passes.
	Wall time.Duration
	// CPUSeconds is RLIMIT_CPU: the kernel kills the process (SIGXCPU, then SIGKILL) past it.
	CPUSeconds int
	// MemoryBytes is RLIMIT_AS: allocations past it fail (Python raises MemoryError).
	MemoryBytes int64
	// Processes is RLIMIT_NPROC: processes and threads of the sandbox's user. The kernel ignores
	// it for root, so it only bites when the sandbox runs as an unprivileged user (see doc.go).
	Processes int
	// FileBytes is RLIMIT_FSIZE: the largest file the code may write.
	FileBytes int64
	// DiskBytes caps everything the code writes, all files together: its directory is a tmpfs of
	// this size (minimal-root mode only; other modes write to TempDir, bounded per file by
	// FileBytes alone). It is memory while the run lasts.
	DiskBytes int64
	// OutputBytes caps what is kept of stdout and of stderr each; the rest is dropped.
	OutputBytes int
}

// DefaultLimits suit a tool call inside RL rollouts: short, small, quiet.
var DefaultLimits = Limits{
	Wall:        5 * time.Second,
	CPUSeconds:  5,
	MemoryBytes: 512 << 20,
	Processes:   64,
	FileBytes:   16 << 20,
	DiskBytes:   64 << 20,
	OutputBytes: 8 << 10,
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	if l.Wall > 0 {
		d.Wall = l.Wall
	}
	if l.CPUSeconds > 0 {
		d.CPUSeconds = l.CPUSeconds
	}
	if l.MemoryBytes > 0 {
		d.MemoryBytes = l.MemoryBytes
	}
	if l.Processes > 0 {
		d.Processes = l.Processes
	}
	if l.FileBytes > 0 {
		d.FileBytes = l.FileBytes
	}
	if l.DiskBytes > 0 {
		d.DiskBytes = l.DiskBytes
	}
	if l.OutputBytes > 0 {
		d.OutputBytes = l.OutputBytes
	}
	return d
}

// Config configures a Sandbox.
type Config struct {
	// Python is the interpreter: a name on PATH or a path. Default "python3". Version shims
	// (pyenv) are resolved to the real binary once, since the sandbox runs with an empty
	// environment.
	Python string
	// Limits of each run.
	Limits Limits
	// TempDir is where each run's fresh directory is made. Default os.TempDir().
	TempDir string
	// ReadDirs are extra directories the code may read (never write).
	ReadDirs []string
	// SitePackages lets the code import the packages installed for the interpreter (numpy,
	// sympy, ...): the directories of site.getsitepackages() are made readable and put on
	// sys.path (their .pth files are not run), and OPENBLAS/OMP/MKL thread counts are set to 1
	// so numerical libraries stay within the CPU and memory limits.
	SitePackages bool
}

// Result is the outcome of one run.
type Result struct {
	Stdout, Stderr string
	// ExitCode is the interpreter's status; -1 when it was killed by a signal.
	ExitCode int
	// Signal names the signal that killed it ("" if none).
	Signal string
	// TimedOut is true when the wall limit passed and the process group was killed.
	TimedOut bool
	// Truncated is true when output past Limits.OutputBytes was dropped.
	Truncated bool
	Duration  time.Duration
}

// OK is true when the code ran to the end with status 0.
func (r Result) OK() bool { return r.ExitCode == 0 && !r.TimedOut && r.Signal == "" }

// Sandbox runs Python code in fresh, limited child processes. It is safe for concurrent use.
type Sandbox struct {
	cfg      Config
	python   string
	prefixes []string // sys.prefix and friends: bound into the minimal root
	site     []string // site-packages directories, with Config.SitePackages
	limits   Limits
	iso      Isolation
	// hookless runs main.py without the preamble (no rlimits, no audit hook): tests use it to
	// check what the kernel layers hold on their own, as against code that got past the hook.
	hookless bool
}

// New resolves the interpreter and probes which isolation this machine permits.
func New(cfg Config) (*Sandbox, error) {
	s := &Sandbox{cfg: cfg, limits: cfg.Limits.withDefaults()}
	py, prefixes, err := resolvePython(cfg.Python)
	if err != nil {
		return nil, err
	}
	s.python, s.prefixes = py, prefixes
	if cfg.SitePackages {
		if s.site, err = sitePackages(py); err != nil {
			return nil, err
		}
	}
	if s.cfg.TempDir == "" {
		s.cfg.TempDir = os.TempDir()
	}
	s.iso = s.probe()
	return s, nil
}

// resolvePython finds the real interpreter binary behind name (following pyenv-style shims by
// asking the interpreter for sys.executable) and its installation prefixes.
func resolvePython(name string) (string, []string, error) {
	if name == "" {
		name = "python3"
	}
	path, err := exec.LookPath(name)
	if err != nil {
		return "", nil, fmt.Errorf("sandbox: python interpreter %q not found: %w", name, err)
	}
	const ask = "import sys, os\nfor p in (sys.executable, sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix): print(os.path.realpath(p))"
	out, err := exec.Command(path, "-I", "-S", "-c", ask).Output()
	if err != nil {
		return "", nil, fmt.Errorf("sandbox: %s does not run: %w", path, err)
	}
	lines := strings.Fields(string(out))
	if len(lines) != 5 {
		return "", nil, fmt.Errorf("sandbox: %s: unexpected answer %q", path, out)
	}
	return lines[0], lines[1:], nil
}

// sitePackages lists the interpreter's existing site-packages directories.
func sitePackages(python string) ([]string, error) {
	const ask = "import site, os\nfor p in site.getsitepackages():\n    p = os.path.realpath(p)\n    if os.path.isdir(p): print(p)"
	out, err := exec.Command(python, "-I", "-c", ask).Output()
	if err != nil {
		return nil, fmt.Errorf("sandbox: %s: site-packages: %w", python, err)
	}
	return strings.Fields(string(out)), nil
}

// readDirs are the directories the code may read besides the interpreter's prefixes.
func (s *Sandbox) readDirs() []string {
	return append(append([]string{}, s.cfg.ReadDirs...), s.site...)
}

// env is the interpreter's environment: HOME, TMPDIR and LANG, plus single-threaded numerical
// libraries when installed packages are importable.
func (s *Sandbox) env(home string) []string {
	e := []string{"HOME=" + home, "TMPDIR=" + home, "LANG=C.UTF-8"}
	if len(s.site) > 0 {
		e = append(e, "OPENBLAS_NUM_THREADS=1", "OMP_NUM_THREADS=1", "MKL_NUM_THREADS=1")
	}
	return e
}

// Python is the interpreter the sandbox runs.
func (s *Sandbox) Python() string { return s.python }

// Isolation reports the OS-level isolation in force.
func (s *Sandbox) Isolation() Isolation { return s.iso }

// Limits reports the limits in force.
func (s *Sandbox) Limits() Limits { return s.limits }

// Run executes code as a fresh program. The error is non-nil only when the sandbox itself failed
// (no temp dir, the interpreter could not start); the code's own failures are in Result.
func (s *Sandbox) Run(ctx context.Context, code string) (Result, error) {
	return s.run(ctx, code, s.iso, s.limits)
}

// run executes code under the given isolation. The run's base directory holds work/ (the code's
// directory) and root/ (the mount point of the minimal root, when used).
func (s *Sandbox) run(ctx context.Context, code string, iso Isolation, l Limits) (Result, error) {
	base, err := os.MkdirTemp(s.cfg.TempDir, "mtgrpo-py-")
	if err != nil {
		return Result{}, fmt.Errorf("sandbox: temp dir: %w", err)
	}
	defer os.RemoveAll(base)
	work := filepath.Join(base, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		return Result{}, fmt.Errorf("sandbox: %w", err)
	}
	if err := os.Mkdir(filepath.Join(base, "root"), 0o755); err != nil {
		return Result{}, fmt.Errorf("sandbox: %w", err)
	}
	if err := os.WriteFile(filepath.Join(work, "main.py"), []byte(code), 0o644); err != nil {
		return Result{}, fmt.Errorf("sandbox: write code: %w", err)
	}
	if err := iso.prepareDir(work); err != nil {
		return Result{}, err
	}
	cmd, err := s.command(base, iso, l)
	if err != nil {
		return Result{}, err
	}
	return wait(ctx, cmd, l)
}

// command builds the child: the interpreter itself, or this binary as the helper that builds
// the minimal root and then execs the interpreter.
func (s *Sandbox) command(base string, iso Isolation, l Limits) (*exec.Cmd, error) {
	work := filepath.Join(base, "work")
	args := []string{s.python, "-I", "-S", "-B", "-c", preamble(l, s.readDirs(), s.site)}
	if s.hookless {
		args = []string{s.python, "-I", "-S", "-B", "main.py"}
	}
	if !iso.Chroot {
		cmd := exec.Command(s.python, args[1:]...)
		cmd.Dir = work
		cmd.Env = s.env(work)
		cmd.SysProcAttr = iso.attr()
		return cmd, nil
	}
	dirs, files, devices, links := rootLayout(s.prefixes, s.readDirs())
	spec := helperSpec{
		Root: filepath.Join(base, "root"), Work: work, WorkBytes: l.DiskBytes, Python: s.python, Args: args,
		Env:  s.env("/work"),
		Dirs: dirs, Files: files, Devices: devices, Links: links, UID: -1,
	}
	if iso.Nobody {
		spec.UID = nobody
	}
	js, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("/proc/self/exe")
	cmd.Args = []string{"mtgrpo-sandbox"}
	cmd.Dir = work
	cmd.Env = []string{helperEnv + "=" + string(js)}
	cmd.SysProcAttr = iso.attr()
	return cmd, nil
}

// wait runs cmd under the wall limit, killing its process group at the deadline and after it
// ends (so nothing it started outlives the run).
func wait(ctx context.Context, cmd *exec.Cmd, l Limits) (Result, error) {
	ctx, cancel := context.WithTimeout(ctx, l.Wall)
	defer cancel()
	stdout, stderr := &capped{max: l.OutputBytes}, &capped{max: l.OutputBytes}
	cmd.Stdin = nil
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = 500 * time.Millisecond
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return Result{}, fmt.Errorf("sandbox: start %s: %w", cmd.Path, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var werr error
	timedOut := false
	select {
	case werr = <-done:
	case <-ctx.Done():
		timedOut = ctx.Err() == context.DeadlineExceeded
		_ = killGroup(cmd)
		werr = <-done
	}
	_ = killGroup(cmd)
	r := Result{
		Stdout: stdout.String(), Stderr: stderr.String(),
		Truncated: stdout.dropped > 0 || stderr.dropped > 0,
		Duration:  time.Since(start),
		TimedOut:  timedOut,
	}
	r.ExitCode, r.Signal = exitStatus(cmd, werr)
	return r, nil
}

func killGroup(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

func exitStatus(cmd *exec.Cmd, err error) (int, string) {
	if cmd.ProcessState == nil {
		return -1, ""
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return -1, ws.Signal().String()
	}
	return cmd.ProcessState.ExitCode(), ""
}

// capped keeps the first max bytes written to it and counts the rest. It never fails a write, so
// the child is not killed by EPIPE mid-print.
type capped struct {
	buf     bytes.Buffer
	max     int
	dropped int
}

func (c *capped) Write(p []byte) (int, error) {
	room := c.max - c.buf.Len()
	if room >= len(p) {
		c.buf.Write(p)
	} else {
		if room > 0 {
			c.buf.Write(p[:room])
		}
		c.dropped += len(p) - max(room, 0)
	}
	return len(p), nil
}

func (c *capped) String() string {
	if c.dropped == 0 {
		return c.buf.String()
	}
	return fmt.Sprintf("%s\n... [%d bytes of output truncated]", c.buf.String(), c.dropped)
}
