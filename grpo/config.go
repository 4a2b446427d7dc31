package grpo

import (
	"math"

	"github.com/mtgrpo/mtgrpo/env"
	"github.com/mtgrpo/mtgrpo/grpo/algo"
	"github.com/mtgrpo/mtgrpo/internal/setting"
	"github.com/mtgrpo/mtgrpo/rollout"
)

// Config is one training run's settings. Start from Defaults and change what differs; Validate
// names the first bad field. Each group mirrors a block users know from verl's ppo_trainer.yaml and
// the multi-turn seeds (names in the doc lines).
type Config struct {
	// Rollout: what each step generates.
	Rollout RolloutConfig
	// Advantage: how rewards become advantages (algorithm.adv_estimator and its settings).
	Advantage algo.AdvConfig
	// Reward: shaping applied to trajectory rewards before the advantages.
	Reward RewardConfig
	// Loss: the policy loss, KL, entropy, aggregation, importance sampling
	// (actor_rollout_ref.actor.*).
	Loss LossConfig
	// Optim: AdamW and the learning-rate schedule (actor.optim.*).
	Optim OptimConfig
	// Update: how the rollout batch is split into optimizer steps.
	Update UpdateConfig
	// DAPO: dynamic sampling and the overlong penalty.
	DAPO DAPOConfig
	// Critic: the PPO value model (used by the gae estimator only).
	Critic CriticConfig
	// Seed drives sampling, mini-batch shuffling and everything else random in a step.
	Seed uint64
	// PeakFLOPS is the device's peak dense FLOP/s in the training dtype (e.g. 989e12 for an H100's
	// bf16); when set, perf/mfu reports the actor update's model FLOPs utilisation. 0: unknown.
	PeakFLOPS float64
	// Profile adds the rollout's time split to every step's metrics (trajectory_profiling).
	Profile ProfileConfig
}

// RolloutConfig says what one step generates (the rollout: section; the condenser is built from
// its own section, rollout.CondenserConfig).
type RolloutConfig struct {
	// Tasks is the number of tasks (prompts) per step: data.train_batch_size.
	Tasks int `yaml:"tasks"`
	// GroupSize is the number of trajectories per task, the GRPO group (a trajectory's Group is
	// its group's id): n_trajectories_per_question, actor_rollout_ref.rollout.n.
	GroupSize int `yaml:"group"`
	// Sampling is used for every action turn (temperature, top_p, max_new_tokens per turn ...);
	// its keys sit beside the others.
	Sampling rollout.Sampling `yaml:",inline"`
	// MaxTurns caps an episode's action turns: max_turns_per_trajectory (0: the environment's).
	MaxTurns int `yaml:"max_turns"`
	// MaxContextTokens ends an episode whose next context would be longer: max_context_length.
	MaxContextTokens int `yaml:"max_context_tokens"`
	// Condenser builds each turn's context (nil: the full history).
	Condenser rollout.Condenser `yaml:"-"`
	// MaskTruncated gives outputs cut by the length limit loss mask 0 (DAPO overlong filtering).
	MaskTruncated bool `yaml:"mask_truncated"`
	// MaxLen is the KV cache length per sequence (context plus output; 0: MaxContextTokens +
	// Sampling.MaxNewTokens, or 4096).
	MaxLen int `yaml:"max_len"`
	// ChatVars are extra chat template variables (e.g. enable_thinking).
	ChatVars map[string]any `yaml:"chat_vars,omitempty"`
	// Workers bounds concurrent environment, tool and reward calls (0: 32).
	Workers int `yaml:"workers"`
	// MaxOpenEpisodes bounds the episodes open at once (0: all). The environment's own limit
	// (env.Environment.MaxConcurrent, a server's session limit) applies as well: the smaller one
	// holds (openEpisodeLimit).
	MaxOpenEpisodes int `yaml:"-"`
}

// UpdateConfig says how a rollout batch becomes optimizer steps (the update: section).
type UpdateConfig struct {
	// Epochs passes over each rollout batch (ppo_epochs); more than one needs old log-probs.
	Epochs int `yaml:"epochs"`
	// MiniBatches splits the batch into this many optimizer steps per epoch, by trajectory
	// (train_batch_size / ppo_mini_batch_size); more than one needs old log-probs.
	MiniBatches int `yaml:"mini_batches"`
	// MicroTokens is the token budget of one forward/backward pass (ppo_max_token_len_per_gpu):
	// turns are packed into micro-batches of at most this many tokens and their gradients
	// accumulate.
	MicroTokens int `yaml:"micro_tokens"`
	// Checkpoint recomputes each decoder layer in the backward pass (gradient checkpointing).
	Checkpoint bool `yaml:"gradient_checkpointing"`
	// HeadMemoryBudget is model.ForwardOptions.HeadMemoryBudget (0: 1 GiB; −1: the head always in chunks).
	HeadMemoryBudget int64 `yaml:"head_memory_budget"`
}

