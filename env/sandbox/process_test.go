package sandbox

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// trainerEnv makes the test binary act as a trainer (TestMain): it runs one sandboxed program
// that sleeps, so that a test can kill it mid-run.
const trainerEnv = "MTGRPO_SANDBOX_TEST_TRAINER"

func TestMain(m *testing.M) {
	if os.Getenv(trainerEnv) != "" {
		trainer()
		return
	}
	code := m.Run()
	removeBuiltHelpers()
	os.Exit(code)
}

// trainer prints "ready" once its sandbox is made (the probe's runs are over), then runs a
// program that sleeps for a minute.
func trainer() {
	s, err := New(Config{Python: testPython(), Limits: Limits{Wall: time.Minute, CPUSeconds: 60}, Log: func(string) {}})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("ready")
	_, err = s.Run(context.Background(), "import time\ntime.sleep(60)")
	fmt.Println("run ended:", err)
}

// Killing the trainer kills the program it was running. The helper drops to nobody, which
// clears the parent-death signal Go set; before the helper re-armed it, an interpreter whose
// trainer was SIGKILLed ran on for ever (as the init of its own PID namespace). Both a SIGKILL
// and a Ctrl-C (SIGINT, which ends a Go program) are tried. A later New removes the run
// directories and cgroups the killed trainers left.
func TestRunDiesWithTrainer(t *testing.T) {
	python, _, err := resolvePython(testPython())
	if err != nil {
		t.Skip(err)
	}
	var trainers []int
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGINT} {
		trainerPid, pythonPid := startTrainer(t, python)
		trainers = append(trainers, trainerPid)
		if err := syscall.Kill(trainerPid, sig); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for processAlive(pythonPid) {
			if time.Now().After(deadline) {
				syscall.Kill(pythonPid, syscall.SIGKILL)
				t.Fatalf("%v: the trainer is dead, its python %d still runs 5 s later", sig, pythonPid)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	s := newTest(t, quick)
	for _, pid := range trainers {
		tag := strings.Replace(ownerTag(), "-"+strconv.Itoa(os.Getpid())+"-", "-"+strconv.Itoa(pid)+"-", 1)
		left, _ := filepath.Glob(filepath.Join(s.cfg.TempDir, runDirPrefix+tag+"*"))
		if s.pool != nil {
			pools, _ := filepath.Glob(filepath.Join(s.pool.parent, poolPrefix+tag+"*"))
			left = append(left, pools...)
		}
		if len(left) != 0 {
			t.Fatalf("what the killed trainer %d left is still there: %v", pid, left)
		}
	}
}

// startTrainer starts the test binary as a trainer and returns its pid and that of its running
// interpreter: a child whose argv[0] is python (the helper's is "mtgrpo-sandbox"; its exe link
// names the binary by its path in the minimal root's mount, not python's).
func startTrainer(t *testing.T, python string) (int, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), trainerEnv+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, _ := bufio.NewReader(out).ReadString('\n')
	if line != "ready\n" {
		t.Fatalf("trainer: %q", line)
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		for _, pid := range children(cmd.Process.Pid) {
			if argv, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); strings.HasPrefix(string(argv), python+"\x00") {
				return cmd.Process.Pid, pid
			}
		}
	}
	t.Fatal("the trainer's python never started")
	return 0, 0
}

// children lists the pids whose parent is pid.
func children(pid int) []int {
	var kids []int
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after the last ')'.
		fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			kids = append(kids, pidOf(f))
		}
	}
	return kids
}

// pidOf is the pid of a /proc/<pid>/... path.
func pidOf(procPath string) int {
	n, _ := strconv.Atoi(strings.Split(procPath, "/")[2])
	return n
}

// The helper's check for a trainer that died before the parent-death signal was re-armed: the
// alive pipe reads as hung up once its only write end is closed.
func TestTrainerGoneCheck(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if trainerGone(int(r.Fd())) {
		t.Fatal("trainer reported gone while the write end is open")
	}
	w.Close()
	if !trainerGone(int(r.Fd())) {
		t.Fatal("trainer not reported gone after the write end closed")
	}
}

