package serve

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mtgrpo/mtgrpo/env"
	"github.com/mtgrpo/mtgrpo/env/agent"
	"github.com/mtgrpo/mtgrpo/env/sandbox"
	"github.com/mtgrpo/mtgrpo/rollout"
	"github.com/mtgrpo/mtgrpo/torch"
)

// nodeModules is third_party/npm/node_modules, where setup installs the openai package.
var nodeModules, _ = filepath.Abs("../../third_party/npm/node_modules")

// needNode skips when node or the openai package is missing (scripts/setup.sh installs both;
// CI runs setup).
func needNode(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed (scripts/setup.sh installs it)")
	}
	if _, err := os.Stat(filepath.Join(nodeModules, "openai", "package.json")); err != nil {
		t.Skip("third_party/npm/node_modules/openai is missing (run scripts/setup.sh)")
	}
}

// calcAgent compiles scripts/agents/calc_agent.ts with the TypeScript compiler (type-checked
// against the openai package) once, and returns the JavaScript's path.
var calcAgent = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "serve-agent-")
	if err != nil {
		return "", err
	}
	out, err := exec.Command("node", filepath.Join(nodeModules, "typescript", "bin", "tsc"), "-p", "../../scripts/agents",
		"--outDir", dir).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("tsc: %v: %s", err, out)
	}
	return filepath.Join(dir, "calc_agent.js"), nil
})

var numbers = regexp.MustCompile(`\d+`)

// multScript plays calc_mult as a good policy would: it calls the calculator on the question's
// numbers, then answers with the tool's result.
func multScript(ctx string) string {
	if i := strings.LastIndex(ctx, "<tool_response>\n"); i >= 0 {
		return "#### " + numbers.FindString(ctx[i:])
	}
	user := ctx[strings.LastIndex(ctx, "<|im_start|>user"):]
	n := numbers.FindAllString(user, -1)
	return fmt.Sprintf("<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"%s\"}}\n</tool_call>", strings.Join(n, " * "))
}

// recorder is the engine as the runner sees it, keeping every request and result: what the
// engine was given and what it sampled, against which the trained ids are checked.
type recorder struct {
	rollout.Generator
	mu      sync.Mutex
	results []*rollout.Result
}

func (r *recorder) Step() ([]*rollout.Result, error) {
	res, err := r.Generator.Step()
	r.mu.Lock()
	r.results = append(r.results, res...)
	r.mu.Unlock()
	return res, err
}

// agentRig is a server with an agent runner over a scripted model, listening on a real port.
type agentRig struct {
	agents *Agents
	rec    *recorder
	env    *env.Environment
	srv    *Server
	url    string
}