// OptimConfig is AdamW and its schedule (the optim: section).
type OptimConfig struct {
	// LR is the peak learning rate (actor.optim.lr).
	LR float64 `yaml:"lr"`
	// Beta1 and Beta2 are AdamW's moment decays (betas).
	Beta1 float64 `yaml:"beta1"`
	Beta2 float64 `yaml:"beta2"`
	// Eps is AdamW's ε.
	Eps float64 `yaml:"eps"`
	// WeightDecay is decoupled; biases and norm weights are exempt.
	WeightDecay float64 `yaml:"weight_decay"`
	// Warmup optimizer steps of linear warmup (lr_warmup_steps).
	Warmup int `yaml:"warmup"`
	// WarmupRatio is the warmup as a fraction of the run's optimizer steps (TotalSteps), used when
	// Warmup is 0 (verl's lr_warmup_steps_ratio, TRL's warmup_ratio, OpenRLHF's lr_warmup_ratio):
	// WarmupSteps.
	WarmupRatio float64 `yaml:"warmup_ratio"`
	// Schedule after warmup: constant or cosine; MinLRRatio is cosine's floor as a fraction of LR.
	Schedule   algo.Schedule `yaml:"schedule"`
	MinLRRatio float64       `yaml:"min_lr_ratio"`
	// TotalSteps is the run's optimizer steps, for the cosine schedule (0: unknown). The trainer
	// sets it from the run's length (ScheduleSteps); it is not a configuration key.
	TotalSteps int `yaml:"-"`
	// MaxGradNorm clips the global gradient norm (grad_clip; 0: no clipping). A non-finite norm
	// always skips the step.
	MaxGradNorm float64 `yaml:"max_grad_norm"`
}

// RewardConfig shapes trajectory rewards before the advantages are computed (the reward:
// section).
type RewardConfig struct {
	// KLCoef puts the KL to the reference in the reward instead of (or besides) the loss
	// (algorithm.use_kl_in_reward with kl_ctrl.kl_coef): every trained token gets −KLCoef·KL as a
	// token reward; outcome estimators add those to the trajectory's score, GAE sees them per token.
	// 0: off (no reference model needed for it).
	KLCoef float64 `yaml:"kl_coef"`
	// KLKind is the estimator of the KL in the reward (algorithm.kl_penalty).
	KLKind algo.KLKind `yaml:"kl_kind"`
}

// DAPOConfig holds DAPO's dynamic sampling and overlong buffer (the dapo: section).
type DAPOConfig struct {
	// DynamicSampling drops groups whose rewards are all equal (no learning signal) and keeps
	// generating until Rollout.Tasks groups with signal are collected (filter_groups.enable).
	DynamicSampling bool `yaml:"dynamic_sampling"`
	// MaxGenBatches caps the generation rounds of one step (filter_groups.max_num_gen_batches;
	// 0: 4). When the cap is hit the step trains on the groups it has.
	MaxGenBatches int `yaml:"max_gen_batches"`
	// OverlongLen is the buffer before the length limit in which a linear penalty applies
	// (overlong_buffer.len; 0: off).
	OverlongLen int `yaml:"overlong_len"`
	// OverlongFactor is the penalty at the limit (overlong_buffer.penalty_factor).
	OverlongFactor float64 `yaml:"overlong_factor"`
}

// CriticConfig is the PPO value model (the critic: section).
type CriticConfig struct {
	// LR is the critic's learning rate (critic.optim.lr), constant; 0 (the default) means
	// CriticLRRatio × Optim.LR: verl's pair (actor 1e-6, critic 1e-5) at verl's actor rate, scaled
	// with a small model's, where a fixed 1e-5 leaves the value head (zero at start, moving a value
	// about LR × Σ|hᵢ| a step) thousands of updates from the returns (docs/bench/learning.md).
	LR float64 `yaml:"lr"`
	// Warmup is the critic's warmup steps: the actor is not updated before (trainer.critic_warmup).
	Warmup int `yaml:"warmup"`
	// ValueClip is ε_v of the clipped value loss (critic.cliprange_value).
	ValueClip float64 `yaml:"value_clip"`
	// MaxGradNorm clips the critic's gradient norm (critic.grad_clip; 0: no clipping).
	MaxGradNorm float64 `yaml:"max_grad_norm"`
}

