package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mtgrpo/mtgrpo/cmd/internal/config"
	rundir "github.com/mtgrpo/mtgrpo/cmd/internal/run"
)

// TestMain lets the test binary act as mtgrpo itself when MTGRPO_TEST_MAIN=1, so tests can run
// commands as child processes: exit codes, signals, resource limits.
func TestMain(m *testing.M) {
	if os.Getenv("MTGRPO_TEST_MAIN") == "1" {
		os.Exit(exitCode(run(os.Args[1:])))
	}
	// The configuration reads MODEL, LR, DATA, ...: the host's values must not reach the tests.
	for _, v := range config.EnvVars {
		os.Unsetenv(v.Name)
	}
	os.Unsetenv("CONFIG")
	os.Unsetenv("PRESET")
	os.Unsetenv("MTGRPO_DEMO_SHORT")
	code := m.Run()
	if sharedDir != "" {
		os.RemoveAll(sharedDir)
	}
	os.Exit(code)
}

// child makes a command running this test binary as `mtgrpo args...`.
func child(args ...string) *exec.Cmd {
	c := exec.Command(os.Args[0], args...)
	c.Env = append(os.Environ(), "MTGRPO_TEST_MAIN=1", "MTGRPO_PROGRESS=0")
	return c
}

// runChild runs `mtgrpo args...` and returns its exit code and stderr.
func runChild(t *testing.T, timeout time.Duration, args ...string) (int, string) {
	t.Helper()
	c := child(args...)
	var stderr bytes.Buffer
	c.Stderr = &stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case <-done:
	case <-time.After(timeout):
		c.Process.Kill()
		<-done
		t.Fatalf("mtgrpo %q still running after %v (stderr %q)", args, timeout, stderr.String())
	}
	return c.ProcessState.ExitCode(), stderr.String()
}

