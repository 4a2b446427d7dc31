package env

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
)

// echoTool answers with its arguments: a stand-in for a tool from outside (MCP).
type echoTool struct{}

func (echoTool) Name() string                { return "echo" }
func (echoTool) Description() string         { return "Answer with the text." }
func (echoTool) Parameters() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }
func (echoTool) Call(_ context.Context, args json.RawMessage) (string, error) {
	return string(args), nil
}

// The rule in both directions: no tools and one turn is single-turn; tools or several turns
// make an environment multi-turn, and a single-turn task that gains tools from outside becomes
// multi-turn with DefaultToolTurns.
func TestMultiTurnDetection(t *testing.T) {
	for _, c := range []struct {
		tools, turns int
		want         bool
	}{{0, 0, false}, {0, 1, false}, {0, 2, true}, {1, 1, true}, {2, 4, true}} {
		if got := IsMultiTurn(c.tools, c.turns); got != c.want {
			t.Errorf("IsMultiTurn(%d tools, %d turns) = %v", c.tools, c.turns, got)
		}
	}
	ctx := context.Background()
	plain, err := Open("gsm8k", Config{})
	if err != nil {
		t.Fatal(err)
	}
	task := firstTask(t, plain, 1)
	e := plain.New()
	start, _ := e.Reset(ctx, task)
	if plain.MultiTurn || e.MultiTurn() || len(start.Tools) != 0 {
		t.Errorf("gsm8k: multi-turn %v/%v, tools %v", plain.MultiTurn, e.MultiTurn(), start.Tools)
	}
	// The same task with a tool from outside: listed, callable, and the episode may go on.
	withTool, err := Open("gsm8k", Config{ExtraTools: []Tool{echoTool{}}})
	if err != nil {
		t.Fatal(err)
	}
	e = withTool.New()
	start, _ = e.Reset(ctx, task)
	if !withTool.MultiTurn || !e.MultiTurn() || len(start.Tools) != 1 || start.Tools[0].Function.Name != "echo" ||
		start.Messages[0].Role != RoleSystem || !strings.Contains(start.Messages[0].Content, "call the echo tool") {
		t.Fatalf("gsm8k + echo: multi-turn %v/%v, start %+v", withTool.MultiTurn, e.MultiTurn(), start)
	}
	traj, _ := episode(t, e, task, func(turn int, _ []Message) string {
		if turn < 10 {
			return `<tool_call>{"name": "echo", "arguments": {"text": "hi"}}</tool_call>`
		}
		return "#### 1"
	})
	if len(traj.Turns) != DefaultToolTurns || traj.Turns[0].Result.Messages[0].Content != `{"text":"hi"}` {
		t.Errorf("%d turns (want %d), first result %+v", len(traj.Turns), DefaultToolTurns, traj.Turns[0].Result.Messages)
	}
	// Tools add to an environment's own; a name clash and a game with tools are errors.
	calc, err := Open("calc_mult", Config{ExtraTools: []Tool{echoTool{}}})
	if err != nil {
		t.Fatal(err)
	}
	start, _ = calc.New().Reset(ctx, firstTask(t, calc, 1))
	if len(start.Tools) != 2 || start.Tools[0].Function.Name != "calculator" || start.Tools[1].Function.Name != "echo" {
		t.Errorf("calc_mult + echo tools %+v", start.Tools)
	}
	if _, err := Open("calc_mult", Config{ExtraTools: []Tool{Calculator{}}}); err == nil || !strings.Contains(err.Error(), `tool "calculator" listed twice`) {
		t.Errorf("clash: %v", err)
	}
	if _, err := Open("frozenlake", Config{ExtraTools: []Tool{echoTool{}}}); err == nil || !strings.Contains(err.Error(), "a game takes no tools (got echo)") {
		t.Errorf("game with tools: %v", err)
	}
}