// Defaults are verl's defaults where verl has one, scaled for small models where it matters.
func Defaults() Config {
	return Config{
		Rollout: RolloutConfig{Tasks: 8, GroupSize: 8, Sampling: rollout.Sampling{Temperature: 1, TopP: 1, MaxNewTokens: 512},
			MaxContextTokens: 4096},
		Advantage: algo.DefaultAdvConfig(),
		Reward:    RewardConfig{KLKind: algo.KLK3},
		Loss:      DefaultLossConfig(),
		Optim: OptimConfig{LR: 1e-6, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.01,
			Schedule: algo.Constant, MaxGradNorm: 1},
		Update: UpdateConfig{Epochs: 1, MiniBatches: 1, MicroTokens: 16384},
		DAPO:   DAPOConfig{MaxGenBatches: 4, OverlongFactor: 1},
		Critic: CriticConfig{ValueClip: 0.5, MaxGradNorm: 1},
	}
}

// WarmupSteps is the warmup in optimizer steps: Warmup, else ⌈WarmupRatio × TotalSteps⌉ (TRL's and
// OpenRLHF's rounding; verl rounds down, at most one step fewer), 0 while TotalSteps is unknown.
func (o OptimConfig) WarmupSteps() int {
	if o.Warmup > 0 || o.WarmupRatio <= 0 || o.TotalSteps <= 0 {
		return o.Warmup
	}
	return int(math.Ceil(o.WarmupRatio * float64(o.TotalSteps)))
}

// MaxLR bounds every learning rate: AdamW moves each weight by about the rate per step, so a
// rate above 1 (a mistyped exponent) destroys the model in a step or two.
const MaxLR = 1

// CriticLRRatio is the critic's learning rate over the actor's when critic.lr is 0: verl's default
// pair (critic 1e-5, actor 1e-6).
const CriticLRRatio = 10

// CriticLR is the critic's learning rate in effect: Critic.LR, or CriticLRRatio × Optim.LR when it
// is 0.
func (c *Config) CriticLR() float64 {
	if c.Critic.LR > 0 {
		return c.Critic.LR
	}
	return CriticLRRatio * c.Optim.LR
}

// Validate names the first bad setting by its key (a setting.KeyError): every number against
// the one range declared for its key here, then the rules that tie settings together (the
// sections' own Validate: advantage, loss).
func (c *Config) Validate() error {
	r, s, u, o, d, k := c.Rollout, c.Rollout.Sampling, c.Update, c.Optim, c.DAPO, c.Critic
	if err := setting.Check(
		setting.In("rollout.tasks", r.Tasks, 1, setting.MaxTrajectories),
		setting.In("rollout.group", r.GroupSize, 1, setting.MaxTrajectories),
		setting.In("rollout.max_new_tokens", s.MaxNewTokens, 1, setting.MaxTokens),
		setting.In("rollout.top_k", s.TopK, 0, setting.MaxTokens),
		setting.In("rollout.temperature", s.Temperature, 0, 100),
		setting.In("rollout.top_p", s.TopP, 0, 1).Above(),
		setting.In("rollout.min_p", s.MinP, 0, 1).Below(),
		setting.In("rollout.max_turns", r.MaxTurns, 0, setting.MaxCount),
		setting.In("rollout.max_context_tokens", r.MaxContextTokens, 0, setting.MaxTokens),
		setting.In("rollout.max_len", r.MaxLen, 0, setting.MaxTokens),
		setting.In("rollout.workers", r.Workers, 0, setting.MaxCount),
		setting.In("rollout.max_open_episodes", r.MaxOpenEpisodes, 0, setting.MaxTrajectories),
		setting.In("update.epochs", u.Epochs, 1, setting.MaxCount),
		setting.In("update.mini_batches", u.MiniBatches, 1, setting.MaxTrajectories),
		setting.In("update.micro_tokens", u.MicroTokens, 1, setting.MaxTokensPerStep),
		setting.AtLeast("update.head_memory_budget", u.HeadMemoryBudget, -1).Because("bytes; -1: always in chunks"),
		setting.In("optim.lr", o.LR, 0, MaxLR),
		setting.In("optim.beta1", o.Beta1, 0, 1).Below(),
		setting.In("optim.beta2", o.Beta2, 0, 1).Below(),
		setting.AtLeast("optim.eps", o.Eps, 0).Above(),
		setting.AtLeast("optim.weight_decay", o.WeightDecay, 0),
		setting.In("optim.warmup", o.Warmup, 0, setting.MaxCount),
		setting.In("optim.warmup_ratio", o.WarmupRatio, 0, 1).Below(),
		setting.In("optim.min_lr_ratio", o.MinLRRatio, 0, 1),
		setting.AtLeast("optim.max_grad_norm", o.MaxGradNorm, 0),
		setting.AtLeast("optim.total_steps", o.TotalSteps, 0),
		setting.AtLeast("reward.kl_coef", c.Reward.KLCoef, 0),
		setting.In("dapo.max_gen_batches", d.MaxGenBatches, 0, setting.MaxCount),
		setting.In("dapo.overlong_len", d.OverlongLen, 0, setting.MaxTokens),
		setting.AtLeast("dapo.overlong_factor", d.OverlongFactor, 0),
		setting.In("critic.lr", k.LR, 0, MaxLR),
		setting.In("critic.warmup", k.Warmup, 0, setting.MaxCount),
		setting.AtLeast("critic.value_clip", k.ValueClip, 0),
		setting.AtLeast("critic.max_grad_norm", k.MaxGradNorm, 0),
	); err != nil {
		return err
	}
	if err := r.validateSizes(); err != nil {
		return err
	}
	if u.MiniBatches > r.Tasks*r.GroupSize {
		return setting.Errorf("update.mini_batches", "%d exceeds the %d trajectories of a step", u.MiniBatches, r.Tasks*r.GroupSize)
	}
	if err := setting.OneOf("optim.schedule", o.Schedule, []algo.Schedule{algo.Constant, algo.Cosine}); err != nil {
		return err
	}
	if err := c.Advantage.Validate(); err != nil {
		return err
	}
	if c.Reward.KLCoef > 0 {
		if err := c.Reward.KLKind.Validate("reward.kl_kind"); err != nil {
			return err
		}
	}
	if d.OverlongLen > 0 {
		o := algo.Overlong{Buffer: d.OverlongLen, Factor: d.OverlongFactor}
		if err := o.Validate(s.MaxNewTokens); err != nil {
			return err
		}
	}
	return c.Loss.Validate()
}

