package grpo

import (
	"context"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/mtgrpo/mtgrpo/env"
	"github.com/mtgrpo/mtgrpo/model"
	"github.com/mtgrpo/mtgrpo/rollout"
	"github.com/mtgrpo/mtgrpo/tokenizer"
	"github.com/mtgrpo/mtgrpo/torch"
)

// testDType: MTGRPO_TEST_DTYPE=bfloat16 runs the trainer tests with bf16 weights (tolerances
// widen accordingly); the default is float32.
var testDType = func() string {
	if d := os.Getenv("MTGRPO_TEST_DTYPE"); d != "" {
		return d
	}
	return "float32"
}()

// byteEnv is a synthetic environment for the trainer's mechanics: Turns turns, the second answered
// by a "tool" message (so MT-GRPO sees a tool result), reward = Reward(text of all turns).
type byteEnv struct {
	turns  int
	reward func(texts []string) float64
	turn   int
	texts  []string
	rubric *env.Rubric
}

func (e *byteEnv) Reset(context.Context, env.Task) (env.Start, error) {
	e.turn, e.texts = 0, nil
	return env.Start{Messages: []env.Message{env.Text(env.RoleUser, "Say something.")}}, nil
}

func (e *byteEnv) Step(_ context.Context, text string) (env.StepResult, error) {
	e.turn++
	e.texts = append(e.texts, text)
	res := env.StepResult{Assistant: env.Text(env.RoleAssistant, text), Done: e.turn >= e.turns}
	if !res.Done {
		res.Messages = []env.Message{{Role: "tool", Content: "ok"}}
		res.Info.ToolCalls, res.Info.ToolSuccesses = 1, 1
	}
	return res, nil
}

func (e *byteEnv) MultiTurn() bool     { return e.turns > 1 }
func (e *byteEnv) Rubric() *env.Rubric { return e.rubric }
func (e *byteEnv) Close() error        { return nil }

// byteSum scores texts by the sum of their bytes, folded into [0, 1): a reward that differs
// between almost any two samples, so every group has signal.
func byteSum(texts []string) float64 {
	s := 0
	for _, t := range texts {
		for _, c := range []byte(t) {
			s += int(c)
		}
	}
	return float64(s%97) / 97
}

func newByteEnv(turns int, reward func([]string) float64) *env.Environment {
	return &env.Environment{Name: "bytes", MultiTurn: turns > 1, New: func() env.Env {
		e := &byteEnv{turns: turns, reward: reward}
		e.rubric = &env.Rubric{
			Funcs: []env.RewardFunc{{Name: "bytes", Weight: 1, Fn: func(*env.Trajectory) float64 { return e.reward(e.texts) }}},
			Turn: []env.TurnRewardFunc{{Name: "bytes", Weight: 1, Fn: func(t *env.Trajectory, i int) float64 {
				return byteSum([]string{t.Turns[i].Assistant})
			}}},
		}
		return e
	}}
}

// run is a trainer over a fresh tiny model, with everything it needs closed at the end.
type run struct {
	t   *testing.T
	dir string
	tok *tokenizer.Tokenizer
	m   *model.Model
	tr  *Trainer
	be  *rollout.ModelBackend
}

// smallConfig is a fast configuration: 2 tasks × 4 samples, 12 new tokens per turn.
func smallConfig() Config {
	c := Defaults()
	c.Rollout.Tasks, c.Rollout.GroupSize = 2, 4
	c.Rollout.Sampling.MaxNewTokens = 12
	c.Optim.LR = 1e-3
	c.Seed = 7
	return c
}

// newRun loads the tiny model of dir in the test dtype and makes a trainer (with opts); call on
// the torch thread.
func newRun(t *testing.T, dir string, e *env.Environment, cfg Config, ms func(*Models), opts ...Option) *run {
	t.Helper()
	r := &run{t: t, dir: dir}
	var err error
	if r.tok, err = tokenizer.Load(dir); err != nil {
		t.Fatal(err)
	}
	if r.m, err = model.Load(dir, model.Options{DType: testDType}); err != nil {
		t.Fatal(err)
	}
	if r.be, err = rollout.NewModelBackend(r.m, cfg.Rollout.Tasks*cfg.Rollout.GroupSize, 512, r.tok.EOSIDs()...); err != nil {
		t.Fatal(err)
	}
	eng, err := rollout.NewEngine(r.be, r.tok, rollout.EngineConfig{Seed: cfg.Seed})
	if err != nil {
		t.Fatal(err)
	}
	models := Models{Policy: r.m}
	if ms != nil {
		ms(&models)
	}
	if r.tr, err = New(models, eng, r.tok, e, cfg, opts...); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *run) close() {
	r.tr.Close()
	r.be.Close()
	r.m.Close()
}

