package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Programs. An agent program (any executable: node, python3 with its own packages, a binary) runs
// as the user's own code, not as model-written code: it keeps the trainer's user, files and
// network (it must reach the trainer's endpoint), and is bounded as the python sandbox bounds a
// run where that applies:
//
//   - lifetime: its own process group, killed whole at ProgramLimits.Wall, when ctx ends, and when
//     it exits (what it left running dies with it); the parent-death signal, re-armed by the
//     helper, kills it when the trainer dies;
//   - memory: a memory cgroup limited to MemoryBytes where one can be made (every page counted, a
//     run past it killed: Result.OutOfMemory), and RLIMIT_DATA, which bounds the heap without
//     counting the address space that runtimes such as V8 reserve and never touch (RLIMIT_AS, the
//     python sandbox's, stops node from starting); all programs share the memory Budget;
//   - processes: RLIMIT_NPROC (Processes), which the kernel enforces only for a non-root user;
//   - descriptors: RLIMIT_NOFILE (OpenFiles); no core dumps;
//   - output: stdout and stderr kept up to OutputBytes each.
//
// It starts as the helper (helper.go), which joins the cgroup, empties the capabilities, re-arms
// the parent-death signal, sets the limits and execs the program. There is no minimal root,
// namespace, uid drop, audit hook or syscall filter: a program is trusted as the configuration
// that names it is.

// ProgramLimits bound one program run; zero fields take DefaultProgramLimits'.
type ProgramLimits struct {
	Wall        time.Duration
	MemoryBytes int64
	Processes   int
	OpenFiles   int
	OutputBytes int
}

// DefaultProgramLimits suit an agent's episode: minutes, a runtime's memory.
var DefaultProgramLimits = ProgramLimits{Wall: 10 * time.Minute, MemoryBytes: 2 << 30, Processes: 256,
	OpenFiles: 1024, OutputBytes: 64 << 10}

func (l ProgramLimits) withDefaults() ProgramLimits {
	d := DefaultProgramLimits
	if l.Wall > 0 {
		d.Wall = l.Wall
	}
	if l.MemoryBytes > 0 {
		d.MemoryBytes = l.MemoryBytes
	}
	if l.Processes > 0 {
		d.Processes = l.Processes
	}
	if l.OpenFiles > 0 {
		d.OpenFiles = l.OpenFiles
	}
	if l.OutputBytes > 0 {
		d.OutputBytes = l.OutputBytes
	}
	return d
}

// ProgramConfig configures a Programs runner.
type ProgramConfig struct {
	// Helper is the helper binary, as Config.Helper.
	Helper string
	// Budget caps the memory of all programs running at once (nil: DefaultBudget).
	Budget *Budget
}

// Programs runs programs with limits. It is safe for concurrent use.
type Programs struct {
	helper   helperChoice
	budget   *Budget
	pool     *pool
	poolNote string
}

// NewPrograms resolves the helper and opens the memory cgroup pool where one can be made.
func NewPrograms(cfg ProgramConfig) (*Programs, error) {
	h, err := chooseHelper(cfg.Helper)
	if err != nil {
		return nil, err
	}
	p := &Programs{helper: h, budget: cfg.Budget}
	if p.budget == nil {
		p.budget = DefaultBudget()
	}
	if p.pool, err = openPool(p.budget.Total()); err != nil {
		p.pool, p.poolNote = nil, "RLIMIT_DATA only (no memory cgroup: "+err.Error()+")"
	}
	return p, nil
}

// String says how programs are bounded here.
func (p *Programs) String() string {
	mem := "memory cgroup and RLIMIT_DATA"
	if p.pool == nil {
		mem = p.poolNote
	}
	return fmt.Sprintf("programs: helper %s; memory: %s", p.helper.note, mem)
}

// Program is one run: the executable (a path or a name on PATH), its arguments, its environment,
// its working directory and what it reads on stdin.
type Program struct {
	Path   string
	Args   []string
	Env    []string
	Dir    string
	Stdin  []byte
	Limits ProgramLimits
}

// Run runs prog to its end, its wall limit or ctx's end. The program's own failures (exit
// status, a signal, a limit) are in Result; the error is for a run that could not be made or
// collected, or that ctx ended.
func (p *Programs) Run(ctx context.Context, prog Program) (Result, error) {
	l := prog.Limits.withDefaults()
	path, err := exec.LookPath(prog.Path)
	if err == nil && !filepath.IsAbs(path) {
		path, err = filepath.Abs(path)
	}
	if err != nil {
		return Result{}, fmt.Errorf("sandbox: program %q: %w", prog.Path, err)
	}
	release, err := p.budget.reserve(ctx, l.MemoryBytes)
	if err != nil {
		return Result{}, err
	}
	defer release()
	var cg *runGroup
	if p.pool != nil {
		if cg, err = p.pool.newRun(l.MemoryBytes); err != nil {
			return Result{}, err
		}
		defer cg.remove()
	}
	spec := helperSpec{Protocol: HelperProtocol(), Python: path, Args: append([]string{path}, prog.Args...),
		Env: prog.Env, UID: -1, Rlimits: []rlimit{
			{unix.RLIMIT_DATA, uint64(l.MemoryBytes)}, {unix.RLIMIT_NPROC, uint64(l.Processes)},
			{unix.RLIMIT_NOFILE, uint64(l.OpenFiles)}, {unix.RLIMIT_CORE, 0}}}
	if cg != nil {
		spec.Cgroup = cg.procs()
	}
	js, err := json.Marshal(spec)
	if err != nil {
		return Result{}, err
	}
	cmd := exec.Command(p.helper.path)
	cmd.Args = []string{HelperName}
	cmd.Dir = prog.Dir
	if cmd.Dir == "" {
		cmd.Dir, _ = os.Getwd()
	}
	cmd.Env = []string{helperEnv + "=" + string(js)}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if prog.Stdin != nil {
		cmd.Stdin = bytes.NewReader(prog.Stdin)
	}
	return execute(ctx, cmd, Limits{Wall: l.Wall, OutputBytes: l.OutputBytes}, cg)
}