// KVLen is the KV cache length of one sequence: MaxLen, else the longest context plus one
// output, else 4096.
func (r RolloutConfig) KVLen() int {
	switch {
	case r.MaxLen > 0:
		return r.MaxLen
	case r.MaxContextTokens > 0:
		return r.MaxContextTokens + r.Sampling.MaxNewTokens
	}
	return 4096
}

// validateSizes checks what the rollout's sizes imply together: the trajectories of a step, the
// tokens they hold, and room for a context before an output.
func (r RolloutConfig) validateSizes() error {
	trajs, ok := setting.Product(r.Tasks, r.GroupSize, setting.MaxTrajectories)
	if !ok {
		return setting.Errorf("rollout.group", "rollout.tasks %d × rollout.group %d trajectories per step: must be at most %d",
			r.Tasks, r.GroupSize, setting.MaxTrajectories)
	}
	if _, ok := setting.Product(trajs, r.KVLen(), setting.MaxTokensPerStep); !ok {
		return setting.Errorf("rollout.tasks", "%d trajectories per step × %d tokens each (rollout.max_len): must be at most %d tokens",
			trajs, r.KVLen(), int64(setting.MaxTokensPerStep))
	}
	if r.KVLen() <= r.Sampling.MaxNewTokens {
		return setting.Errorf("rollout.max_len", "%d tokens per sequence leave no room for a context before %d new tokens",
			r.KVLen(), r.Sampling.MaxNewTokens)
	}
	return nil
}

// NeedsReference reports whether training needs the reference model (Models.Reference): its
// log-probs are read by a KL term in the loss or in the reward.
func (c *Config) NeedsReference() bool { return c.Loss.KLCoef > 0 || c.Reward.KLCoef > 0 }

// NeedsCritic reports whether training needs a critic (Models.Critic): the gae estimator.
func (c *Config) NeedsCritic() bool { return c.Advantage.Estimator == algo.EstGAE }

// ScheduleSteps sets Optim.TotalSteps, the length of the learning-rate schedule, to the optimizer
// steps that the given number of Steps take (Epochs × MiniBatches each), unless it is set.
func (c *Config) ScheduleSteps(steps int) {
	if c.Optim.TotalSteps == 0 {
		c.Optim.TotalSteps = steps * c.Update.Epochs * c.Update.MiniBatches
	}
}

// openEpisodeLimit is the bound on episodes open at once: the smaller of configured and the
// environment's MaxConcurrent, where 0 means no bound.
func openEpisodeLimit(configured int, envs *env.Environment) int {
	limit := configured
	if envs != nil && envs.MaxConcurrent > 0 && (limit == 0 || envs.MaxConcurrent < limit) {
		limit = envs.MaxConcurrent
	}
	return limit
}

// needsOld reports whether ℓ_old must be computed before the update: the policy changes between
// the first and a later optimizer step on the same batch.
func (c *Config) needsOld() bool { return c.Update.Epochs > 1 || c.Update.MiniBatches > 1 }
