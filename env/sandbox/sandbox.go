package sandbox

import (
	"fmt"
	"log"
	"os"
	"os/exec"
	"strings"
	"time"
)

// Limits bound one run. Zero fields take the defaults of DefaultLimits.
type Limits struct {
	// Wall is the wall-clock limit; the whole process group is killed when it passes.
	Wall time.Duration
	// CPUSeconds is RLIMIT_CPU: the kernel kills the process (SIGXCPU, then SIGKILL) past it.
	CPUSeconds int
	// MemoryBytes is RLIMIT_AS: allocations past it fail (Python raises MemoryError). With a
	// memory cgroup it is also the run's share of the cgroup limit (with DiskBytes): every page
	// the run holds counts, and the kernel kills the run (Result.OutOfMemory) past it.
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
	// OpenFiles is RLIMIT_NOFILE: descriptors open at once. Kernel buffers (pipes, sockets) are
	// held through descriptors, so this bounds them too.
	OpenFiles int
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
	OpenFiles:   64,
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
	if l.OpenFiles > 0 {
		d.OpenFiles = l.OpenFiles
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
	// Budget caps the memory all concurrent runs hold together (see Budget); runs wait for
	// room. nil: DefaultBudget, shared by every Sandbox of the process.
	Budget *Budget
	// Require lists the guarantees this configuration demands: New fails, naming what is
	// missing and why, rather than run in a weaker mode. Zero accepts the strongest mode that
	// works here, whatever it is (New logs it).
	Require Guarantee
	// Helper is the binary each run starts as, to prepare the process before the interpreter
	// (helper.go): a build of cmd/mtgrpo-sandbox, found on PATH when it names no directory.
	// Default: mtgrpo-sandbox beside the running executable when there is one of this build,
	// else the running executable itself, which in bin/mtgrpo loads libtorch on every run
	// (~0.4 s of CPU; docs/bench/env.md). A Helper that is set but missing, not executable or
	// not a helper of this build is an error at New, never replaced by another.
	Helper string
	// Log receives one line from New: the sandbox's description (String), which says which
	// helper and isolation mode were chosen and why stronger modes were not. nil: the standard
	// logger (stderr).
	Log func(string)
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
	// OutOfMemory is true when the run's memory cgroup hit its limit and the kernel killed the
	// run (Signal is then "killed"). Without a cgroup, running out shows as a MemoryError.
	OutOfMemory bool
	// Truncated is true when output past Limits.OutputBytes was dropped.
	Truncated bool
	Duration  time.Duration
}

// OK is true when the code ran to the end with status 0.
func (r Result) OK() bool {
	return r.ExitCode == 0 && !r.TimedOut && r.Signal == "" && !r.OutOfMemory
}

// Sandbox runs Python code in fresh, limited child processes. It is safe for concurrent use.
type Sandbox struct {
	cfg      Config
	python   string
	helper   helperChoice
	prefixes []string // sys.prefix and friends: bound into the minimal root
	site     []string // site-packages directories, with Config.SitePackages
	limits   Limits
	iso      Isolation
	budget   *Budget
	pool     *pool  // makes the memory cgroups of this Sandbox's runs; nil when none can be made
	poolNote string // why there is no memory cgroup, when there is none
	// hookless runs main.py without the preamble (no rlimits, no audit hook): tests use it to
	// check what the kernel layers hold on their own, as against code that got past the hook.
	hookless bool
}

// New resolves the interpreter and the helper and probes which isolation this machine permits.
// It logs its choices (String), and fails if the mode lacks a guarantee of Config.Require.
func New(cfg Config) (*Sandbox, error) {
	s := &Sandbox{cfg: cfg, limits: cfg.Limits.withDefaults(), budget: cfg.Budget}
	if s.budget == nil {
		s.budget = DefaultBudget()
	}
	py, prefixes, err := resolvePython(cfg.Python)
	if err != nil {
		return nil, err
	}
	if s.helper, err = chooseHelper(cfg.Helper); err != nil {
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
	sweepLeftovers(s.cfg.TempDir, runDirPrefix, func(dir string) { _ = os.RemoveAll(dir) })
	if s.pool, err = openPool(s.budget.Total()); err != nil {
		s.poolNote = "rlimits only (no memory cgroup: " + err.Error() + ")"
	}
	var ok bool
	if s.iso, ok = s.probe(); !ok {
		return nil, fmt.Errorf("sandbox: %s: %s", s.python, s.iso.Note)
	}
	s.logf("%s", s)
	if missing := cfg.Require &^ s.iso.Guarantees(); missing != 0 {
		return nil, fmt.Errorf("sandbox: this machine cannot give %s (Config.Require); isolation here: %s", missing, s.iso.Note)
	}
	return s, nil
}

func (s *Sandbox) logf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if s.cfg.Log != nil {
		s.cfg.Log(msg)
		return
	}
	log.Print(msg)
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

// Helper is the binary each run starts as (Config.Helper); /proc/self/exe for this binary.
func (s *Sandbox) Helper() string { return s.helper.path }

// String describes the sandbox in one line: interpreter, helper and isolation, each with why.
func (s *Sandbox) String() string {
	return fmt.Sprintf("sandbox: python %s; helper: %s; isolation: %s", s.python, s.helper.note, s.iso.Note)
}

// Isolation reports the OS-level isolation in force.
func (s *Sandbox) Isolation() Isolation { return s.iso }

// Limits reports the limits in force.
func (s *Sandbox) Limits() Limits { return s.limits }
