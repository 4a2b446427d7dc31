package grpo

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/mtgrpo/mtgrpo/env"
	"github.com/mtgrpo/mtgrpo/grpo/shard"
	"github.com/mtgrpo/mtgrpo/model"
	"github.com/mtgrpo/mtgrpo/rollout"
	"github.com/mtgrpo/mtgrpo/tokenizer"
	"github.com/mtgrpo/mtgrpo/torch"
)

// Models are the networks of a run.
type Models struct {
	// Policy generates (through the Generator, on the same weights) and trains; its weights are
	// updated in place and must be trainable.
	Policy *model.Model
	// Reference is the frozen model of the KL term; required only when Loss.KLCoef > 0 and the
	// policy has no LoRA adapters (then the reference is the policy with its adapters off).
	Reference *model.Model
	// Critic is the value model; required only for the gae estimator.
	Critic *Critic
}

// TaskSource yields the tasks of each step; it owns the data position (which a checkpoint saves).
type TaskSource interface {
	// Next returns the next n tasks.
	Next(n int) ([]env.Task, error)
}

// Trainer runs training steps. Everything it does runs on the torch thread (inside torch.Run):
// rollouts through the Generator, scoring passes, the update. Environments, tools and rewards run
// on the driver's worker goroutines.
type Trainer struct {
	cfg    Config
	ms     Models
	gen    rollout.Generator
	tok    *tokenizer.Tokenizer
	envs   *env.Environment
	opt    *shard.Optimizer // the policy's; nil on a rank that only generates (rollout ahead)
	params []*torch.Tensor
	dist   *Dist // nil: a single process
	// iter counts Step calls, updates optimizer steps taken, skipped steps skipped for a
	// non-finite gradient norm, sftSteps SFT calls.
	iter, updates, skipped, sftSteps int
	// Rollout ahead (dist_ahead.go): the batch a rollout rank generated and has not sent; the
	// steps a training rank took in this process.
	pending    *aheadBatch
	aheadSteps int
	// runner makes each batch's runner (WithRunner; the multi-turn driver by default).
	runner rollout.NewRunner
}

// Option is a setting of New beyond the Config.
type Option func(*Trainer)

// WithRunner plays the episodes with runners made by f instead of the multi-turn driver: agent
// programs calling the engine through an endpoint (package rollout/serve).
func WithRunner(f rollout.NewRunner) Option {
	return func(t *Trainer) {
		if f != nil {
			t.runner = f
		}
	}
}

// WithDist makes the trainer one rank of data-parallel training (dist.go); nil is a single
// process. Every rank calls New with the same models, configuration and Dist settings.
func WithDist(d *Dist) Option { return func(t *Trainer) { t.dist = d } }

