package env

import "testing"

func TestRubricHandWorked(t *testing.T) {
	pass := 1.0
	r := &Rubric{
		Funcs: []RewardFunc{
			{Name: "a", Weight: 0.5, Gate: true, Fn: func(*Trajectory) float64 { return pass }},
			{Name: "b", Weight: 2, Fn: func(*Trajectory) float64 { return 0.25 }},
		},
		Turn: []TurnRewardFunc{{Name: "idx", Weight: 2, Fn: func(_ *Trajectory, i int) float64 { return float64(i) }}},
	}
	traj := &Trajectory{Turns: []Turn{{ContextTokens: 50}, {ContextTokens: 200}, {ContextTokens: 120}}}
	traj.Turns[1].Result.Info.ToolCalls = 1
	// Sum: 0.5·1 + 2·0.25 = 1. Turn rewards 2·i = [0, 2, 4]; the first tool call is in turn 1,
	// so R_turn = 0 + 2 = 2; metric turn_reward/idx = mean(0, 1, 2) = 1.
	s, err := r.Score(traj)
	if err != nil || s.Reward != 1 || s.TurnReward != 2 || s.TurnRewards[2] != 4 {
		t.Fatalf("sum: %+v %v", s, err)
	}
	wantMetric(t, s, "reward/a", 1)
	wantMetric(t, s, "reward/b", 0.25)
	wantMetric(t, s, "turn_reward/idx", 1)
	wantMetric(t, s, "context/max_tokens", 200)
	// Inverse: gates pass → 1/max(50, 200, 120) = 1/200. Scaled, budget 400: 400/200 = 2.
	r.Rule = RuleInverse
	if s, _ := r.Score(traj); s.Reward != 0.005 {
		t.Fatalf("inverse %v", s.Reward)
	}
	r.Rule, r.Budget = RuleScaled, 400
	if s, _ := r.Score(traj); s.Reward != 2 {
		t.Fatalf("scaled %v", s.Reward)
	}
	pass = 0 // a gate fails → 0 whatever the length
	if s, _ := r.Score(traj); s.Reward != 0 {
		t.Fatalf("gate failed but reward %v", s.Reward)
	}
	// Without tool calls R_turn covers every turn: 0 + 2 + 4.
	traj.Turns[1].Result.Info.ToolCalls = 0
	if s, _ := r.Score(traj); s.TurnReward != 6 {
		t.Fatalf("no tool: %v", s.TurnReward)
	}
	// Configuration errors.
	r.Budget = 0
	if _, err := r.Score(traj); err == nil {
		t.Error("scaled without budget")
	}
	r.Rule = "bogus"
	if _, err := r.Score(traj); err == nil {
		t.Error("unknown rule")
	}
	r.Rule = RuleInverse
	if _, err := r.Score(&Trajectory{Turns: []Turn{{}}}); err == nil {
		t.Error("inverse without token counts")
	}
	// An episode whose first context did not fit has no turn and no answer: 0, not an error.
	for _, rule := range []RewardRule{RuleInverse, RuleScaled} {
		r.Rule, r.Budget = rule, 400
		if s, err := r.Score(&Trajectory{}); err != nil || s.Reward != 0 {
			t.Errorf("%s, no turns: %v, %v", rule, s.Reward, err)
		}
	}
	if got := r.Names(); len(got) != 3 || got[0] != "a" || got[2] != "idx" {
		t.Errorf("names %v", got)
	}
}

func TestTrajectoryStats(t *testing.T) {
	traj := &Trajectory{Turns: []Turn{
		{Result: StepResult{Info: TurnInfo{ToolCalls: 2, ToolSuccesses: 1, ToolErrors: 1, AnswerInToolResult: true}}},
		{Result: StepResult{Info: TurnInfo{ValidActions: 3, InvalidActions: 1, Truncated: true}}},
	}}
	s := traj.Stats()
	want := map[string]float64{"num_turns": 2, "tool_call_counts": 2, "tool_successes": 1, "tool_errors": 1,
		// num_valid_actions: 1 tool call that ran + 3 moves; num_invalid_actions: 1 failed call + 1 move.
		"num_valid_actions": 4, "num_invalid_actions": 2, "answer_in_tool_result": 1, "truncated": 1, "success": 0}
	for k, v := range want {
		if s[k] != v {
			t.Errorf("%s = %v, want %v", k, s[k], v)
		}
	}
	if len(s) != len(want) {
		t.Errorf("extra stats: %v", s)
	}
}
