package env

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mtgrpo/mtgrpo/env/data"
	"github.com/mtgrpo/mtgrpo/env/sandbox"
)

var quickPython = sandbox.Config{Limits: sandbox.Limits{Wall: 2 * time.Second, CPUSeconds: 2}}

// gsm8k_python with real sandbox runs: the tool-using policy prints the answer with Python, the
// buggy one raises, the looping one never answers.
func TestGSM8KPythonPolicies(t *testing.T) {
	e, err := Open("gsm8k_python", Config{Python: quickPython})
	if err != nil {
		t.Skipf("no python3: %v", err)
	}
	task := firstTask(t, e, 2)
	truth := task.GroundTruth
	call := func(code string) string {
		return fmt.Sprintf("<tool_call>\n{\"name\": \"python\", \"arguments\": {\"code\": %q}}\n</tool_call>", code)
	}
	tool := func(turn int, h []Message) string {
		if turn == 0 {
			return call(fmt.Sprintf("x = %s\nprint(x * 1)", truth))
		}
		return "The program printed it.\n#### " + lastContent(h)
	}
	traj, s := episode(t, e.New(), task, tool)
	if info := traj.Turns[0].Result.Info; info.ToolSuccesses != 1 || !info.AnswerInToolResult {
		t.Fatalf("turn 0 %+v: %q", info, lastContentOf(traj, 0))
	}
	if s.Reward != 1 || s.TurnReward != 2 {
		t.Fatalf("score %+v", s)
	}
	// A traceback is a failed call: the model sees it; tool_success is 0.
	buggy := func(turn int, h []Message) string {
		if turn == 0 {
			return call("print(1/0)")
		}
		return "#### 0"
	}
	traj, s = episode(t, e.New(), task, buggy)
	out := lastContentOf(traj, 0)
	if info := traj.Turns[0].Result.Info; info.ToolErrors != 1 || !strings.Contains(out, "ZeroDivisionError") || !strings.HasPrefix(out, "Error: exit status 1") {
		t.Fatalf("traceback turn: %+v %q", info, out)
	}
	if s.TurnRewards[0] != 0 || s.Reward != 0 {
		t.Fatalf("score %+v", s)
	}
	// Looping: a tool call every turn → 4 turns, truncated, reward 0.
	traj, s = episode(t, e.New(), task, say(call("print(1)")))
	if len(traj.Turns) != 4 || !traj.Final().Truncated || s.Reward != 0 {
		t.Fatalf("loop: %d turns", len(traj.Turns))
	}
}

// wiki_qa: searching the question finds the passage with the answer (BM25 over the generated
// corpus), and answering with it scores 1.
func TestWikiQASearchPolicy(t *testing.T) {
	e := open(t, "wiki_qa", Config{})
	rows, _ := e.Generate(30, 11)
	found := 0
	for i, r := range rows {
		task := TaskFromRow(r, i)
		q := task.Prompt[0].Content
		searcher := func(turn int, h []Message) string {
			if turn == 0 {
				return fmt.Sprintf(`<tool_call>{"name": "search", "arguments": {"query": %q}}</tool_call>`, q)
			}
			return "<answer>" + task.GroundTruth + "</answer>"
		}
		traj, s := episode(t, e.New(), task, searcher)
		if s.Reward != 1 {
			t.Fatalf("%s: reward %v", q, s.Reward)
		}
		if traj.Turns[0].Result.Info.AnswerInToolResult {
			found++
		}
	}
	// Every question names its country, whose three passages rank on top; k = 3.
	if found < 27 {
		t.Fatalf("answer in the top 3 passages for %d of 30 questions", found)
	}
	task := TaskFromRow(rows[0], 0)
	_, s := episode(t, e.New(), task, say("<answer>Atlantis</answer>"))
	wantMetric(t, s, "reward/format", 1)
	if s.Reward != 0 {
		t.Fatal("wrong answer rewarded")
	}
	_, s = episode(t, e.New(), task, say(task.GroundTruth)) // right words, no tags
	if s.Reward != 0 {
		t.Fatal("untagged answer rewarded")
	}
}

