package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// Run executes code as a fresh program. The code's own failures (exit status, traceback, limits)
// are in Result. The error is non-nil when there is no trustworthy result: the sandbox itself
// failed (no temp dir, the helper or the interpreter could not start), the run's output could not
// be collected in full, or ctx ended (the run is then killed, everything it started reaped, and
// the error wraps ctx's). Waiting for room in the memory budget counts against ctx, not against
// Limits.Wall.
func (s *Sandbox) Run(ctx context.Context, code string) (Result, error) {
	return s.run(ctx, code, s.iso, s.limits)
}

// run executes code under the given isolation. The run's base directory holds work/ (the code's
// directory) and root/ (the mount point of the minimal root, when used).
func (s *Sandbox) run(ctx context.Context, code string, iso Isolation, l Limits) (Result, error) {
	need := iso.reservation(l)
	release, err := s.budget.reserve(ctx, need)
	if err != nil {
		return Result{}, err
	}
	defer release()
	base, err := makeRunDir(s.cfg.TempDir, code, iso)
	if base != "" {
		defer os.RemoveAll(base)
	}
	if err != nil {
		return Result{}, err
	}
	var cg *runGroup
	if iso.Memory != MemoryRlimits {
		if cg, err = s.pool.newRun(need); err != nil {
			return Result{}, err
		}
		defer cg.remove()
	}
	cmd, err := s.command(base, iso, l, cg)
	if err != nil {
		return Result{}, err
	}
	return execute(ctx, cmd, l, cg)
}

// runDirPrefix starts the name of every run's directory, before the owner's tag (leftovers.go).
const runDirPrefix = "mtgrpo-py-"

// makeRunDir makes base/work holding main.py and base/root. When the run drops to nobody, work
// is nobody's and base is 0711: nobody must be able to pass through base to reach its directory
// (os.MkdirTemp makes it 0700, and without the minimal root the interpreter's own path lookups
// go through it).
func makeRunDir(tempDir, code string, iso Isolation) (string, error) {
	base, err := os.MkdirTemp(tempDir, runDirPrefix+ownerTag())
	if err != nil {
		return "", fmt.Errorf("sandbox: temp dir: %w", err)
	}
	work := filepath.Join(base, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		return base, fmt.Errorf("sandbox: %w", err)
	}
	if err := os.Mkdir(filepath.Join(base, "root"), 0o755); err != nil {
		return base, fmt.Errorf("sandbox: %w", err)
	}
	if err := os.WriteFile(filepath.Join(work, "main.py"), []byte(code), 0o644); err != nil {
		return base, fmt.Errorf("sandbox: write code: %w", err)
	}
	if !iso.Nobody {
		return base, nil
	}
	if err := os.Chmod(base, 0o711); err != nil {
		return base, fmt.Errorf("sandbox: %w", err)
	}
	for _, p := range []string{work, filepath.Join(work, "main.py")} {
		if err := os.Chown(p, nobody, nobody); err != nil {
			return base, fmt.Errorf("sandbox: chown %s: %w", p, err)
		}
	}
	return base, nil
}

// command builds the child: the helper binary (helper.go), which prepares the process and execs
// the interpreter.
func (s *Sandbox) command(base string, iso Isolation, l Limits, cg *runGroup) (*exec.Cmd, error) {
	work := filepath.Join(base, "work")
	args := []string{s.python, "-I", "-S", "-B", "-c", preamble(l, s.readDirs(), s.site)}
	if s.hookless {
		args = []string{s.python, "-I", "-S", "-B", "main.py"}
	}
	spec := helperSpec{Protocol: HelperProtocol(), Python: s.python, Args: args, Env: s.env(work), UID: -1, Seccomp: iso.Seccomp}
	if iso.Nobody {
		spec.UID = nobody
	}
	if cg != nil {
		spec.Cgroup = cg.procs()
	}
	if iso.Chroot {
		dirs, files, devices, links := rootLayout(s.prefixes, s.readDirs())
		spec.Root = &rootSpec{Root: filepath.Join(base, "root"), Work: work, WorkBytes: l.DiskBytes,
			Dirs: dirs, Files: files, Devices: devices, Links: links}
		spec.Env = s.env("/work")
	}
	js, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(s.helper.path)
	cmd.Args = []string{HelperName}
	cmd.Dir = work
	cmd.Env = []string{helperEnv + "=" + string(js)}
	cmd.SysProcAttr = iso.attr()
	return cmd, nil
}

