package env

import (
	"context"
	"strings"
	"testing"
)

// A policy writes the assistant's message for a turn, seeing the conversation so far.
type policy func(turn int, history []Message) string

// episode runs one episode to the end (at most 50 turns) like the rollout does and scores it.
// Each turn's context is counted as 100 tokens per message so far: hand-checkable numbers for
// the context rules.
func episode(t *testing.T, e Env, task Task, p policy) (*Trajectory, Score) {
	t.Helper()
	ctx := context.Background()
	start, err := e.Reset(ctx, task)
	if err != nil {
		t.Fatalf("Reset: %v", err)
	}
	traj := &Trajectory{Task: task, Start: start}
	history := append([]Message(nil), start.Messages...)
	for turn := 0; turn < 50; turn++ {
		text := p(turn, history)
		res, err := e.Step(ctx, text)
		if err != nil {
			t.Fatalf("Step %d: %v", turn, err)
		}
		traj.Turns = append(traj.Turns, Turn{Assistant: text, Result: res, ContextTokens: 100 * len(history), OutputTokens: len(text)})
		history = append(history, res.Assistant)
		history = append(history, res.Messages...)
		if res.Done {
			if _, err := e.Step(ctx, "again"); err == nil {
				t.Fatal("Step after Done did not fail")
			}
			score, err := e.Rubric().Score(traj)
			if err != nil {
				t.Fatalf("Score: %v", err)
			}
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			return traj, score
		}
	}
	t.Fatal("episode did not end in 50 turns")
	return nil, Score{}
}

func open(t *testing.T, name string, cfg Config) *Environment {
	t.Helper()
	e, err := Open(name, cfg)
	if err != nil {
		t.Fatalf("Open %s: %v", name, err)
	}
	return e
}

func firstTask(t *testing.T, e *Environment, seed int64) Task {
	t.Helper()
	rows, err := e.Generate(1, seed)
	if err != nil {
		t.Fatal(err)
	}
	return TaskFromRow(rows[0], 0)
}

func say(s string) policy { return func(int, []Message) string { return s } }

// lastContent is the last message's content (what the environment said last).
func lastContent(h []Message) string { return h[len(h)-1].Content }

func wantMetric(t *testing.T, s Score, name string, want float64) {
	t.Helper()
	got, ok := s.Metrics[name]
	if !ok {
		t.Fatalf("metric %s missing from %v", name, s.Metrics)
	}
	if diff := got - want; diff > 1e-9 || diff < -1e-9 {
		t.Errorf("%s = %v, want %v", name, got, want)
	}
}

func contains(t *testing.T, s, sub string) {
	t.Helper()
	if !strings.Contains(s, sub) {
		t.Errorf("%q does not contain %q", s, sub)
	}
}
