package grpo

import (
	"context"
	"strings"
	"testing"

	"github.com/mtgrpo/mtgrpo/env"
	"github.com/mtgrpo/mtgrpo/rollout"
)

// calc_mult's demonstrator, played through the driver with a condensed context, solves every
// task in two turns (a calculator call, then the answer), each output ending with <|im_end|>.
func TestDemonstrationsCalcMult(t *testing.T) {
	_, tok := tinyTokenizer(t)
	e, err := env.Open("calc_mult", env.Config{})
	if err != nil {
		t.Fatal(err)
	}
	tasks := tasksOf(t, e, 6, 3)
	demos, err := Demonstrations(context.Background(), tok, e, tasks, RolloutConfig{Condenser: rollout.LastN{N: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if len(demos) != len(tasks) {
		t.Fatalf("%d demonstrations of %d tasks", len(demos), len(tasks))
	}
	imEnd, _ := tok.TokenID("<|im_end|>")
	for _, tr := range demos {
		if tr.Reward != 1 || len(tr.Turns) != 2 || tr.Score.Metrics["reward/accuracy"] != 1 {
			t.Errorf("task %s: reward %v in %d turns (%v)", tr.Task.ID, tr.Reward, len(tr.Turns), tr.Score.Metrics)
		}
		for _, tu := range tr.Turns {
			if last := tu.Output[len(tu.Output)-1]; int(last) != imEnd {
				t.Errorf("task %s: an output ends with %d, not <|im_end|>", tr.Task.ID, last)
			}
		}
		if !strings.Contains(tr.Turns[0].Text, `"name": "calculator"`) || !strings.HasPrefix(tr.Turns[1].Text, "#### ") {
			t.Errorf("task %s: turns %q, %q", tr.Task.ID, tr.Turns[0].Text, tr.Turns[1].Text)
		}
	}
	noDemo := *e
	noDemo.Demonstrate = nil
	if _, err := Demonstrations(context.Background(), tok, &noDemo, tasks, RolloutConfig{}); err == nil {
		t.Error("an environment without a demonstrator gave demonstrations")
	}
}

// Every built-in environment's demonstrator, played through the driver under each condenser that
// keeps the last step, wins every task, so the warm-up keeps every demonstration.
func TestDemonstrationsEveryEnvironment(t *testing.T) {
	_, tok := tinyTokenizer(t)
	condensers := []rollout.Condenser{rollout.Full{}, rollout.LastN{N: 1}, rollout.TokenBudget{MaxTokens: 1500}}
	for _, name := range []string{"gsm8k", "countdown", "wiki_qa", "calc_mult", "frozenlake", "guess_number"} {
		e, err := env.Open(name, env.Config{DirectDemos: 0.3, Mult: env.MultTask{Factors: 3, Digits: 2}})
		if err != nil {
			t.Fatal(err)
		}
		tasks := tasksOf(t, e, 12, 5)
		for _, c := range condensers {
			demos, err := Demonstrations(context.Background(), tok, e, tasks, RolloutConfig{Condenser: c})
			if err != nil {
				t.Fatalf("%s, %s: %v", name, c.Name(), err)
			}
			if len(demos) != len(tasks) {
				t.Errorf("%s, %s: %d demonstrations of %d tasks", name, c.Name(), len(demos), len(tasks))
			}
		}
	}
}