// The record of a calc_mult episode: the conversation with turn boundaries, tool calls and
// token counts, in the documented JSON shape.
func TestTrajectoryRecord(t *testing.T) {
	e, _ := Open("calc_mult", Config{})
	task := firstTask(t, e, 3)
	traj, _ := episode(t, e.New(), task, func(turn int, h []Message) string {
		if turn == 0 {
			return `Let me compute. <tool_call>{"name": "calculator", "arguments": {"expression": "2*3"}}</tool_call>`
		}
		return "#### " + lastContent(h)
	})
	r := NewTrajectoryRecord(traj)
	// Messages: system, user (2), turn 0: assistant + tool result (2), turn 1: assistant (1).
	if len(r.Messages) != 5 || r.Turns[0].Messages != [2]int{2, 4} || r.Turns[1].Messages != [2]int{4, 5} {
		t.Fatalf("%d messages, turns %+v", len(r.Messages), r.Turns)
	}
	call := r.Messages[2]
	if call.Role != RoleAssistant || call.Content != "Let me compute." || len(call.ToolCalls) != 1 ||
		call.ToolCalls[0].Function.Name != "calculator" || r.Messages[3].Role != RoleTool || r.Messages[3].Content != "6" {
		t.Errorf("turn 0 messages %+v %+v", call, r.Messages[3])
	}
	// The episode helper sets |c_t| = 100·len(history): 200 then 400; |o_t| = len(text).
	t0, t1 := traj.Turns[0], traj.Turns[1]
	if r.ContextTokens != 600 || r.MaxContextTokens != 400 || r.OutputTokens != len(t0.Assistant)+len(t1.Assistant) ||
		r.Turns[0].Info.ToolCalls != 1 || !r.Turns[1].Done || r.Turns[0].Text != t0.Assistant || r.GroundTruth != task.GroundTruth {
		t.Errorf("record %+v", r)
	}
	raw, _ := json.Marshal(r)
	var keys map[string]json.RawMessage
	json.Unmarshal(raw, &keys)
	for _, k := range []string{"task_id", "episode", "group", "ground_truth", "tools", "messages", "turns", "context_tokens",
		"output_tokens", "max_context_tokens"} {
		if _, ok := keys[k]; !ok {
			t.Errorf("JSON lacks %q: %s", k, raw)
		}
	}
	for _, k := range []string{"reward", "turn_rewards", "metrics"} {
		if _, ok := keys[k]; ok {
			t.Errorf("JSON of an unscored record has %q", k)
		}
	}
	var turn map[string]json.RawMessage
	json.Unmarshal(mustJSON(r.Turns[0]), &turn)
	if string(turn["messages"]) != "[2,4]" || !strings.Contains(string(turn["info"]), `"tool_calls":1`) {
		t.Errorf("turn JSON %s", mustJSON(r.Turns[0]))
	}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

type fixedReward struct {
	s   ExternalScore
	err error
}

func (f fixedReward) Score(context.Context, *Trajectory) (ExternalScore, error) { return f.s, f.err }

func TestRubricExternal(t *testing.T) {
	traj := &Trajectory{Task: Task{ID: "7"}, Turns: []Turn{{ContextTokens: 10}, {ContextTokens: 40}}}
	base := func(ext ...ExternalFunc) *Rubric {
		return &Rubric{Funcs: []RewardFunc{{Name: "len", Weight: 0.5, Fn: func(t *Trajectory) float64 { return 2 }}},
			Turn:     []TurnRewardFunc{{Name: "one", Weight: 1, Fn: func(*Trajectory, int) float64 { return 1 }}},
			External: ext}
	}
	judge := ExternalFunc{Name: "judge", Weight: 2, Reward: fixedReward{s: ExternalScore{Reward: 0.75,
		TurnRewards: []float64{0.5, 0.25}, Metrics: map[string]float64{"style": 3}}}}
	s, err := base(judge).Score(traj)
	if err != nil {
		t.Fatal(err)
	}
	// Reward = 0.5·2 + 2·0.75 = 2.5. Turn rewards = 1·1 + 2·(0.5, 0.25) = (2, 1.5). No turn has a
	// tool call, so R_turn sums both: 3.5.
	if s.Reward != 2.5 || !reflect.DeepEqual(s.TurnRewards, []float64{2, 1.5}) || s.TurnReward != 3.5 {
		t.Errorf("score %+v", s)
	}
	wantMetric(t, s, "reward/judge", 0.75)
	wantMetric(t, s, "reward/judge/style", 3)
	wantMetric(t, s, "turn_reward/judge", 0.375)
	// As a gate under the inverse rule: 0.75 < 1 fails it, so the reward is 0; at 1 it is 1/40.
	gated := judge
	gated.Gate = true
	r := base(gated)
	r.Rule = RuleInverse
	if s, _ := r.Score(traj); s.Reward != 0 {
		t.Errorf("failed gate: reward %v", s.Reward)
	}
	gated.Reward = fixedReward{s: ExternalScore{Reward: 1}}
	r = base(gated)
	r.Rule = RuleInverse
	if s, _ := r.Score(traj); s.Reward != 1.0/40 {
		t.Errorf("passed gate: reward %v", s.Reward)
	}
	// Failures name the function; a wrong number of turn rewards names the task.
	if _, err := base(ExternalFunc{Name: "judge", Reward: fixedReward{err: errors.New("HTTP 500")}}).Score(traj); err == nil ||
		err.Error() != "reward judge: HTTP 500" {
		t.Errorf("failure: %v", err)
	}
	bad := ExternalFunc{Name: "judge", Reward: fixedReward{s: ExternalScore{TurnRewards: []float64{1}}}}
	if _, err := base(bad).Score(traj); err == nil || err.Error() != "reward judge: task 7: turn_rewards has 1 values for 2 turns" {
		t.Errorf("turn rewards: %v", err)
	}
	// What the function answers is checked where it enters: finite, of magnitude at most 1e6.
	for _, c := range []struct {
		s    ExternalScore
		want string
	}{
		{ExternalScore{Reward: 1.7e308}, "reward judge: task 7: reward 1.7e+308: want a finite number of magnitude at most 1e+06"},
		{ExternalScore{Reward: math.NaN()}, "reward judge: task 7: reward NaN: want a finite number of magnitude at most 1e+06"},
		{ExternalScore{TurnRewards: []float64{0, math.Inf(-1)}}, "reward judge: task 7: turn_rewards[1] -Inf: want a finite number of magnitude at most 1e+06"},
		{ExternalScore{Metrics: map[string]float64{"len": 1e300}}, `reward judge: task 7: metrics["len"] 1e+300: want a finite number of magnitude at most 1e+06`},
	} {
		bad := ExternalFunc{Name: "judge", Reward: fixedReward{s: c.s}}
		if _, err := base(bad).Score(traj); err == nil || err.Error() != c.want {
			t.Errorf("%+v: %v\nwant %s", c.s, err, c.want)
		}
	}
	if got := fmt.Sprint(base(judge).Names()); got != "[judge len one]" {
		t.Errorf("names %s", got)
	}
}

func TestWithRubric(t *testing.T) {
	e, _ := Open("gsm8k", Config{})
	ext := ExternalFunc{Name: "judge", Weight: 1, Reward: fixedReward{s: ExternalScore{Reward: 0.5}}}
	w := e.WithRubric(func(r *Rubric) *Rubric {
		c := *r
		c.External = append(c.External, ext)
		return &c
	})
	task := firstTask(t, e, 1)
	_, s := episode(t, w.New(), task, say("#### "+task.GroundTruth))
	// MathRubric: strict accuracy (weight 1) = 1, plus the judge's 0.5.
	if s.Reward != 1.5 || w.Name != "gsm8k" {
		t.Errorf("reward %v name %q", s.Reward, w.Name)
	}
	if _, s := episode(t, e.New(), task, say("#### "+task.GroundTruth)); s.Reward != 1 {
		t.Errorf("the original environment changed: %v", s.Reward)
	}
}