// New checks the configuration against the models and makes a trainer. gen must generate with
// ms.Policy's weights (a rollout.Engine over a rollout.ModelBackend of the policy): there is no
// weight copy between the sampler and the trainer. Call on the torch thread.
func New(ms Models, gen rollout.Generator, tok *tokenizer.Tokenizer, envs *env.Environment, cfg Config, opts ...Option) (*Trainer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("grpo: config: %w", err)
	}
	switch {
	case ms.Policy == nil || gen == nil || tok == nil || envs == nil:
		return nil, fmt.Errorf("grpo: a trainer needs a policy, a generator, a tokenizer and an environment")
	case cfg.NeedsReference() && ms.Reference == nil && ms.Policy.LoRA() == nil:
		return nil, fmt.Errorf("grpo: a KL term (loss.kl_coef %v, reward.kl_coef %v) needs a reference model",
			cfg.Loss.KLCoef, cfg.Reward.KLCoef)
	case cfg.NeedsCritic() && ms.Critic == nil:
		return nil, fmt.Errorf("grpo: the gae estimator needs a critic")
	}
	t := &Trainer{cfg: cfg, ms: ms, gen: gen, tok: tok, envs: envs, runner: rollout.NewDriverRunner}
	for _, o := range opts {
		o(t)
	}
	if err := t.dist.check(cfg); err != nil {
		return nil, err
	}
	ms.Policy.SetTrainable(true)
	t.params = ms.Policy.ParameterTensors()
	if err := t.dist.broadcastWeights(ms); err != nil {
		return nil, err
	}
	if t.dist.generates() {
		return t, nil // a rollout rank: weights come from the trainers, no optimizer
	}
	var err error
	if t.opt, err = t.dist.newOptimizer(ms.Policy.Parameters(), shard.UnitsOf(ms.Policy), cfg.Optim, cfg.Optim.MaxGradNorm, true); err != nil {
		return nil, fmt.Errorf("grpo: optimizer: %w", err)
	}
	if ms.Critic != nil {
		if err := ms.Critic.start(cfg, t.dist); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// Close frees the optimizer state (the models and the Dist belong to the caller).
func (t *Trainer) Close() {
	if t.opt != nil {
		t.opt.Close()
	}
}

// Dist is the trainer's place in data-parallel training (nil: a single process).
func (t *Trainer) Dist() *Dist { return t.dist }

// Step runs one training iteration: rollout → rewards → advantages → (old / reference / value
// scoring) → loss and backward per micro-batch → clip → AdamW, once per mini-batch and epoch. It
// returns the step's metrics under the names verl and TRL use, and the trajectories it trained on
// (failed ones, with Err set, were left out of training).
func (t *Trainer) Step(ctx context.Context, src TaskSource) (Metrics, []*rollout.Trajectory, error) {
	if t.dist.ahead() {
		return t.stepAhead(ctx, src)
	}
	m := Metrics{}
	start := time.Now()
	if dev := t.ms.Policy.Device; dev.IsCUDA() {
		torch.CUDAResetPeak(dev) // perf/max_memory_allocated_gb is this step's peak
	}
	trajs, err := timed(m, phaseGen, func() ([]*rollout.Trajectory, error) { return t.rollout(ctx, src, m) })
	if err != nil {
		return nil, nil, err
	}
	return t.learn(trajs, m, start)
}

// learn is the rest of a step once its trajectories are there: samples, scoring, credit, update,
// metrics.
func (t *Trainer) learn(trajs []*rollout.Trajectory, m Metrics, start time.Time) (Metrics, []*rollout.Trajectory, error) {
	samples := samplesOf(trajs)
	if len(samples) == 0 {
		// Keep the cause: a reward server or environment that failed every episode is what the
		// user has to fix, not the empty batch it left.
		switch n, why := rollout.Failures(trajs); {
		case n == len(trajs):
			return nil, trajs, fmt.Errorf("grpo: step %d: all %d episodes failed: %s", t.iter, n, why)
		case n > 0:
			return nil, trajs, fmt.Errorf("grpo: step %d: no trainable turn in %d trajectories; %d failed: %s", t.iter, len(trajs), n, why)
		}
		return nil, trajs, fmt.Errorf("grpo: step %d: no trainable turn in %d trajectories", t.iter, len(trajs))
	}
	if err := t.score(samples, m); err != nil {
		return nil, trajs, err
	}
	if err := timedDo(m, phaseAdv, func() error { return t.credit(trajs, samples, m) }); err != nil {
		return nil, trajs, err
	}
	if err := t.train(samples, m); err != nil {
		return nil, trajs, err
	}
	t.iter++
	m.rolloutStats(trajs)
	m.headlines(trainHeadlines)
	m.profile(t.cfg.Profile, trajs)
	m[phaseStep.key()] = time.Since(start).Seconds()
	m.throughput(samples)
	m.mfu(t.ms.Policy.NumParameters(), t.cfg.Update.Epochs, t.cfg.PeakFLOPS)
	m.memory(t.ms.Policy.Device)
	m.graphs(t.gen.Stats())
	m.phaseShare()
	return m, trajs, nil
}

// train updates the critic (PPO) and then the actor, unless the critic is still warming up.
func (t *Trainer) train(samples []*sample, m Metrics) error {
	if t.ms.Critic != nil && t.cfg.NeedsCritic() {
		if err := timedDo(m, phaseUpdateCritic, func() error { return t.updateCritic(samples, m) }); err != nil {
			return err
		}
		if t.iter < t.cfg.Critic.Warmup {
			return nil
		}
	}
	return timedDo(m, phaseUpdateActor, func() error {
		return m.deviceCounts(t.ms.Policy.Device, phaseUpdateActor, func() error { return t.update(samples, m) })
	})
}

// stepRNG is the generator of one purpose in the current iteration: a run is reproducible from
// Config.Seed and the iteration number alone (which resume relies on).
func (t *Trainer) stepRNG(purpose uint64) *rand.Rand {
	return rand.New(rand.NewPCG(t.cfg.Seed^0x6772706f, uint64(t.iter)<<8|purpose))
}

// Steps is the number of Step calls so far; Updates the optimizer steps taken and Skipped those
// skipped for a non-finite gradient norm.
func (t *Trainer) Steps() int   { return t.iter }
func (t *Trainer) Updates() int { return t.updates }
func (t *Trainer) Skipped() int { return t.skipped }
