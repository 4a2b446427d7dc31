package grpo

import (
	"context"
	"fmt"

	"github.com/mtgrpo/mtgrpo/env"
	"github.com/mtgrpo/mtgrpo/grpo/exchange"
	"github.com/mtgrpo/mtgrpo/internal/setting"
	"github.com/mtgrpo/mtgrpo/rollout"
	"github.com/mtgrpo/mtgrpo/tokenizer"
)

// EvalConfig says how a validation set is played: the eval: section (verl's
// actor_rollout_ref.rollout.val_kwargs: n, do_sample, temperature, top_p) and, from outside the
// section, what evaluation shares with training, its seed and its ranks.
type EvalConfig struct {
	// Samples per task (1 for greedy accuracy; n > 1 gives pass@k for k = 1 and n).
	Samples int `yaml:"samples"`
	// Greedy decodes deterministically; otherwise Temperature and TopP sample.
	Greedy      bool    `yaml:"greedy"`
	Temperature float64 `yaml:"temperature"`
	TopP        float64 `yaml:"top_p"`
	// Rollout is the run's rollout settings that evaluation plays by as training does: the turn
	// and context limits, the condenser, chat variables, the output cap (Sampling.MaxNewTokens)
	// and the open-episode bound (the environment's MaxConcurrent applies as well).
	Rollout RolloutConfig `yaml:"-"`
	// Seed seeds the sampling.
	Seed uint64 `yaml:"-"`
	// Runner makes the runner that plays the episodes (nil: the multi-turn driver).
	Runner rollout.NewRunner `yaml:"-"`
	// Dist shards the tasks across the training ranks, which exchange their trajectories: every
	// rank returns the metrics of the whole set (nil: a single process plays them all).
	Dist *Dist `yaml:"-"`
}

// DefaultEvalConfig is greedy accuracy: one sample per task.
func DefaultEvalConfig() EvalConfig {
	return EvalConfig{Samples: 1, Greedy: true, Temperature: 1, TopP: 1}
}

// Validate names the first bad setting of the eval: section by its key (a setting.KeyError).
func (c EvalConfig) Validate() error {
	return setting.Check(setting.In("eval.samples", c.Samples, 1, setting.MaxTrajectories),
		setting.In("eval.temperature", c.Temperature, 0, 100), setting.In("eval.top_p", c.TopP, 0, 1).Above())
}

// sampling is every evaluation turn's sampling.
func (c EvalConfig) sampling() rollout.Sampling {
	return rollout.Sampling{Greedy: c.Greedy, Temperature: c.Temperature, TopP: c.TopP, MaxNewTokens: c.Rollout.Sampling.MaxNewTokens}
}

// The headline validation metrics, which the run's summary and report read: the mean reward, the
// share of well-formed final answers (rubrics that check a format), lenient accuracy (any stated
// answer), strict accuracy (the "####" answer only), pass@1, and tool calls per episode.
const (
	ValScore          = "val/score"
	ValFormat         = "val/format"
	ValAccuracy       = "val/accuracy"
	ValAccuracyStrict = "val/accuracy_strict"
	ValPass1          = "val/pass@1"
	ValToolCalls      = "val/tool_call_counts/mean"
)

// valHeadlines are the headline names that repeat a rollout statistic under val/.
var valHeadlines = []headline{{ValScore, "val/critic/score/mean"}, {ValFormat, "val/reward/format/mean"},
	{ValAccuracy, "val/reward/accuracy/mean"}, {ValAccuracyStrict, "val/reward/accuracy_strict/mean"}}

// Evaluate plays every task Samples times on the generator's model and reports val/ metrics: the
// mean reward and each reward function, strict and lenient accuracy (the rubric's accuracy
// functions), turns and lengths, and pass@1 and pass@n with the unbiased estimator of Chen et al.
// (arXiv 2107.03374) over Samples draws, a task counting as solved when its accuracy is 1 (its
// reward is positive for rubrics without an accuracy function). Data parallel (c.Dist), the
// training ranks share the tasks and all return the whole set's metrics; a rank that only
// generates (rollout ahead) returns no metrics. The trainer's own settings (condenser, turn and
// context limits) reach c as c.Rollout. Run on the torch thread.
func Evaluate(ctx context.Context, gen rollout.Generator, tok *tokenizer.Tokenizer, envs *env.Environment,
	tasks []env.Task, c EvalConfig) (Metrics, []*rollout.Trajectory, error) {
	if c.Dist.generates() {
		return Metrics{}, nil, nil
	}
	n := max(c.Samples, 1)
	if len(tasks) == 0 {
		return nil, nil, fmt.Errorf("grpo: eval: no tasks")
	}
	lo, hi := c.Dist.evalShare(len(tasks))
	newRunner := c.Runner
	if newRunner == nil {
		newRunner = rollout.NewDriverRunner
	}
	r := c.Rollout
	d, err := newRunner(gen, tok, rollout.DriverConfig{Sampling: c.sampling(), Condenser: r.Condenser,
		MaxTurns: r.MaxTurns, MaxContextTokens: r.MaxContextTokens, ChatVars: r.ChatVars, Seed: c.Seed,
		MaxOpenEpisodes: openEpisodeLimit(r.MaxOpenEpisodes, envs), FirstIndex: lo * n})
	if err != nil {
		return nil, nil, fmt.Errorf("grpo: eval: %w", err)
	}
	var eps []rollout.Episode
	for i, task := range tasks[lo:hi] {
		for range n {
			eps = append(eps, rollout.Episode{Env: envs.New(), Task: task, Group: lo + i})
		}
	}
	trajs, prof, err := d.Run(ctx, eps)
	if err != nil {
		return nil, nil, fmt.Errorf("grpo: eval: %w", err)
	}
	if trajs, err = exchange.Trajectories(c.Dist.trainGroup(), trajs, tasks, 0); err != nil {
		return nil, nil, fmt.Errorf("grpo: eval: %w", err)
	}
	m := Metrics{}
	m.rolloutStats(trajs)
	out := Metrics{}
	for k, v := range m {
		out["val/"+k] = v
	}
	solved := make([]int, len(tasks))
	for _, tr := range trajs {
		if solvedBy(tr) {
			solved[tr.Group]++
		}
	}
	var p1, pn float64
	for _, c := range solved {
		p1 += passAtK(n, c, 1)
		pn += passAtK(n, c, n)
	}
	out.headlines(valHeadlines)
	out[ValPass1] = p1 / float64(len(tasks))
	out[fmt.Sprintf("val/pass@%d", n)] = pn / float64(len(tasks))
	out["val/timing_s"] = prof.Wall.Seconds()
	return out, trajs, nil
}

// solvedBy reports whether a trajectory solved its task: accuracy 1 when the rubric measures
// accuracy, else a positive reward.
func solvedBy(tr *rollout.Trajectory) bool {
	if tr.Err != nil {
		return false
	}
	if a, ok := tr.Score.Metrics["reward/accuracy"]; ok {
		return a >= 1
	}
	return tr.Reward > 0
}

// passAtK is the unbiased pass@k estimate from n draws of which c succeeded:
// 1 − C(n−c, k)/C(n, k).
func passAtK(n, c, k int) float64 {
	if n-c < k {
		return 1
	}
	p := 1.0
	for i := n - c + 1; i <= n; i++ {
		p *= 1 - float64(k)/float64(i)
	}
	return 1 - p
}
