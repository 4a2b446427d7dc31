package grpo

import (
	"slices"
	"strings"
	"testing"

	"github.com/mtgrpo/mtgrpo/env"
	"github.com/mtgrpo/mtgrpo/rollout"
)

func TestMFU(t *testing.T) {
	// 6 FLOPs × 100 parameters × 1000 tokens × 2 epochs = 1.2e6 FLOPs in 2 s = 6e5 FLOP/s; peak 1e6.
	m := Metrics{"timing_s/update_actor": 2, "perf/total_num_tokens": 1000}
	m.mfu(100, 2, 1e6)
	if !near(m["perf/mfu"], 0.6, 1e-12) {
		t.Errorf("perf/mfu = %v, want 0.6", m["perf/mfu"])
	}
	n := Metrics{"timing_s/update_actor": 2, "perf/total_num_tokens": 1000}
	n.mfu(100, 1, 0)
	if _, ok := n["perf/mfu"]; ok {
		t.Error("perf/mfu reported without a known peak")
	}
	s := Metrics{}
	s.stat("x", []float64{1, 3})
	if s["x/mean"] != 2 || s["x/max"] != 3 || s["x/min"] != 1 {
		t.Errorf("stat: %v", s)
	}
}

// A tool task's episodes count their calls that ran as valid actions, a game's its moves, and
// the headline names appear once: train/ in a step, val/ (never val/train/) in an evaluation.
func TestRolloutStatsValidActionsAndHeadlines(t *testing.T) {
	turn := func(in env.TurnInfo) *rollout.Turn { return &rollout.Turn{Step: env.StepResult{Info: in}} }
	// Episode 1: 2 calls, 1 ran and 1 failed, then a final answer: 1 valid action.
	// Episode 2: 3 calls that ran over 2 turns: 3. Episode 3 (a game): 2 moves understood, 1 not: 2.
	trajs := []*rollout.Trajectory{
		{Turns: []*rollout.Turn{turn(env.TurnInfo{ToolCalls: 2, ToolSuccesses: 1, ToolErrors: 1}), turn(env.TurnInfo{Final: true})},
			Score: env.Score{Metrics: map[string]float64{"reward/accuracy": 1}}},
		{Turns: []*rollout.Turn{turn(env.TurnInfo{ToolCalls: 2, ToolSuccesses: 2}), turn(env.TurnInfo{ToolCalls: 1, ToolSuccesses: 1})},
			Score: env.Score{Metrics: map[string]float64{"reward/accuracy": 0}}},
		{Turns: []*rollout.Turn{turn(env.TurnInfo{ValidActions: 2, InvalidActions: 1})},
			Score: env.Score{Metrics: map[string]float64{"reward/accuracy": 0}}},
	}
	m := Metrics{}
	m.rolloutStats(trajs)
	m.headlines(trainHeadlines)
	// Valid actions 1, 3, 2: mean 2, max 3, min 1. Tool calls 2, 3, 0: mean 5/3. Accuracy 1/3.
	want := map[string]float64{"num_valid_actions/mean": 2, "num_valid_actions/max": 3, "num_valid_actions/min": 1,
		TrainNumValidActions: 2, "tool_call_counts/mean": 5.0 / 3, TrainAccuracy: 1.0 / 3, TrainTurnReward: 0}
	for k, v := range want {
		if got, ok := m[k]; !ok || !near(got, v, 1e-12) {
			t.Errorf("%s = %v (present %v), want %v", k, got, ok, v)
		}
	}
	if _, ok := m[TrainAccuracyStrict]; ok {
		t.Errorf("%s without a strict accuracy function", TrainAccuracyStrict)
	}
	for k := range m {
		if strings.HasPrefix(k, "train/") && !slices.Contains([]string{TrainAccuracy, TrainTurnReward, TrainNumValidActions}, k) {
			t.Errorf("unexpected headline %s", k)
		}
	}
}

// tool_success counts the episodes with a tool call that ran: here the first (its one call ran)
// and the second (its first call failed, its second ran), not the third (its call failed) nor
// the fourth (no call): 2 of 4.
func TestRolloutStatsToolSuccess(t *testing.T) {
	turn := func(in env.TurnInfo) *rollout.Turn { return &rollout.Turn{Step: env.StepResult{Info: in}} }
	answer := turn(env.TurnInfo{Final: true})
	trajs := []*rollout.Trajectory{
		{Turns: []*rollout.Turn{turn(env.TurnInfo{ToolCalls: 1, ToolSuccesses: 1}), answer}},
		{Turns: []*rollout.Turn{turn(env.TurnInfo{ToolCalls: 1, ToolErrors: 1}), turn(env.TurnInfo{ToolCalls: 1, ToolSuccesses: 1}), answer}},
		{Turns: []*rollout.Turn{turn(env.TurnInfo{ToolCalls: 1, ToolErrors: 1}), answer}},
		{Turns: []*rollout.Turn{answer}},
	}
	m := Metrics{}
	m.rolloutStats(trajs)
	want := map[string]float64{"tool_success/mean": 0.5, "tool_success/max": 1, "tool_success/min": 0, "tool_call_counts/mean": 1}
	for k, v := range want {
		if got, ok := m[k]; !ok || got != v {
			t.Errorf("%s = %v (present %v), want %v", k, got, ok, v)
		}
	}
}
