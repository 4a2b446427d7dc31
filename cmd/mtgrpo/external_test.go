package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rundir "github.com/mtgrpo/mtgrpo/cmd/internal/run"
	"github.com/mtgrpo/mtgrpo/env/envtest"
)

// Short training runs through `mtgrpo train` on the parts that live outside the binary: an MCP
// tool server over stdio (the project's own test server, built here), an OpenEnv environment
// server on loopback (Python standard library), and a reward function that is a Python program.
// Each runs two RL steps on the tiny model and leaves a complete run directory whose samples show
// the outside part at work. The YAML is what docs/mcp.md, docs/openenv.md and docs/rewards.md
// show, with the servers' addresses filled in.
func TestTrainWithExternalParts(t *testing.T) {
	model := tinyModel(t)
	root := filepath.Join("..", "..")
	mcpServer := filepath.Join(t.TempDir(), "mcpserver")
	if out, err := exec.Command("go", "build", "-o", mcpServer, "../../env/mcp/internal/testserver").CombinedOutput(); err != nil {
		t.Fatalf("building the MCP test server: %v\n%s", err, out)
	}
	openenvURL, _ := envtest.StartURL(t, "python3", filepath.Join(root, "env", "openenv", "testdata", "server.py"), "--max-sessions", "4")
	rewardPy, err := filepath.Abs(filepath.Join(root, "env", "extreward", "testdata", "reward.py"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, yaml string
		// inSamples must appear in the step's trajectory samples: the outside part's doing.
		inSamples []string
		metrics   []string
	}{
		{"mcp", `env: gsm8k
mcp:
  servers:
    - name: calc
      command: ` + mcpServer + `
      tools: [add, echo]
  call_timeout: 10s
`, []string{"You can call the add and echo tools"}, []string{"critic/score/mean"}},
		{"openenv", `env: openenv
openenv:
  urls: [` + openenvURL + `]
  max_sessions: 4
  action_field: message
  observation_field: prompt
  system: "Guess the secret word. Answer with one word."
  max_turns: 3
`, []string{"It has 5 letters.", "No. It starts with"}, []string{"critic/score/mean", "num_turns/mean"}},
		{"reward-command", `env: gsm8k
reward_computation:
  type: command
  name: judge
  command: [python3, ` + rewardPy + `]
  timeout: 30s
  concurrency: 4
`, nil, []string{"reward/judge/mean"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			runDir, args := trainWithYAML(t, model, c.yaml)
			args = append(args, "--steps", "2", "--set", "train.export=false", "--set", "train.report=false")
			if err := run(args); err != nil {
				t.Fatal(err)
			}
			recs, err := rundir.ReadMetrics(runDir)
			if err != nil || len(recs) < 2 || recs[len(recs)-1].Step != 2 {
				t.Fatalf("metrics: %+v %v; want steps up to 2", recs, err)
			}
			for _, k := range c.metrics {
				if _, ok := recs[len(recs)-1].Values[k]; !ok {
					t.Errorf("metric %s missing from step 2 (%v)", k, recs[len(recs)-1].Values)
				}
			}
			samples, err := os.ReadFile(filepath.Join(runDir, rundir.SamplesDir, "step-00000002.txt"))
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range c.inSamples {
				if !strings.Contains(string(samples), s) {
					t.Errorf("samples of step 2 lack %q:\n%.2000s", s, samples)
				}
			}
			if _, err := os.Stat(filepath.Join(runDir, rundir.CheckpointsDir, "step-00000002", rundir.ManifestName)); err != nil {
				t.Errorf("no final checkpoint: %v", err)
			}
		})
	}
	// The MCP server's processes are gone when the runs are: a stdio server lives as long as its run.
	if pids := processesOf(t, mcpServer); len(pids) > 0 {
		t.Errorf("MCP server processes %v outlive their runs", pids)
	}
}

// An outside part that cannot be reached stops the run before any step, with an error that
// names the part and its place in the configuration.
func TestTrainExternalPartUnreachable(t *testing.T) {
	model := tinyModel(t)
	cases := []struct{ name, yaml, want string }{
		{"mcp", "env: gsm8k\nmcp:\n  servers:\n    - name: gone\n      url: http://127.0.0.1:1/mcp\n  connect_timeout: 5s\n",
			"mcp.servers[0] (gone)"},
		{"mcp-command", "env: gsm8k\nmcp:\n  servers:\n    - name: nothing\n      command: /nonexistent/server\n",
			"mcp.servers[0] (nothing)"},
		{"openenv", "env: openenv\nopenenv:\n  urls: [http://127.0.0.1:1]\n  request_timeout: 5s\n  retries: -1\n",
			"127.0.0.1:1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			runDir, args := trainWithYAML(t, model, c.yaml)
			err := run(append(args, "--steps", "1"))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v; want an error naming %q", err, c.want)
			}
			if recs, _ := rundir.ReadMetrics(runDir); len(recs) > 0 && recs[len(recs)-1].Step > 0 {
				t.Errorf("a training step ran: %+v", recs)
			}
		})
	}
}