// weights copies every parameter to the host, by name.
func weights(m *model.Model) map[string][]float32 {
	out := map[string][]float32{}
	for _, p := range m.Parameters() {
		out[p.Name] = p.Tensor.ToDType(torch.Float32).Float32s()
	}
	return out
}

// maxDiff is max |a−b| over two weight maps, and the parameter where it is.
func maxDiff(a, b map[string][]float32) (float64, string) {
	d, where := 0.0, ""
	for k, x := range a {
		for i := range x {
			if v := math.Abs(float64(x[i] - b[k][i])); v > d || math.IsNaN(v) {
				d, where = v, fmt.Sprintf("%s[%d]", k, i)
			}
		}
	}
	return d, where
}

func sayTasks(n int) []env.Task {
	out := make([]env.Task, n)
	for i := range out {
		out[i] = env.Task{ID: fmt.Sprint(i), Prompt: []env.Message{env.Text(env.RoleUser, "Say something.")}}
	}
	return out
}

// eval plays tasks with grpo.Evaluate on the run's policy, with the trainer's rollout settings
// (condenser, turn and context limits, open-episode bound) and its Dist, as the CLI's evaluation
// configuration carries them.
func (r *run) eval(ctx context.Context, tasks []env.Task, c EvalConfig) (Metrics, []*rollout.Trajectory, error) {
	c.Rollout, c.Dist = r.tr.cfg.Rollout, r.tr.dist
	return Evaluate(ctx, r.tr.gen, r.tr.tok, r.tr.envs, tasks, c)
}

// toolEnv is a two-turn episode whose first turn is a tool call: the call runs (tool message
// "ok", ToolSuccesses 1) when the turn's text holds an ASCII digit and fails otherwise ("error: no
// number", ToolErrors 1). The turn reward (toolRubric) is 1 for a call that ran, 0 else; the
// trajectory reward is upperShare of the second turn alone, so it says nothing about the call.
type toolEnv struct{ turn int }

func (e *toolEnv) Reset(context.Context, env.Task) (env.Start, error) {
	e.turn = 0
	return env.Start{Messages: []env.Message{env.Text(env.RoleUser, "Say something.")}}, nil
}

func (e *toolEnv) Step(_ context.Context, text string) (env.StepResult, error) {
	e.turn++
	res := env.StepResult{Assistant: env.Text(env.RoleAssistant, text), Done: e.turn >= 2}
	if e.turn == 1 {
		res.Info.ToolCalls = 1
		msg := "error: no number"
		if hasDigit(text) {
			msg, res.Info.ToolSuccesses = "ok", 1
		} else {
			res.Info.ToolErrors = 1
		}
		res.Messages = []env.Message{{Role: env.RoleTool, Content: msg}}
	}
	return res, nil
}

func (e *toolEnv) MultiTurn() bool     { return true }
func (e *toolEnv) Rubric() *env.Rubric { return toolRubric }
func (e *toolEnv) Close() error        { return nil }

// toolRubric scores toolEnv: reward/upper on the second turn, turn_reward/tool per turn.
var toolRubric = &env.Rubric{
	Funcs: []env.RewardFunc{{Name: "upper", Weight: 1, Fn: func(t *env.Trajectory) float64 {
		if len(t.Turns) < 2 {
			return 0
		}
		return upperShare(t.Turns[1].Assistant)
	}}},
	Turn: []env.TurnRewardFunc{{Name: "tool", Weight: 1, Fn: func(t *env.Trajectory, i int) float64 {
		return float64(t.Turns[i].Result.Info.ToolSuccesses)
	}}},
}

func newToolEnv() *env.Environment {
	return &env.Environment{Name: "tool", MultiTurn: true, New: func() env.Env { return &toolEnv{} }}
}

// runeShare is the share of the runes of s for which in holds (0 for an empty s).
func runeShare(s string, in func(rune) bool) float64 {
	n, k := 0, 0
	for _, r := range s {
		n++
		if in(r) {
			k++
		}
	}
	if n == 0 {
		return 0
	}
	return float64(k) / float64(n)
}

func isDigit(r rune) bool { return r >= '0' && r <= '9' }
func isUpper(r rune) bool { return r >= 'A' && r <= 'Z' }

func hasDigit(s string) bool { return strings.ContainsFunc(s, isDigit) }

// upperShare is the share of the runes of s that are ASCII capitals (a few percent for the random
// tiny model: 26 single-byte tokens and a few merges among ~550 tokens).
func upperShare(s string) float64 { return runeShare(s, isUpper) }