func TestDataEnvironmentRubrics(t *testing.T) {
	e, err := Open("data", Config{Python: quickPython})
	if err != nil {
		t.Skipf("no python3: %v", err)
	}
	if _, err := e.Generate(1, 1); err == nil {
		t.Fatal("data env generated rows")
	}
	row := func(src, ability, truth string) Task {
		return TaskFromRow(data.Row{DataSource: src, Ability: ability, Prompt: []data.Message{{Role: "user", Content: "q"}}, RewardModel: data.RewardModel{GroundTruth: truth}}, 0)
	}
	cases := []struct {
		task   Task
		answer string
		want   float64
	}{
		{row("openai/gsm8k", "math", "72"), "#### 72", 1},
		{row("openai/gsm8k", "math", "72"), "72", 0},
		{row("mine", "code", ""), "```python\ndef f(x):\n    return x + 1\n```", 1},
		{row("mine", "code", ""), "```python\ndef f(x:\n    return x\n```", 0},
		{row("mine", "code", ""), "no code", 0},
		{row("trivia", "", "The Beatles"), "<answer>beatles</answer>", 1},
		{row("trivia", "", "The Beatles"), "Beatles!", 1},
		{row("trivia", "", "The Beatles"), "Stones", 0},
		{row("countdown", "math", `{"target": 5, "numbers": [2, 3]}`), "<answer>2+3</answer>", 1},
	}
	for _, c := range cases {
		_, s := episode(t, e.New(), c.task, say(c.answer))
		if s.Reward != c.want {
			t.Errorf("%s/%s %q: reward %v, want %v", c.task.DataSource, c.task.Ability, c.answer, s.Reward, c.want)
		}
	}
	if _, err := Open("data", Config{Data: DataEnv{Tools: []string{"shell"}}}); err == nil {
		t.Error("unknown tool accepted")
	}
	if _, err := Open("data", Config{Data: DataEnv{Domain: "poetry"}}); err == nil {
		t.Error("unknown domain accepted")
	}
}

func TestHeuristicChecker(t *testing.T) {
	h := HeuristicChecker{}
	for code, want := range map[string]bool{
		"print(1)\n":                         true,
		"def f():\n    return [1, (2, 3)]\n": true,
		"s = ')'  # ( comment\n":             true,
		"print((1)\n":                        false,
		"if x:\nprint(1)\n":                  false,
		"s = 'open\n":                        false,
	} {
		if got := h.Parses(context.Background(), code); got != want {
			t.Errorf("%q: %v", code, got)
		}
	}
}

// Every environment survives hostile policies: empty, garbage, huge, broken markup, looping.
// Episodes end within the turn limit and nothing panics or errors.
func TestEnvironmentsSurviveBadPolicies(t *testing.T) {
	garbage := []policy{
		say(""), say("\x00\xff\xfe garbage ����"), say(strings.Repeat("#### ", 5000)),
		say("<tool_call>"), say("</tool_call></tool_call><tool_call>{}</tool_call>"),
		say(`<|python_tag|>{"name": "python", "parameters": {"code": 5}}`),
		say(`{"name": "nothing"}`), say("<answer></answer>"), say("<answer>" + strings.Repeat("Left||", 100) + "</answer>"),
	}
	for _, name := range Names() {
		if name == "data" {
			continue
		}
		e, err := Open(name, Config{Python: quickPython})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		rows, _ := e.Generate(2, 1)
		for _, p := range garbage {
			traj, s := episode(t, e.New(), TaskFromRow(rows[0], 0), p)
			// Countdown gives 0.1 for any <answer> (TinyZero's format score); nothing more.
			if len(traj.Turns) > 7 || s.Reward > 0.1 || (name != "countdown" && s.Reward != 0) {
				t.Errorf("%s: %d turns, reward %v", name, len(traj.Turns), s.Reward)
			}
		}
		if got := e.New().MultiTurn(); got != e.MultiTurn {
			t.Errorf("%s: MultiTurn %v vs %v", name, got, e.MultiTurn)
		}
		if _, err := e.New().Step(context.Background(), "hi"); err == nil {
			t.Errorf("%s: Step before Reset accepted", name)
		}
	}
}

// A program that prints a traceback but exits 0 still counts as a failed call.
func TestPythonToolTracebackIsFailure(t *testing.T) {
	py, err := NewPythonTool(quickPython)
	if err != nil {
		t.Skipf("no python3: %v", err)
	}
	out, err := py.Call(context.Background(), []byte(`{"code": "import traceback\ntry:\n    1/0\nexcept Exception:\n    traceback.print_exc()\nprint('went on')"}`))
	if err == nil || !strings.Contains(err.Error(), "ZeroDivisionError") || !strings.Contains(err.Error(), "went on") {
		t.Fatalf("got %q, %v", out, err)
	}
	out, err = py.Call(context.Background(), []byte("{\"code\": \"```python\\nprint(6 * 7)\\n```\"}"))
	if err != nil || out != "42" {
		t.Fatalf("fenced code: %q, %v", out, err)
	}
	if _, err := py.Call(context.Background(), []byte(`{"cmd": "ls"}`)); err == nil || !strings.Contains(err.Error(), "bad arguments") {
		t.Fatalf("bad args: %v", err)
	}
}