// Ending the context (a turn's tool-time cap) stops the run promptly: Run returns an error that
// wraps the context's, with what the program printed so far, and nothing of the run is left.
func TestContextEndsTheRun(t *testing.T) {
	s := newTest(t, Limits{Wall: 30 * time.Second, CPUSeconds: 30})
	// 2 s: time for the interpreter to start and print even on a loaded machine.
	const limit = 2 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	start := time.Now()
	r, err := s.Run(ctx, "import time\nprint('started', flush=True)\ntime.sleep(30)")
	if !errors.Is(err, context.DeadlineExceeded) || r.OK() || r.TimedOut || r.Stdout != "started\n" {
		t.Fatalf("want the run stopped by the context with its output, got %v %+v", err, r)
	}
	if d := time.Since(start); d > limit+2*time.Second {
		t.Fatalf("took %v to stop", d)
	}
	if s.pool != nil {
		if left, _ := filepath.Glob(filepath.Join(s.pool.parent, poolPrefix+ownerTag()+"*")); len(left) != 0 {
			t.Fatalf("cgroups left after the run: %v", left)
		}
	}
}

// Output is never lost, however loaded the machine. Under 64 to 128 concurrent runs a few used
// to come back as exit 0 with empty stdout: the pipe's EOF waited on processes outside the run
// (see output.go), exec's WaitDelay closed the pipe with the output in it, and the error was
// ignored. Every run must now print exactly what it printed; the budget is made large enough
// for all 64 to run at once, and the wall limit generous, so that only output loss can fail.
func TestOutputNeverLostUnderLoad(t *testing.T) {
	l := Limits{Wall: 60 * time.Second, CPUSeconds: 30, MemoryBytes: 64 << 20, DiskBytes: 1 << 20}
	s := newTestConfig(t, Config{Limits: l, Budget: NewBudget(64 * (l.MemoryBytes + l.DiskBytes))})
	var wg sync.WaitGroup
	bad := make(chan string, 64)
	for i := 0; i < 64; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			want := fmt.Sprintf("run %d\n", i)
			r, err := s.Run(context.Background(), fmt.Sprintf("print('run %d')", i))
			if err != nil || !r.OK() || r.Stdout != want {
				bad <- fmt.Sprintf("run %d: %v %+v", i, err, r)
			}
		}(i)
	}
	wg.Wait()
	close(bad)
	for b := range bad {
		t.Error(b)
	}
}

// The collector does not wait for EOF: once the writer is done, what it wrote is returned at
// once and in full even though another process (here: this one) still holds the write end.
func TestStreamCompleteWhileWriteEndHeld(t *testing.T) {
	st, err := newStream(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	held, err := dup(st.w) // the stranger's copy, as a sibling in clone() would hold it
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	st.start()
	want := strings.Repeat("0123456789abcdef", 10000) // 160 KB: more than a pipe's buffer
	wrote := make(chan struct{})
	go func() {
		held.WriteString(want)
		close(wrote)
	}()
	<-wrote // the writer is done, as the run's processes are when execute collects
	start := time.Now()
	if err := st.finish(); err != nil {
		t.Fatal(err)
	}
	if got := st.out.String(); got != want || time.Since(start) > time.Second {
		t.Fatalf("got %d of %d bytes after %v", len(got), len(want), time.Since(start))
	}
}

func dup(f *os.File) (*os.File, error) {
	fd, err := syscall.Dup(int(f.Fd()))
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), "dup"), nil
}

// A failure of the sandbox itself is an error, never a result: here the minimal root cannot
// bind a directory that does not exist.
func TestHelperFailureIsAnError(t *testing.T) {
	s := newTest(t, quick)
	if !s.iso.Chroot {
		t.Skipf("no minimal root here: %s", s.iso.Note)
	}
	broken := *s
	broken.cfg.ReadDirs = []string{"/nonexistent/mtgrpo-sandbox-test"}
	r, err := broken.Run(context.Background(), "print('ran')")
	if err == nil || !strings.Contains(err.Error(), "sandbox helper: bind /nonexistent/mtgrpo-sandbox-test") || r.Stdout != "" {
		t.Fatalf("want the helper's error, got %v %+v", err, r)
	}
}