func newAgentRig(t *testing.T, cfg agent.Config) *agentRig {
	tok := tiny(t)
	m := scripted(t, tok, 12, 1024, multScript)
	cache, err := NewPrefixCache(m, 6)
	if err != nil {
		t.Fatal(err)
	}
	e, err := rollout.NewEngine(cache, tok, rollout.EngineConfig{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{Generator: e}
	srv, err := New(rec, cache, tok, m.StopTokenIDs(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: srv.Handler()}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	// The helper that make build puts in bin/ starts in milliseconds; this test binary, the
	// fallback, loads libtorch on every start.
	helper, _ := filepath.Abs("../../bin/" + sandbox.HelperName)
	if _, err := os.Stat(helper); err != nil {
		helper = ""
	}
	progs, err := sandbox.NewPrograms(sandbox.ProgramConfig{Helper: helper})
	if err != nil { // a helper left from another build: use this binary
		progs, err = sandbox.NewPrograms(sandbox.ProgramConfig{})
	}
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Service {
		cfg.Listen = ln.Addr().String()
	}
	a, err := NewAgents(srv, cache, progs, cfg, "http://"+ln.Addr().String()+"/v1")
	if err != nil {
		t.Fatal(err)
	}
	calc, err := env.Open("calc_mult", env.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return &agentRig{agents: a, rec: rec, env: calc, srv: srv, url: "http://" + ln.Addr().String() + "/v1"}
}

// play runs one batch of the given tasks, group copies each.
func (g *agentRig) play(t *testing.T, tasks []env.Task, group int, seed uint64) []*rollout.Trajectory {
	t.Helper()
	var trajs []*rollout.Trajectory
	onTorch(t, func() error {
		r, err := g.agents.Runner(g.rec, nil, rollout.DriverConfig{Sampling: rollout.Sampling{Temperature: 1, MaxNewTokens: 64}, Seed: seed})
		if err != nil {
			return err
		}
		var eps []rollout.Episode
		for i, task := range tasks {
			for range group {
				eps = append(eps, rollout.Episode{Env: g.env.New(), Task: task, Group: i})
			}
		}
		trajs, _, err = r.Run(context.Background(), eps)
		return err
	})
	return trajs
}

func onTorch(t *testing.T, fn func() error) {
	t.Helper()
	if err := torch.Run(fn); err != nil {
		t.Fatal(err)
	}
}

func multTasks(t *testing.T, n int) []env.Task {
	rows, err := env.Generate("calc_mult", env.Config{}, n, 5)
	if err != nil {
		t.Fatal(err)
	}
	return env.TasksFromRows(rows)
}

// The TypeScript agent of scripts/agents, on the official openai client, solves calc_mult tasks
// with its tool loop through the endpoint, one program per episode, all episodes served by the
// same engine. Every trained turn is exactly a call the engine served: its context the prompt the
// engine was given, its output the ids it sampled (zero mismatch), and the second call's context
// extends the first's ids. Streaming every call gives the same tokens.
func TestTypeScriptAgentTrainsTokenExact(t *testing.T) {
	needNode(t)
	js, err := calcAgent()
	if err != nil {
		t.Fatal(err)
	}
	cfg := agent.Config{Command: []string{"node", js}, Reward: agent.FromTask, Env: map[string]string{"NODE_PATH": nodeModules}}
	g := newAgentRig(t, cfg)
	tasks := multTasks(t, 3)
	plain := g.play(t, tasks, 2, 9)
	g.checkTokenExact(t, plain, 2)
	if st := g.agents.cache.Stats(); st.Hits != 6 {
		t.Errorf("KV cache: %+v, want a hit for each second call", st)
	}
	g.agents.cfg.Env["AGENT_STREAM"] = "1"
	streamed := g.play(t, tasks, 2, 9)
	for i, tr := range streamed {
		if tr.Err != nil || len(tr.Turns) != len(plain[i].Turns) {
			t.Fatalf("streamed episode %d: %v, %d turns", i, tr.Err, len(tr.Turns))
		}
		for k, tu := range tr.Turns {
			if !slices.Equal(tu.Output, plain[i].Turns[k].Output) || !slices.Equal(tu.Context, plain[i].Turns[k].Context) {
				t.Errorf("episode %d turn %d: streaming sampled other tokens", i, k)
			}
		}
	}
}

// checkTokenExact checks that every episode was played without failing, scored 1 in turns
// calls, one segment, and that every trained turn is exactly a call the engine served: its
// context the prompt the engine was given, its output the ids it sampled, its mask on the output,
// and each call's context extends the previous call's ids.
func (g *agentRig) checkTokenExact(t *testing.T, trajs []*rollout.Trajectory, turns int) {
	t.Helper()
	byPrompt := map[string]*rollout.Result{}
	for _, r := range g.rec.results {
		byPrompt[idsKey(r.Request.Prompt)] = r
	}
	for _, tr := range trajs {
		if tr.Err != nil {
			t.Fatalf("episode %d: %v", tr.Index, tr.Err)
		}
		if tr.Reward != 1 || len(tr.Turns) != turns || tr.Score.Metrics["agent/segments"] != 1 {
			t.Errorf("episode %d: reward %v, %d turns, metrics %v", tr.Index, tr.Reward, len(tr.Turns), tr.Score.Metrics)
		}
		for k, tu := range tr.Turns {
			res := byPrompt[idsKey(tu.Context)]
			if res == nil || !slices.Equal(tu.Output, res.Tokens) || !slices.Equal(tu.TemperedLogProbs, res.TemperedLogProbs) {
				t.Errorf("episode %d turn %d: trained ids differ from the engine's", tr.Index, k)
			}
			s := tu.Sample()
			for i, m := range s.Mask {
				if m != (i >= len(tu.Context)) {
					t.Fatalf("episode %d turn %d: mask wrong at %d", tr.Index, k, i)
				}
			}
			if k > 0 && !hasPrefix(tu.Context, append(slices.Clone(tr.Turns[k-1].Context), tr.Turns[k-1].Output...)) {
				t.Errorf("episode %d: call %d does not extend the previous call's ids", tr.Index, k)
			}
		}
	}
}

// Programs that fail fail their own episode, with the cause; the others of the batch train.
func TestFailingProgramsAreContained(t *testing.T) {
	needNode(t)
	js, err := calcAgent()
	if err != nil {
		t.Fatal(err)
	}
	const call = `const OpenAI = require("openai"); const c = new OpenAI();`
	cases := []struct {
		prog []string
		want string
	}{
		{[]string{"node", js}, ""},
		{[]string{"sh", "-c", "exit 3"}, "exited with status 3"},
		{[]string{"sleep", "60"}, "ran past its time limit"},
		{[]string{"sh", "-c", `echo '{"reward": 1}'`}, "made no chat completion call"},
		{[]string{"node", "-e", call + `c.chat.completions.create({model: "m", n: 2, messages: [{role: "user", content: "x"}]}).then(() => console.log('{"reward": 1}'))`}, "one choice per request"},
		{[]string{"node", "-e", call + `c.chat.completions.create({model: "m", messages: [{role: "user", content: "x"}]}).then(() => console.log('{"reward": NaN}'))`}, "not a JSON object"},
		{[]string{"node", "-e", call + `c.chat.completions.create({model: "m", messages: [{role: "user", content: "x"}]}).then(() => console.log("done"))`}, "reported no reward"},
	}
	g := newAgentRig(t, agent.Config{Command: []string{"true"}, Env: map[string]string{"NODE_PATH": nodeModules}})
	tasks := multTasks(t, 1)
	for _, c := range cases {
		g.agents.cfg.Command = c.prog
		// Time enough for node to start on a loaded machine; the sleeper is killed at 1 s.
		g.agents.cfg.Time = time.Minute
		if c.prog[0] == "sleep" {
			g.agents.cfg.Time = time.Second
		}
		g.agents.cfg.Reward = agent.FromProgram
		if c.want == "" {
			g.agents.cfg.Reward = agent.FromTask
		}
		trajs := g.play(t, tasks, 1, 1)
		tr := trajs[0]
		switch {
		case c.want == "" && (tr.Err != nil || tr.Reward != 1):
			t.Errorf("%v: %v, reward %v", c.prog, tr.Err, tr.Reward)
		case c.want != "" && (tr.Err == nil || !strings.Contains(tr.Err.Error(), c.want) || tr.End != rollout.EndError):
			t.Errorf("%v: %v, want %q", c.prog, tr.Err, c.want)
		}
	}
}

func idsKey(ids []int32) string { return fmt.Sprint(ids) }

// docs/agents.md shows the TypeScript agent the tests run, as it is.
func TestDocsShowTheTestedAgent(t *testing.T) {
	doc, err := os.ReadFile("../../docs/agents.md")
	if err != nil {
		t.Fatal(err)
	}
	ts, err := os.ReadFile("../../scripts/agents/calc_agent.ts")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "```typescript\n"+string(ts)+"```") {
		t.Error("docs/agents.md does not show scripts/agents/calc_agent.ts as it is")
	}
}

// The same agent on the OpenAI Agents SDK (scripts/agents/calc_agents_sdk.ts: an Agent with a
// calculator tool, the SDK's runner, chat completions, tracing off) runs offline against the
// endpoint and trains token-exact: every episode solved in two calls, each trained turn exactly
// what the engine was given and sampled.
func TestAgentsSDKAgentTrainsTokenExact(t *testing.T) {
	needNode(t)
	if _, err := os.Stat(filepath.Join(nodeModules, "@openai", "agents", "package.json")); err != nil {
		t.Skip("third_party/npm/node_modules/@openai/agents is missing (run scripts/setup.sh)")
	}
	js, err := calcAgent()
	if err != nil {
		t.Fatal(err)
	}
	sdk := filepath.Join(filepath.Dir(js), "calc_agents_sdk.js")
	g := newAgentRig(t, agent.Config{Command: []string{"node", sdk}, Reward: agent.FromTask, Env: map[string]string{"NODE_PATH": nodeModules}})
	trajs := g.play(t, multTasks(t, 2), 1, 4)
	if len(trajs) != 2 {
		t.Fatalf("%d trajectories, want 2", len(trajs))
	}
	g.checkTokenExact(t, trajs, 2)
}