// Every command's bad input is an error that names the command and what is wrong; command-line
// mistakes are usage errors (exit 2), failures of the work are not (exit 1).
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	os.WriteFile(file, []byte("x"), 0o644)
	configOnly := filepath.Join(dir, "config-only")
	os.MkdirAll(configOnly, 0o755)
	os.WriteFile(filepath.Join(configOnly, "config.json"), []byte("{}"), 0o644)
	t.Setenv("HF_HUB_OFFLINE", "1")
	t.Setenv("HF_HUB_CACHE", t.TempDir())
	cases := []struct {
		args  []string
		want  string
		usage bool
	}{
		{[]string{"trian"}, `unknown command "trian"`, true},
		{[]string{"init"}, "--out is required", true},
		{[]string{"init", "--out", dir, "--bogus"}, "unknown flag: --bogus", true},
		{[]string{"init", "--preset", "huge", "--out", dir}, `--preset "huge": unknown preset`, true},
		{[]string{"init", "--arch", "gpt2", "--out", dir}, `--arch "gpt2": unknown architecture`, true},
		{[]string{"init", "--hidden-size", "100000", "--out", dir}, "--hidden-size: 100000: larger than this program supports (at most 65536)", true},
		{[]string{"init", "--dtype", "int8", "--out", dir}, `--dtype: "int8" is not a model dtype`, true},
		{[]string{"init", "--seed", "-1", "--out", dir}, `invalid argument "-1" for "--seed"`, true},
		{[]string{"init", "--threads", "0", "--out", filepath.Join(dir, "m")}, `--threads "0": out of range`, true},
		{[]string{"init", "--out", filepath.Join(file, "m")}, "not a directory", false},
		{[]string{"init", "--out", "/proc/m"}, "/proc/m: cannot write beside it", false},
		{[]string{"generate"}, "--model and at least one --prompt are required", true},
		{[]string{"generate", "--model", dir, "--prompt", "x", "--n", "0"}, "--n 0: must be at least 1", true},
		{[]string{"generate", "--model", dir, "--prompt", "x", "--max-new-tokens", "-3"}, "--max-new-tokens -3: must be at least 1", true},
		{[]string{"generate", "--model", dir, "--prompt", "x", "--top-p", "0"}, "--top-p 0: must be in (0, 1]", true},
		{[]string{"generate", "--model", dir, "--prompt", "x", "--min-p", "1"}, "--min-p 1: must be in [0, 1)", true},
		{[]string{"generate", "--model", dir, "--prompt", "x", "--temperature", "-1"}, "--temperature -1: must be in [0, 100]", true},
		{[]string{"generate", "--model", dir, "--prompt", "x", "--top-k", "-1"}, "--top-k -1: must be at least 0", true},
		{[]string{"generate", "--model", dir, "--prompt", "x", "--max-len", "0"}, "--max-len 0: must be at least 2", true},
		{[]string{"generate", "--model", filepath.Join(dir, "none"), "--prompt", "x"}, "--model: " + filepath.Join(dir, "none") + ": no such directory", true},
		{[]string{"generate", "--model", file, "--prompt", "x"}, "is a file: want a model directory", true},
		{[]string{"generate", "--model", dir, "--prompt", "x"}, "no config.json", true},
		{[]string{"generate", "--model", configOnly, "--prompt", "x"}, "tokenizer", false},
		{[]string{"generate", "--model", "org/none", "--prompt", "x"}, "HF_HUB_OFFLINE=1 forbids downloading it", true},
		{[]string{"demo", "--batch-size", "0"}, "--batch-size: rollout.tasks: 0: must be at least 1", true},
		{[]string{"demo", "--group", "-2"}, "--group: rollout.group: -2: must be at least 1", true},
		{[]string{"demo", "--group", "x"}, `--group: rollout.group: want an integer, got "x"`, true},
		{[]string{"demo", "--set", "rollout.condenser.keep_last_n=-1"}, "--set: rollout.condenser.keep_last_n: -1: must be at least 0", true},
		{[]string{"demo", "--env", "chess"}, `--env: env.name: unknown environment "chess"`, true},
		{[]string{"demo", "--tasks", "1"}, "unknown flag: --tasks", true},
		{[]string{"data"}, "want a subcommand", true},
		{[]string{"data", "gen", "--task", "countdown", "--n", "-5", "--out", file}, "--n -5: must be at least 1", true},
		{[]string{"data", "gen", "--task", "countdown", "--n", "0", "--out", file}, "--n 0: must be at least 1", true},
		{[]string{"data", "gen", "--task", "nope", "--out", file}, `--task "nope": unknown generator`, true},
		{[]string{"data", "gen", "--task", "countdown", "--n", "x", "--out", file}, `invalid argument "x" for "--n"`, true},
		{[]string{"data", "gen", "--task", "countdown", "--out", filepath.Join(file, "sub.jsonl")}, "--out " + filepath.Join(file, "sub.jsonl") + ": no directory " + file + " to write it in", true},
		{[]string{"data", "gen", "--task", "countdown", "--out", filepath.Join(dir, "rows.csv")}, "rows.csv: unknown data format (want .parquet or .jsonl)", true},
		{[]string{"data", "gen", "--task", "countdown", "--n", "10000001", "--out", file}, "--n 10000001: at most 10000000 rows", true},
		{[]string{"data", "gen", "--task", "gsm8k", "--set", "env.lake_size=3", "--out", file}, "--set: env.lake_size: does not shape generated gsm8k rows (env.max_number does)", true},
		{[]string{"data", "gen", "--task", "countdown", "--set", "env.digits=2", "--out", file}, "env.digits: does not shape generated countdown rows (no setting does)", true},
		{[]string{"data", "gen", "--task", "gsm8k", "--set", "env.max_number=5", "--out", file}, "--set: env.max_number: 5: want 10 to 10000", true},
		{[]string{"data", "gen", "--task", "gsm8k", "--set", "env.max_number=x", "--out", file}, "env.max_number", true},
		{[]string{"data", "gen", "--task", "gsm8k", "--set", "env.max_number=20.5", "--out", file}, `--set: env.max_number: want an integer, got "20.5"`, true},
		{[]string{"data", "gen", "--task", "gsm8k", "--set", "env.max_number", "--out", file}, "want key=value", true},
		{[]string{"data", "check"}, "want one file", true},
		{[]string{"data", "check", filepath.Join(dir, "missing.jsonl")}, "missing.jsonl", false},
		{[]string{"plan", "--model", tinyModel(t), "--dtype", "bogus"}, `--dtype: dtype: "bogus" is not a model dtype`, true},
		{[]string{"plan", "init.arch=qwen2", "init.preset=tiny", "init.num_hidden_layers=5000"}, "argument: init.num_hidden_layers: 5000: larger than this program supports (at most 1024)", true},
		{[]string{"plan", "init.arch=qwen2", "init.preset=tiny", "init.num_attention_heads=3"}, "argument: init: qwen2/tiny with the given widths: num_attention_heads (3) must be a multiple of num_key_value_heads (2)", true},
		{[]string{"plan", "--model", tinyModel(t), "--nproc", "2", "dist.rollout_ranks=2", "loss.is=token_truncate"}, "(--nproc 2) leave no rank to train", true},
		{[]string{"generate", "--model", dir, "--prompt", "x", "--dtype", "int8"}, `--dtype: "int8" is not a model dtype`, true},
		{[]string{"bench", "--rounds", "0"}, "--rounds 0: must be at least 1", true},
		{[]string{"bench", "--settings", "2"}, `--settings "2": want INTRA,BLAS`, true},
		{[]string{"version", "--threads", "a,b"}, `--threads "a,b": not an integer`, true},
	}
	for _, c := range cases {
		err := run(c.args)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("mtgrpo %q: %v; want an error containing %q", c.args, err, c.want)
			continue
		}
		if isUsage := errors.As(err, new(usageError)); isUsage != c.usage {
			t.Errorf("mtgrpo %q: usage error %v, want %v (%v)", c.args, isUsage, c.usage, err)
		}
	}
}