// An outside part that fails every episode of a step stops the run with its own error, not with
// the empty batch it left: on the console (the returned error) and in train.log, and the step's
// samples are written with each episode's error. When only some episodes fail, the step trains on
// the others and the log says how many failed and why.
func TestTrainExternalPartFails(t *testing.T) {
	model := tinyModel(t)
	root := filepath.Join("..", "..")
	failing, _ := envtest.StartURL(t, "python3", filepath.Join(root, "env", "openenv", "testdata", "server.py"), "--fail-steps")
	huge, _ := envtest.StartURL(t, "python3", filepath.Join(root, "env", "openenv", "testdata", "server.py"), "--step-reward=1.7e308")
	openenv := func(url string) string {
		return "env: openenv\nopenenv:\n  urls: [" + url + "]\n  action_field: message\n  observation_field: prompt\n  max_turns: 2\n"
	}
	reward := func(script string) string {
		return "env: gsm8k\nreward_computation:\n  type: command\n  name: judge\n  command: [python3, -c, \"" + script + "\"]\n  timeout: 30s\n"
	}
	for _, c := range []struct {
		name, yaml string
		want       []string
	}{
		{"openenv-500", openenv(failing), []string{"step 1: grpo: step 0: all 4 episodes failed: episode 0: env step: openenv: task ", "(and 3 more)",
			": step 1 at " + failing + ": step failed (code EXECUTION_ERROR)"}},
		{"openenv-huge-reward", openenv(huge), []string{"all 4 episodes failed: episode 0: env step: openenv: task ", "reward 1.7e+308: want a finite number of magnitude at most 1e+06"}},
		{"reward-exit-3", reward("import sys; sys.exit(3)"), []string{"all 4 episodes failed: ", `command reward "python3 -c`, "exit status 3"}},
		{"reward-text", reward("print('great answer')"), []string{"all 4 episodes failed: ", `the answer is not a number or a JSON object: "great answer"`}},
		{"reward-huge", reward("print(1.7e308)"), []string{"all 4 episodes failed: ", "reward judge: task ", "reward 1.7e+308: want a finite number"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			runDir, args := trainWithYAML(t, model, c.yaml)
			err := run(append(args, "--steps", "1", "--set", "eval.before=false"))
			if err == nil {
				t.Fatal("no error")
			}
			log, _ := os.ReadFile(filepath.Join(runDir, rundir.LogFile))
			samples, _ := os.ReadFile(filepath.Join(runDir, rundir.SamplesDir, "step-00000001.txt"))
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
				if !strings.Contains(string(log), w) {
					t.Errorf("train.log lacks %q:\n%s", w, log)
				}
			}
			if !strings.Contains(string(samples), c.want[len(c.want)-1]) {
				t.Errorf("the step's samples lack the error %q:\n%.2000s", c.want[len(c.want)-1], samples)
			}
		})
	}
	t.Run("dynamic-sampling", func(t *testing.T) { // every round fails: the failures are the news
		_, args := trainWithYAML(t, model, reward("import sys; sys.exit(3)")+"dapo:\n  dynamic_sampling: true\n")
		err := run(append(args, "--steps", "1", "--set", "eval.before=false"))
		for _, w := range []string{"dynamic sampling found no group with differing rewards in 4 rounds; 16 of 16 episodes failed: ", "exit status 3"} {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("error %v lacks %q", err, w)
			}
		}
	})
	t.Run("eval", func(t *testing.T) { // eval scores failed episodes 0 and says so
		dir := t.TempDir()
		cfg := filepath.Join(dir, "config.yaml")
		os.WriteFile(cfg, []byte(openenv(failing)), 0o644)
		code, stderr := runChild(t, time.Minute, "eval", "--model", model, "--config", cfg, "--threads", "1",
			"--set", "data.val_size=2", "--set", "rollout.max_new_tokens=12", "--set", "rollout.max_context_tokens=1024")
		if want := "mtgrpo eval: 2 of 2 episodes failed (scored 0): episode 0: env step: openenv: task "; code != 0 || !strings.Contains(stderr, want) {
			t.Errorf("eval: exit %d, stderr %s\nwant 0 and %q", code, stderr, want)
		}
	})
	t.Run("some-fail", func(t *testing.T) {
		runDir, args := trainWithYAML(t, model, reward("import json, sys; r = json.load(sys.stdin); sys.exit(3) if r['episode'] < 2 else print(1)"))
		if err := run(append(args, "--steps", "1", "--set", "eval.before=false", "--set", "train.export=false", "--set", "train.report=false")); err != nil {
			t.Fatal(err)
		}
		log, _ := os.ReadFile(filepath.Join(runDir, rundir.LogFile))
		for _, w := range []string{"step 1: 2 of 4 episodes failed (not trained)", "exit status 3", "(and 1 more)"} {
			if !strings.Contains(string(log), w) {
				t.Errorf("train.log lacks %q:\n%s", w, log)
			}
		}
	})
}

// trainWithYAML writes yaml as a configuration file and returns a run directory and the
// arguments of a short `mtgrpo train` with it.
func trainWithYAML(t *testing.T, model, yaml string) (runDir string, args []string) {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	runDir = filepath.Join(dir, "run")
	return runDir, append([]string{"train", "--config", cfg}, tinyRun(model, runDir)...)
}

// processesOf lists the pids of running processes whose executable is path.
func processesOf(t *testing.T, path string) []string {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []string
	for _, e := range ents {
		if exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); err == nil && exe == path {
			pids = append(pids, e.Name())
		}
	}
	return pids
}