// The model sees every way a call can fail as an error with the output so far: a run the
// memory cgroup killed, and a run stopped because the context ended (a turn's tool-time cap),
// which Call returns promptly.
func TestPythonToolFailuresAreErrors(t *testing.T) {
	_, err := describeRun(sandbox.Result{Stdout: "partial\n", ExitCode: -1, Signal: "killed", OutOfMemory: true}, sandbox.DefaultLimits)
	if err == nil || err.Error() != "killed: out of memory (all the run held, its files included, passed its limit)\npartial" {
		t.Fatalf("out of memory: %v", err)
	}
	py, err := NewPythonTool(sandbox.Config{Limits: sandbox.Limits{Wall: 30 * time.Second, CPUSeconds: 30}})
	if err != nil {
		t.Skipf("no python3: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	out, err := py.Call(ctx, []byte(`{"code": "import time\ntime.sleep(30)"}`))
	if !errors.Is(err, context.DeadlineExceeded) || out != "" || time.Since(start) > 3*time.Second {
		t.Fatalf("context ended: %q, %v after %v", out, err, time.Since(start))
	}
}

// A corpus written by WriteCorpus serves wiki_qa through Config.CorpusPath.
func TestCorpusFile(t *testing.T) {
	path := t.TempDir() + "/corpus.jsonl"
	docs := GenerateCorpus(DefaultCorpusSeed, DefaultCorpusSize)
	if len(docs) != 3*DefaultCorpusSize {
		t.Fatalf("%d docs", len(docs))
	}
	if err := WriteCorpus(path, docs[:3]); err != nil {
		t.Fatal(err)
	}
	e := open(t, "wiki_qa", Config{CorpusPath: path})
	st := e.New().(*ChatEnv).Tools
	msgs, _, _ := st.Run(context.Background(), 0, ParseToolCalls(`<tool_call>{"name": "search", "arguments": {"query": "`+docs[0].Title+` capital"}}</tool_call>`))
	if !strings.HasPrefix(msgs[0].Content, "[1] "+docs[0].Title+"\n"+docs[0].Text) {
		t.Fatalf("search over the file: %q", msgs[0].Content)
	}
	if _, err := Open("wiki_qa", Config{CorpusPath: path + ".missing"}); err == nil {
		t.Fatal("missing corpus accepted")
	}
}

// Config.Facts.Countries sizes the generated corpus: the default corpus stays as it was (its first
// country's passage is pinned), a larger one has distinct names throughout, wiki_qa's questions
// come from its countries, and its search finds each of them.
func TestCorpusCountries(t *testing.T) {
	def := GenerateCorpus(DefaultCorpusSeed, DefaultCorpusSize)
	if got := def[0].Text; got != defaultFirstPassage {
		t.Fatalf("default corpus changed: %q", got)
	}
	docs := GenerateCorpus(DefaultCorpusSeed, 1000)
	if len(docs) != 3000 {
		t.Fatalf("%d docs for 1000 countries", len(docs))
	}
	titles := map[string]bool{}
	for _, d := range docs {
		if titles[d.Title] {
			t.Fatalf("title %q twice", d.Title)
		}
		titles[d.Title] = true
	}
	e := open(t, "wiki_qa", Config{Facts: FactsCorpus{Countries: 1000}})
	rows, err := e.Generate(400, 1)
	if err != nil {
		t.Fatal(err)
	}
	countries := map[string]bool{}
	st := e.New().(*ChatEnv).Tools
	for i, r := range rows {
		var country string
		for _, w := range strings.Fields(strings.TrimSuffix(r.Prompt[0].Content, "?")) {
			if titles[w] {
				country = w
			}
		}
		if country == "" {
			t.Fatalf("row %d (%q) names no country of the corpus", i, r.Prompt[0].Content)
		}
		countries[country] = true
		if i < 20 {
			msgs, _, _ := st.Run(context.Background(), 0, ParseToolCalls(`<tool_call>{"name": "search", "arguments": {"query": "`+country+`"}}</tool_call>`))
			if !strings.Contains(msgs[0].Content, r.RewardModel.GroundTruth) {
				t.Fatalf("search for %s: %q lacks %q", country, msgs[0].Content, r.RewardModel.GroundTruth)
			}
		}
	}
	if len(countries) < 300 { // 400 draws over 1000 countries: about 330 distinct
		t.Fatalf("400 questions over %d countries", len(countries))
	}
	if err := (Config{Facts: FactsCorpus{Countries: MaxCorpusSize + 1}}).Validate(); err == nil || !strings.Contains(err.Error(), "countries") {
		t.Fatalf("countries past the maximum: %v", err)
	}
}

// defaultFirstPassage is the default corpus's first passage, as every earlier version wrote it.
const defaultFirstPassage = "Vellinzor is a country whose capital city is Omvel. Omvel is also its largest city."
