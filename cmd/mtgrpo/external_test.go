package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

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
