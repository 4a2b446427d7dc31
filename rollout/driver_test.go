package rollout

import (
	"context"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mtgrpo/mtgrpo/env"
)

func openEnv(t *testing.T, name string, cfg env.Config) *env.Environment {
	t.Helper()
	e, err := env.Open(name, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func tasks(t *testing.T, e *env.Environment, n int, seed int64) []env.Task {
	t.Helper()
	rows, err := e.Generate(n, seed)
	if err != nil {
		t.Fatal(err)
	}
	return env.TasksFromRows(rows)
}

var (
	questionRe = regexp.MustCompile(`What is (\d+) \* (\d+)\?`)
	responseRe = regexp.MustCompile(`<tool_response>\n(\d+)\n</tool_response>`)
)

// calcPolicy uses the calculator on the first turn and answers with its result on the second.
func calcPolicy(prompt string, _ int) (string, FinishReason) {
	if m := responseRe.FindStringSubmatch(prompt); m != nil {
		return "#### " + m[1], ""
	}
	m := questionRe.FindStringSubmatch(prompt)
	return fmt.Sprintf("<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"%s * %s\"}}\n</tool_call>", m[1], m[2]), ""
}

func scriptedGen(t *testing.T, policy func(string, int) (string, FinishReason)) *Scripted {
	tok := tiny(t)
	eos, _ := tok.TokenID("<|im_end|>")
	return &Scripted{Tok: tok, Policy: policy, EOS: int32(eos)}
}

func runEpisodes(t *testing.T, gen Generator, cfg DriverConfig, e *env.Environment, ts []env.Task, group int) []*Trajectory {
	t.Helper()
	d, err := NewDriver(gen, tiny(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var eps []Episode
	for i, task := range ts {
		for range group {
			eps = append(eps, Episode{Env: e.New(), Task: task, Group: i})
		}
	}
	trajs, prof, err := d.Run(context.Background(), eps)
	if err != nil {
		t.Fatal(err)
	}
	if prof.Episodes != len(eps) || prof.EndDone+prof.EndMaxTurns+prof.EndContextBudget+prof.EndError != len(eps) {
		t.Errorf("profile %+v", prof)
	}
	return trajs
}

// calc_mult under the scripted tool policy, 2 tasks × a group of 2, full history. Each episode
// has two action turns: c_1 = the task rendered with the calculator's spec, o_1 = the tool call;
// c_2 = c_1's messages + the assistant's call + the tool's result. Reward (inverse context rule) =
// 1/|c_2|; turn rewards 2 (tool success + answer in the result) and 0. The copies of a task share
// the first request (N = 2).
func TestDriverScriptedCalcMult(t *testing.T) {
	e := openEnv(t, "calc_mult", env.Config{RewardRule: env.RuleInverse})
	gen := scriptedGen(t, calcPolicy)
	trajs := runEpisodes(t, gen, DriverConfig{Sampling: Sampling{MaxNewTokens: 64}}, e, tasks(t, e, 2, 5), 2)
	if gen.Requests[0].N != 2 || gen.Requests[1].N != 2 || len(gen.Requests) != 2+4 {
		t.Errorf("requests: first N %d %d, %d in all; want 2 2 and 6", gen.Requests[0].N, gen.Requests[1].N, len(gen.Requests))
	}
	tok := tiny(t)
	for i, tr := range trajs {
		if tr.Index != i || tr.Group != i/2 || tr.End != EndDone || tr.Err != nil || len(tr.Turns) != 2 || tr.ActionTurns != 2 {
			t.Fatalf("trajectory %d: index %d group %d end %s err %v turns %d", i, tr.Index, tr.Group, tr.End, tr.Err, len(tr.Turns))
		}
		t0, t1 := tr.Turns[0], tr.Turns[1]
		// c_1 is the rendering of what Reset returned, with the tool listed.
		start, _ := e.New().Reset(context.Background(), tr.Task)
		rend, _ := NewRenderer(tok, start.Tools, nil)
		c1, _ := rend.IDs(start.Messages)
		if !slices.Equal(t0.Context, c1) {
			t.Errorf("trajectory %d: c_1 is not the rendered task", i)
		}
		c2, _ := rend.IDs(append(append(append([]env.Message(nil), start.Messages...), t0.Step.Assistant), t0.Step.Messages...))
		if !slices.Equal(t1.Context, c2) {
			t.Errorf("trajectory %d: c_2 is not task + call + result", i)
		}
		eos, _ := tok.TokenID("<|im_end|>")
		for k, tu := range tr.Turns {
			mask := tu.Mask()
			for j, m := range mask {
				if m != (j >= len(tu.Context)) {
					t.Fatalf("trajectory %d turn %d: mask[%d] = %v (context %d tokens)", i, k, j, m, len(tu.Context))
				}
			}
			if tu.Output[len(tu.Output)-1] != int32(eos) || len(tu.LogProbs) != len(tu.Output) {
				t.Errorf("turn %d output does not end with <|im_end|> or lacks log-probs", k)
			}
			if !reflect.DeepEqual(tu.Spans, []Span{{0, len(tu.Context), "context", false},
				{len(tu.Context), len(tu.Context) + len(tu.Output), "output", true}}) {
				t.Errorf("spans %+v", tu.Spans)
			}
		}
		if t0.Step.Info.ToolSuccesses != 1 || !t1.Step.Done {
			t.Errorf("trajectory %d: steps %+v / %+v", i, t0.Step.Info, t1.Step)
		}
		if tr.MaxContextTokens != len(t1.Context) || !near(tr.Reward, 1/float64(len(t1.Context)), 1e-12) {
			t.Errorf("trajectory %d: max context %d, reward %v; want %d and 1/%d", i, tr.MaxContextTokens, tr.Reward, len(t1.Context), len(t1.Context))
		}
		if t0.Reward != 2 || t1.Reward != 0 || tr.Score.TurnReward != 2 {
			t.Errorf("turn rewards %v %v (R_turn %v), want 2 0 (2)", t0.Reward, t1.Reward, tr.Score.TurnReward)
		}
	}
}

// shuffled delivers each step's results in reverse order: samples of one request finish in any
// order in the engine.
type shuffled struct{ *Scripted }

func (s shuffled) Step() ([]*Result, error) {
	res, err := s.Scripted.Step()
	for i, j := 0, len(res)-1; i < j; i, j = i+1, j-1 {
		res[i], res[j] = res[j], res[i]
	}
	return res, err
}

// Samples of a shared first request reach their own episodes whatever order they finish in; the
// debug writer gets a line per turn and the batch profile.
func TestDriverOutOfOrderSamplesAndDebug(t *testing.T) {
	e := openEnv(t, "calc_mult", env.Config{})
	var buf strings.Builder
	gen := shuffled{scriptedGen(t, calcPolicy)}
	trajs := runEpisodes(t, gen, DriverConfig{Debug: &buf}, e, tasks(t, e, 1, 2), 3)
	for i, tr := range trajs {
		if tr.End != EndDone || tr.ActionTurns != 2 || tr.Reward != 1 {
			t.Errorf("trajectory %d: end %s (%v), %d turns, reward %v", i, tr.End, tr.Err, tr.ActionTurns, tr.Reward)
		}
	}
	for _, want := range []string{"episode 2 turn 2: context", "rollout: 3 episodes, 6 action turns", "env + tools"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("debug output lacks %q:\n%s", want, buf.String())
		}
	}
}

var answerRe = regexp.MustCompile(`<answer>(\d+)</answer>`)

// stepPolicy guesses 50 first, then moves by one from the last guess in the context, following
// the last "Higher."/"Lower." feedback.
func stepPolicy(prompt string, _ int) (string, FinishReason) {
	guesses := answerRe.FindAllStringSubmatch(prompt, -1)
	if len(guesses) == 0 {
		return "<answer>50</answer>", ""
	}
	var g int
	fmt.Sscan(guesses[len(guesses)-1][1], &g)
	if strings.LastIndex(prompt, "Higher.") > strings.LastIndex(prompt, "Lower.") {
		return fmt.Sprintf("<answer>%d</answer>", g+1), ""
	}
	return fmt.Sprintf("<answer>%d</answer>", g-1), ""
}

func guessTask(secret int) env.Task {
	return env.Task{ID: "g", Prompt: []env.Message{env.Text(env.RoleUser, "Guess my number.")}, GroundTruth: fmt.Sprint(secret)}
}

// guess_number with secret 52 and keep_last_n_steps 1: guesses 50, 51, 52 (three turns, reward
// 1). Turn 1's context is the task alone, turns 2 and 3 the task plus the previous step only.
func TestDriverLastNGuessNumber(t *testing.T) {
	e := openEnv(t, "guess_number", env.Config{})
	trajs := runEpisodes(t, scriptedGen(t, stepPolicy), DriverConfig{Condenser: LastN{N: 1}}, e, []env.Task{guessTask(52)}, 1)
	tr := trajs[0]
	if len(tr.Turns) != 3 || tr.Reward != 1 || tr.End != EndDone {
		t.Fatalf("%d turns, reward %v, end %s", len(tr.Turns), tr.Reward, tr.End)
	}
	task := len(tr.Turns[0].Messages)
	for k, tu := range tr.Turns[1:] {
		if len(tu.Messages) != task+2 || tu.Messages[task].Content != tr.Turns[k].Step.Assistant.Content {
			t.Errorf("turn %d: context messages %+v", k+1, tu.Messages)
		}
	}
	if len(tr.Turns[1].Context) != len(tr.Turns[2].Context) {
		t.Error("last-1 contexts of turns 2 and 3 differ in length")
	}
}

// The context budget ends an episode whose next context does not fit; MaxTurns ends it after so
// many action turns.
func TestDriverBudgetAndMaxTurns(t *testing.T) {
	e := openEnv(t, "guess_number", env.Config{})
	gen := scriptedGen(t, stepPolicy)
	tok := tiny(t)
	rend, _ := NewRenderer(tok, nil, nil)
	start, _ := e.New().Reset(context.Background(), guessTask(90))
	c1, _ := rend.IDs(start.Messages)
	tr := runEpisodes(t, gen, DriverConfig{MaxContextTokens: len(c1) + 5}, e, []env.Task{guessTask(90)}, 1)[0]
	if tr.End != EndContextBudget || len(tr.Turns) != 1 || tr.Reward != 0 {
		t.Errorf("budget: end %s, %d turns, reward %v", tr.End, len(tr.Turns), tr.Reward)
	}
	tr = runEpisodes(t, gen, DriverConfig{MaxTurns: 2}, e, []env.Task{guessTask(90)}, 1)[0]
	if tr.End != EndMaxTurns || len(tr.Turns) != 2 {
		t.Errorf("max turns: end %s, %d turns", tr.End, len(tr.Turns))
	}
}

// The summary condenser inserts summary turns: after two guesses (MaxSteps 1) the model is asked
// for a summary, which replaces both steps. A summary turn is recorded with its own context and
// output; its tokens are trained only with Train. Outputs cut by length are masked with
// MaskTruncated.
func TestDriverSummaryTurns(t *testing.T) {
	e := openEnv(t, "guess_number", env.Config{})
	policy := func(prompt string, k int) (string, FinishReason) {
		if strings.Contains(prompt, DefaultSummaryInstruction) {
			return "Guessed 50 then 51; both too low.", FinishLength
		}
		if strings.Contains(prompt, "Guessed 50 then 51") {
			return "<answer>52</answer>", ""
		}
		return stepPolicy(prompt, k)
	}
	for _, train := range []bool{false, true} {
		cfg := DriverConfig{Condenser: Summary{MaxSteps: 1, Train: train}}
		tr := runEpisodes(t, scriptedGen(t, policy), cfg, e, []env.Task{guessTask(52)}, 1)[0]
		kinds := []TurnKind{}
		for _, tu := range tr.Turns {
			kinds = append(kinds, tu.Kind)
		}
		if !reflect.DeepEqual(kinds, []TurnKind{KindAction, KindAction, KindSummary, KindAction}) || tr.Reward != 1 || tr.ActionTurns != 3 {
			t.Fatalf("train %v: turns %v, reward %v", train, kinds, tr.Reward)
		}
		s := tr.Turns[2]
		if s.Trained() != train || s.Finish != FinishLength {
			t.Errorf("train %v: summary trained %v", train, s.Trained())
		}
		last := tr.Turns[3].Messages
		if got := last[len(last)-1].Content; got != DefaultSummaryHeader+"Guessed 50 then 51; both too low." {
			t.Errorf("context after the summary ends with %q", got)
		}
		// Max context counts action turns only (the summary prompt holds the full history).
		if tr.MaxContextTokens != max(len(tr.Turns[0].Context), len(tr.Turns[1].Context), len(tr.Turns[3].Context)) {
			t.Errorf("max context %d", tr.MaxContextTokens)
		}
	}
	trunc := func(prompt string, k int) (string, FinishReason) {
		t, _ := stepPolicy(prompt, k)
		return t, FinishLength
	}
	tr := runEpisodes(t, scriptedGen(t, trunc), DriverConfig{MaskTruncated: true, MaxTurns: 1}, e, []env.Task{guessTask(52)}, 1)[0]
	if tr.Turns[0].Trained() {
		t.Error("a truncated output was trained under MaskTruncated")
	}
}

// A cancelled context aborts the batch with its error.
func TestDriverCancel(t *testing.T) {
	e := openEnv(t, "guess_number", env.Config{})
	d, _ := NewDriver(scriptedGen(t, stepPolicy), tiny(t), DriverConfig{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := d.Run(ctx, []Episode{{Env: e.New(), Task: guessTask(10)}})
	if err == nil {
		t.Error("cancelled run returned no error")
	}
}

// panicky is an environment whose Step or reward function panics (a bug in user code).
type panicky struct {
	env.Env
	inStep bool
}

func (p panicky) Step(ctx context.Context, text string) (env.StepResult, error) {
	if p.inStep {
		panic("index out of range [3] with length 3")
	}
	return p.Env.Step(ctx, text)
}

func (p panicky) Rubric() *env.Rubric {
	if p.inStep {
		return p.Env.Rubric()
	}
	return &env.Rubric{Funcs: []env.RewardFunc{{Name: "boom", Weight: 1, Fn: func(*env.Trajectory) float64 { panic("boom") }}}}
}

// A panic in an environment's Step or in a reward function ends that episode with EndError naming
// it; the other episodes of the batch finish normally and Run returns no error.
func TestDriverEnvPanicEndsOnlyItsEpisode(t *testing.T) {
	e := openEnv(t, "calc_mult", env.Config{})
	ts := tasks(t, e, 3, 5)
	d, err := NewDriver(scriptedGen(t, calcPolicy), tiny(t), DriverConfig{Sampling: Sampling{MaxNewTokens: 64}})
	if err != nil {
		t.Fatal(err)
	}
	eps := []Episode{{Env: panicky{e.New(), true}, Task: ts[0]}, {Env: e.New(), Task: ts[1], Group: 1},
		{Env: panicky{e.New(), false}, Task: ts[2], Group: 2}}
	trajs, prof, err := d.Run(context.Background(), eps)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"env step panicked: index out of range", "", "reward panicked: boom"} {
		tr := trajs[i]
		switch {
		case want == "" && (tr.End != EndDone || tr.Err != nil):
			t.Errorf("episode %d: end %s, err %v; want done", i, tr.End, tr.Err)
		case want != "" && (tr.End != EndError || tr.Err == nil || !strings.Contains(tr.Err.Error(), want)):
			t.Errorf("episode %d: end %s, err %v; want an error containing %q", i, tr.End, tr.Err, want)
		}
	}
	if prof.EndError != 2 || prof.EndDone != 1 {
		t.Errorf("profile: %d errors, %d done; want 2 and 1", prof.EndError, prof.EndDone)
	}
}