// pipes are the descriptors a run's helper gets besides its output: the alive pipe (the helper
// holds the read end; this process holds the only write end until the run is over) and the
// error pipe (the helper's failure, if any).
type pipes struct {
	stdout, stderr, helperErr *stream
	aliveR, aliveW            *os.File
}

func openPipes(outputBytes int) (*pipes, error) {
	var p pipes
	var err error
	if p.stdout, err = newStream(outputBytes); err != nil {
		return nil, err
	}
	if p.stderr, err = newStream(outputBytes); err != nil {
		p.stdout.abandon()
		return nil, err
	}
	if p.helperErr, err = newStream(4 << 10); err != nil {
		p.stdout.abandon()
		p.stderr.abandon()
		return nil, err
	}
	if p.aliveR, p.aliveW, err = os.Pipe(); err != nil {
		p.abandon()
		return nil, fmt.Errorf("sandbox: alive pipe: %w", err)
	}
	return &p, nil
}

func (p *pipes) abandon() {
	for _, s := range []*stream{p.stdout, p.stderr, p.helperErr} {
		s.abandon()
	}
	if p.aliveR != nil {
		p.aliveR.Close()
		p.aliveW.Close()
	}
}

// started closes this process's copies of the child's ends and starts reading.
func (p *pipes) started() {
	p.stdout.start()
	p.stderr.start()
	p.helperErr.start()
	p.aliveR.Close()
}

// stop says why a run was stopped before it ended by itself.
type stop int

const (
	ranToEnd stop = iota
	wallPassed
	ctxEnded
)

// execute runs cmd under the wall limit and ctx, kills everything the run left behind, and
// collects its output in full (output.go).
func execute(ctx context.Context, cmd *exec.Cmd, l Limits, cg *runGroup) (Result, error) {
	p, err := openPipes(l.OutputBytes)
	if err != nil {
		return Result{}, err
	}
	cmd.Stdout, cmd.Stderr = p.stdout.w, p.stderr.w
	cmd.ExtraFiles = []*os.File{p.aliveR, p.helperErr.w} // fds 3 and 4: aliveFD, errorFD
	start := time.Now()
	if err := cmd.Start(); err != nil {
		p.abandon()
		return Result{}, fmt.Errorf("sandbox: start %s: %w", cmd.Path, err)
	}
	p.started()
	defer p.aliveW.Close()
	why := wait(ctx, cmd, l.Wall, cg)
	r := Result{Duration: time.Since(start), TimedOut: why == wallPassed, OutOfMemory: cg.oomKilled()}
	r.ExitCode, r.Signal = exitStatus(cmd)
	outErr := errors.Join(p.stdout.finish(), p.stderr.finish(), p.helperErr.finish())
	r.Stdout, r.Stderr = p.stdout.out.String(), p.stderr.out.String()
	r.Truncated = p.stdout.out.dropped > 0 || p.stderr.out.dropped > 0
	if msg := p.helperErr.out.String(); msg != "" {
		return r, fmt.Errorf("sandbox helper: %s", msg)
	}
	if why == ctxEnded {
		return r, fmt.Errorf("sandbox: run stopped after %v: %w", r.Duration.Round(time.Millisecond), context.Cause(ctx))
	}
	if outErr != nil {
		return r, outErr
	}
	return r, nil
}

// wait waits for the child until it exits, the wall limit passes or ctx ends, then kills
// whatever is left of the run: its process group, and its cgroup's processes (which include
// any that left the group). With a PID namespace the kernel has killed them already.
func wait(ctx context.Context, cmd *exec.Cmd, wall time.Duration, cg *runGroup) stop {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	timer := time.NewTimer(wall)
	defer timer.Stop()
	why := ranToEnd
	select {
	case <-done:
	case <-timer.C:
		why = wallPassed
	case <-ctx.Done():
		why = ctxEnded
	}
	if why != ranToEnd {
		killGroup(cmd)
		cg.kill()
		<-done
	}
	killGroup(cmd)
	cg.kill()
	return why
}

func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

func exitStatus(cmd *exec.Cmd) (int, string) {
	if cmd.ProcessState == nil {
		return -1, ""
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return -1, ws.Signal().String()
	}
	return cmd.ProcessState.ExitCode(), ""
}