// The process exits 0 on success and --help, 2 on a command-line mistake, 1 when the work fails,
// and prints the error on stderr.
func TestExitCodes(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"help"}, 0, ""},
		{[]string{"init", "--help"}, 0, ""},
		{[]string{"data", "gen", "--task", "countdown", "--n", "3", "--out", filepath.Join(dir, "d.jsonl")}, 0, ""},
		{[]string{"data", "gen", "--n", "-5"}, 2, "--task and --out are required"},
		{[]string{"frobnicate"}, 2, `mtgrpo: unknown command "frobnicate"`},
		{[]string{"data", "check", filepath.Join(dir, "none.parquet")}, 1, "mtgrpo: data check:"},
	} {
		code, stderr := runChild(t, time.Minute, c.args...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("mtgrpo %q: exit %d, stderr %q; want %d and %q", c.args, code, stderr, c.code, c.want)
		}
	}
}

// --help prints the summary, every flag with its default and the examples, on stdout.
func TestCommandHelp(t *testing.T) {
	c := child("generate", "--help")
	out, err := c.Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"usage: mtgrpo generate [flags]", "--max-new-tokens int", "(default 128)", "--threads string", "examples:", "mtgrpo generate --model"} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("generate --help lacks %q:\n%s", want, out)
		}
	}
}

// report and plot run on a run directory written through package run; bad arguments name what is
// wrong.
func TestReportAndPlot(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	r, err := rundir.Open(rundir.Options{Dir: dir, Config: map[string]int{"seed": 1}})
	if err != nil {
		t.Fatal(err)
	}
	for s := 1; s <= 3; s++ {
		r.Step(s, rundir.Metrics{"critic/score/mean": float64(s) / 4, "timing_s/gen": 1, "timing_s/update_actor": 2})
	}
	r.Step(4, rundir.Metrics{"critic/score/mean": 1.7e308, "timing_s/gen": 1.7e308}) // drawn at the charts' limit
	r.Close()
	if err := run([]string{"report", dir}); err != nil {
		t.Fatal(err)
	}
	if err := run([]string{"plot", dir}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"report.html", "plots/reward.png", "plots/time_per_phase.png"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	for args, want := range map[string]string{
		"report":                "want one run directory, got 0",
		"plot a b":              "got 2 arguments",
		"report " + t.TempDir(): "not a run directory",
		"plot " + dir + "/none": "no such file",
	} {
		if err := run(strings.Fields(args)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("mtgrpo %s: %v, want %q", args, err, want)
		}
	}
}

// A data gen whose write fails part way (a file size limit, as a full disk) leaves the dataset
// that was there as it was, and no temporary beside it.
func TestDataGenKeepsOldFile(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "rows.jsonl")
	if err := run([]string{"data", "gen", "--task", "countdown", "--n", "3", "--out", out}); err != nil {
		t.Fatal(err)
	}
	old, _ := os.ReadFile(out)
	// 2000 rows are some 1 MB; ulimit -f 64 stops the write at 32 or 64 KiB (EFBIG).
	c := exec.Command("sh", "-c", `ulimit -f 64; exec "$0" "$@"`, os.Args[0], "data", "gen", "--task", "countdown", "--n", "2000", "--seed", "1", "--out", out)
	c.Env = append(os.Environ(), "MTGRPO_TEST_MAIN=1")
	msg, _ := c.CombinedOutput()
	if code := c.ProcessState.ExitCode(); code != 1 || !strings.Contains(string(msg), "file too large ("+out+" is left as it was)") {
		t.Errorf("exit %d, %s", code, msg)
	}
	if now, _ := os.ReadFile(out); !bytes.Equal(now, old) {
		t.Errorf("the old rows changed: %d bytes, were %d", len(now), len(old))
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("the directory holds %v", ents)
	}
}
