package config

import (
	"time"

	"github.com/mtgrpo/mtgrpo/env/extreward"
	"github.com/mtgrpo/mtgrpo/env/mcp"
	"github.com/mtgrpo/mtgrpo/env/openenv"
	"github.com/mtgrpo/mtgrpo/grpo"
)

// Config is one run's resolved configuration: what train, eval and demo run from, printed at
// start and saved as RUN/config.yaml. Field names are the YAML keys (docs/config.md lists every
// key, its default and the seed-project keys that map onto it).
type Config struct {
	// Preset names the preset this configuration started from (general, math, mt-grpo).
	Preset string `yaml:"preset"`
	// Model is the policy's model directory (Hugging Face layout). Empty with Init set: a random
	// model of Init's shape is written into RUN/base-model first.
	Model string `yaml:"model"`
	// Init describes the random model written when Model is empty.
	Init *InitConfig `yaml:"init,omitempty"`
	// CriticModel is the critic's starting weights for the gae estimator (empty: Model).
	CriticModel string `yaml:"critic_model,omitempty"`
	// RunDir receives config.yaml, metrics, the log, samples, checkpoints and the exported model.
	RunDir string `yaml:"run_dir"`
	// Device is cpu, cuda or cuda:N; DType the compute dtype ("" is float32 on cpu, the
	// checkpoint's own dtype elsewhere).
	Device string `yaml:"device"`
	DType  string `yaml:"dtype"`
	// Seed drives the model's initialisation, generated data, sampling and shuffles.
	Seed uint64 `yaml:"seed"`

	Env       EnvConfig       `yaml:"env"`
	Data      DataConfig      `yaml:"data"`
	Rollout   RolloutConfig   `yaml:"rollout"`
	Advantage AdvantageConfig `yaml:"advantage"`
	Reward    RewardConfig    `yaml:"reward"`
	Loss      LossConfig      `yaml:"loss"`
	Optim     OptimConfig     `yaml:"optim"`
	Update    UpdateConfig    `yaml:"update"`
	DAPO      DAPOConfig      `yaml:"dapo"`
	Critic    CriticConfig    `yaml:"critic"`
	SFT       SFTConfig       `yaml:"sft"`
	Train     TrainConfig     `yaml:"train"`
	Eval      EvalConfig      `yaml:"eval"`
	Profiling ProfilingConfig `yaml:"profiling"`
	Dist      DistConfig      `yaml:"dist"`

	// The parts that live outside the binary (package env/external): MCP tool servers, an
	// OpenEnv server as the environment, an external reward function.
	MCP               *mcp.Config       `yaml:"mcp,omitempty"`
	OpenEnv           *openenv.Config   `yaml:"openenv,omitempty"`
	RewardComputation *extreward.Config `yaml:"reward_computation,omitempty"`

	// origin records where each key was last set ("configs/x.yaml:12", "$LR", "--set"), for
	// errors found after merging.
	origin map[string]string
	// warnings are the keys accepted without effect (Warnings); given holds the foreign keys
	// that are combined once every source is read (Family.Derive).
	warnings []string
	given    given
	// layouts records where each foreign family's first key was given (Family.Implies).
	layouts map[string]string
}

// DistConfig is data-parallel training's settings (docs/distributed.md); they apply when the
// run has several processes (torchrun, srun, --nproc).
type DistConfig struct {
	// Zero1 shards the float32 master weights and AdamW moments across the ranks (ZeRO-1).
	Zero1 bool `yaml:"zero1"`
	// RolloutRanks is the number of ranks (the last ones) that only generate, one batch ahead of
	// the ranks that train (0: every rank does both).
	RolloutRanks int `yaml:"rollout_ranks"`
	// Overlap starts gradient all-reduces during the backward pass.
	Overlap bool `yaml:"overlap"`
	// Timeout bounds rendezvous and every collective: a rank that died or hangs makes the others
	// stop with an error naming it within this time (0: 30 minutes).
	Timeout time.Duration `yaml:"timeout"`
}

// InitConfig is a randomly initialised model: an architecture at a preset's size (model
// presets: tiny, qwen2.5-0.5b, llama3.2-1b), with any of the widths overridden.
type InitConfig struct {
	Arch   string `yaml:"arch"`
	Preset string `yaml:"preset"`
	Seed   uint64 `yaml:"seed"`
	// Widths; 0 keeps the preset's.
	HiddenSize        int `yaml:"hidden_size"`
	IntermediateSize  int `yaml:"intermediate_size"`
	NumHiddenLayers   int `yaml:"num_hidden_layers"`
	NumAttentionHeads int `yaml:"num_attention_heads"`
	NumKeyValueHeads  int `yaml:"num_key_value_heads"`
	HeadDim           int `yaml:"head_dim"`
	// RopeTheta replaces the architecture's RoPE base (0 keeps it).
	RopeTheta float64 `yaml:"rope_theta"`
}

// EnvConfig selects the environment (env.Config).
type EnvConfig struct {
	// Name is a built-in environment (calc_mult, gsm8k, ...), data (dataset rows with the tools
	// below) or openenv (an OpenEnv server, see the openenv section).
	Name string `yaml:"name"`
	// MaxTurns overrides the environment's turn limit (0: its own).
	MaxTurns int `yaml:"max_turns"`
	// RewardRule is the trajectory reward: off (the rubric's weighted sum), inverse
	// (1/max_t|c_t| when format and answer are right: the multi-turn GRPO seed's rule) or scaled
	// (RewardBudget/max_t|c_t|).
	RewardRule   string `yaml:"reward_rule"`
	RewardBudget int    `yaml:"reward_budget"`
	// Domain picks the data environment's rubric: math, code, qa, general ("" per row).
	Domain string `yaml:"domain"`
	// Tools of the data environment: python, calculator, search.
	Tools []string `yaml:"tools"`
	// Corpus is a JSONL corpus for the search tool (empty: wiki_qa's generated one).
	Corpus string `yaml:"corpus"`
	// Slippery makes generated frozen lakes slippery.
	Slippery bool `yaml:"slippery"`
	// Digits and Factors shape generated calc_mult tasks: operand length, 1 to 6 (0: 3), and
	// how many numbers are multiplied, 2 to 4 (0: 2; each factor past two adds a tool turn).
	Digits  int `yaml:"digits"`
	Factors int `yaml:"factors"`
	// DirectDemos is the share of calc_mult demonstrations that answer without the calculator
	// (0 to 1; see env.Config.DirectDemos).
	DirectDemos float64 `yaml:"direct_demos"`
	// MaxToolCalls and ToolTime bound one assistant message's tool calls (0: 5 calls, 20s).
	MaxToolCalls int           `yaml:"max_tool_calls"`
	ToolTime     time.Duration `yaml:"tool_time"`
	// Python configures the python tool's sandbox.
	Python PythonConfig `yaml:"python"`
}

// PythonConfig is the python tool's sandbox (sandbox.Config); zero values keep its defaults.
type PythonConfig struct {
	Interpreter string `yaml:"interpreter"`
	// Helper is the sandbox's helper binary (default: mtgrpo-sandbox beside the binary).
	Helper       string        `yaml:"helper"`
	Wall         time.Duration `yaml:"wall"`
	CPUSeconds   int           `yaml:"cpu_seconds"`
	MemoryMB     int64         `yaml:"memory_mb"`
	Processes    int           `yaml:"processes"`
	FileMB       int64         `yaml:"file_mb"`
	DiskMB       int64         `yaml:"disk_mb"`
	OutputBytes  int           `yaml:"output_bytes"`
	OpenFiles    int           `yaml:"open_files"`
	SitePackages bool          `yaml:"site_packages"`
	ReadDirs     []string      `yaml:"read_dirs"`
	// Require lists isolation guarantees the run refuses to go without: minimal_root,
	// no_network, no_leftovers, unprivileged, memory_accounted, syscall_filter.
	Require []string `yaml:"require"`
	// BudgetMB caps the memory of all concurrent runs together (0: the sandbox's default).
	BudgetMB int64 `yaml:"budget_mb"`
}

// DataConfig says where tasks come from: dataset files in verl's layout, or the environment's
// generator.
type DataConfig struct {
	// Train and Val are parquet or JSONL files; empty means generated by the environment.
	Train string `yaml:"train"`
	Val   string `yaml:"val"`
	// TrainSize and ValSize are how many tasks to generate when there is no file.
	TrainSize int `yaml:"train_size"`
	ValSize   int `yaml:"val_size"`
	// GroundTruthFile holds the answers apart from the prompts (data.ApplyGroundTruth).
	GroundTruthFile string `yaml:"ground_truth_file"`
	// Shuffle reshuffles the training tasks every epoch (seeded).
	Shuffle bool `yaml:"shuffle"`
	// SkipInvalid skips malformed rows (counted in the log) instead of failing.
	SkipInvalid bool `yaml:"skip_invalid"`
}

// RolloutConfig is what one step generates (grpo.RolloutConfig).
type RolloutConfig struct {
	// Tasks per step (verl's data.train_batch_size) and trajectories per task (the GRPO group).
	Tasks int `yaml:"tasks"`
	Group int `yaml:"group"`
	// Sampling of every action turn.
	Temperature  float64 `yaml:"temperature"`
	TopP         float64 `yaml:"top_p"`
	TopK         int     `yaml:"top_k"`
	MinP         float64 `yaml:"min_p"`
	MaxNewTokens int     `yaml:"max_new_tokens"`
	// MaxTurns caps an episode's action turns (0: the environment's).
	MaxTurns int `yaml:"max_turns"`
	// MaxContextTokens ends an episode whose next context would be longer.
	MaxContextTokens int `yaml:"max_context_tokens"`
	// Condenser builds each turn's context.
	Condenser CondenserConfig `yaml:"condenser"`
	// MaskTruncated trains no token of an output cut by the length limit.
	MaskTruncated bool `yaml:"mask_truncated"`
	// MaxLen is the KV-cache length per sequence (0: max_context_tokens + max_new_tokens).
	MaxLen int `yaml:"max_len"`
	// Slots is how many sequences are decoded at once (0: tasks × group).
	Slots int `yaml:"slots"`
	// Workers bounds concurrent environment, tool and reward calls (0: 32).
	Workers int `yaml:"workers"`
	// ChatVars are extra chat-template variables (enable_thinking: false).
	ChatVars map[string]any `yaml:"chat_vars,omitempty"`
}

// CondenserType names a context condenser.
type CondenserType string

// Condensers (package rollout).
const (
	CondenseFull        CondenserType = "full"         // the whole history
	CondenseLastN       CondenserType = "last_n"       // the task and the last KeepLastN steps
	CondenseTokenBudget CondenserType = "token_budget" // drop old steps until MaxTokens fit
	CondenseSummary     CondenserType = "summary"      // the model summarises its history
)

var condenserTypes = []CondenserType{CondenseFull, CondenseLastN, CondenseTokenBudget, CondenseSummary}

// CondenserConfig configures the condenser.
type CondenserConfig struct {
	Type CondenserType `yaml:"type"`
	// KeepLastN steps stay in the context (last_n; summary: verbatim after the summary).
	KeepLastN int `yaml:"keep_last_n"`
	// MaxTokens is token_budget's budget and summary's trigger (0: none for summary).
	MaxTokens int `yaml:"max_tokens"`
	// SummaryEvery triggers a summary after this many steps; SummaryTokens caps it; TrainSummary
	// trains on it.
	SummaryEvery  int  `yaml:"summary_every"`
	SummaryTokens int  `yaml:"summary_tokens"`
	TrainSummary  bool `yaml:"train_summary"`
}

// AdvantageConfig is the advantage estimator (grpo.AdvConfig).
type AdvantageConfig struct {
	Estimator grpo.Estimator `yaml:"estimator"`
	Eps       float64        `yaml:"eps"`
	NormStd   bool           `yaml:"norm_std"`
	TurnCoef  float64        `yaml:"turn_coef"`
	Gamma     float64        `yaml:"gamma"`
	Lambda    float64        `yaml:"lambda"`
	BiLevel   bool           `yaml:"bi_level"`
	TurnGamma float64        `yaml:"turn_gamma"`
}

// RewardConfig puts a KL penalty into the reward (grpo.RewardConfig).
type RewardConfig struct {
	KLCoef float64     `yaml:"kl_coef"`
	KLKind grpo.KLKind `yaml:"kl_kind"`
}

// LossConfig is the policy loss (grpo.LossConfig).
type LossConfig struct {
	Policy       grpo.PolicyLoss    `yaml:"policy"`
	ClipLow      float64            `yaml:"clip_low"`
	ClipHigh     float64            `yaml:"clip_high"`
	DualClip     float64            `yaml:"dual_clip"`
	GSPOClipLow  float64            `yaml:"gspo_clip_low"`
	GSPOClipHigh float64            `yaml:"gspo_clip_high"`
	KLCoef       float64            `yaml:"kl_coef"`
	KLKind       grpo.KLKind        `yaml:"kl_kind"`
	EntropyCoef  float64            `yaml:"entropy_coef"`
	IS           grpo.ISMode        `yaml:"is"`
	ISMin        float64            `yaml:"is_min"`
	ISMax        float64            `yaml:"is_max"`
	Agg          grpo.AggMode       `yaml:"agg"`
	AggTurns     grpo.TurnWeighting `yaml:"agg_turns"`
	AggNorm      float64            `yaml:"agg_norm"`
}

// OptimConfig is AdamW and its schedule (grpo.OptimConfig).
type OptimConfig struct {
	LR          float64       `yaml:"lr"`
	Beta1       float64       `yaml:"beta1"`
	Beta2       float64       `yaml:"beta2"`
	Eps         float64       `yaml:"eps"`
	WeightDecay float64       `yaml:"weight_decay"`
	Warmup      int           `yaml:"warmup"`
	Schedule    grpo.Schedule `yaml:"schedule"`
	MinLRRatio  float64       `yaml:"min_lr_ratio"`
	MaxGradNorm float64       `yaml:"max_grad_norm"`
}

// UpdateConfig splits a step's batch into optimizer steps (grpo.UpdateConfig).
type UpdateConfig struct {
	Epochs                int  `yaml:"epochs"`
	MiniBatches           int  `yaml:"mini_batches"`
	MicroTokens           int  `yaml:"micro_tokens"`
	GradientCheckpointing bool `yaml:"gradient_checkpointing"`
}

// DAPOConfig is DAPO's dynamic sampling and overlong penalty (grpo.DAPOConfig).
type DAPOConfig struct {
	DynamicSampling bool    `yaml:"dynamic_sampling"`
	MaxGenBatches   int     `yaml:"max_gen_batches"`
	OverlongLen     int     `yaml:"overlong_len"`
	OverlongFactor  float64 `yaml:"overlong_factor"`
}

// CriticConfig is the PPO critic's optimisation (grpo.CriticConfig).
type CriticConfig struct {
	LR          float64 `yaml:"lr"`
	Warmup      int     `yaml:"warmup"`
	ValueClip   float64 `yaml:"value_clip"`
	MaxGradNorm float64 `yaml:"max_grad_norm"`
}

// SFTConfig is the supervised warm-up before RL, on the environment's demonstrations.
type SFTConfig struct {
	// Steps of SFT (0: none). Each is one optimizer step on Batch demonstrations.
	Steps int     `yaml:"steps"`
	LR    float64 `yaml:"lr"`
	// Warmup is the number of steps over which the learning rate rises linearly to LR.
	Warmup int `yaml:"warmup"`
	// Schedule after warmup: constant, or cosine down to MinLRRatio·LR at the last SFT step (a
	// warm-up that ends at a small rate ends in a settled model, not wherever the last steps at
	// full rate left it).
	Schedule   grpo.Schedule `yaml:"schedule"`
	MinLRRatio float64       `yaml:"min_lr_ratio"`
	Batch      int           `yaml:"batch"`
	// Tasks is how many training tasks are demonstrated (cycled through by the steps).
	Tasks int `yaml:"tasks"`
	// PerfectFirst is the share (0 to 1) of the SFT steps, the first ones, that train on the
	// perfect demonstrations only; the rest train on the environment's mix, imperfect ones
	// included (env.direct_demos). 0: every step trains on the mix.
	PerfectFirst float64 `yaml:"perfect_first"`
}

// TrainConfig is the training loop's length and cadence.
type TrainConfig struct {
	// Steps of RL (0: Epochs passes over the training tasks).
	Steps  int `yaml:"steps"`
	Epochs int `yaml:"epochs"`
	// EvalEvery runs the validation set every N steps (0: only before and after training).
	EvalEvery int `yaml:"eval_every"`
	// CheckpointEvery saves a checkpoint every N steps (0: only at the end); KeepCheckpoints
	// keeps the newest K (0: all).
	CheckpointEvery int `yaml:"checkpoint_every"`
	KeepCheckpoints int `yaml:"keep_checkpoints"`
	// Samples is how many trajectories per step are written to RUN/samples.
	Samples int `yaml:"samples"`
	// Export writes the trained model to RUN/model at the end, in ExportDType ("": as trained).
	Export      bool   `yaml:"export"`
	ExportDType string `yaml:"export_dtype"`
	// Report writes RUN/report.html at the end.
	Report bool `yaml:"report"`
}

// EvalConfig is how the validation set is played (grpo.EvalConfig).
type EvalConfig struct {
	// Samples per task: 1 for accuracy, n > 1 adds pass@n.
	Samples int `yaml:"samples"`
	// Greedy decoding; otherwise Temperature and TopP sample.
	Greedy      bool    `yaml:"greedy"`
	Temperature float64 `yaml:"temperature"`
	TopP        float64 `yaml:"top_p"`
	// Before evaluates the starting model (and after SFT) so the summary can compare.
	Before bool `yaml:"before"`
}

// ProfilingConfig adds the rollout's time split to every step's metrics (profile/*_s).
type ProfilingConfig struct {
	Enable       bool `yaml:"enable"`
	Rewards      bool `yaml:"rewards"`
	Condensation bool `yaml:"condensation"`
}

// Defaults is the configuration before any preset: the trainer's defaults (grpo.Defaults), the
// calc_mult tool task generated in-process, and a run that evaluates before and after, checkpoints
// at the end, exports and writes its report.
func Defaults() *Config {
	g := grpo.Defaults()
	r, a, l, o := g.Rollout, g.Advantage, g.Loss, g.Optim
	return &Config{
		RunDir: "runs/train",
		Device: "cpu",
		Env:    EnvConfig{Name: "calc_mult", RewardRule: "off"},
		Data:   DataConfig{TrainSize: 2048, ValSize: 64, Shuffle: true},
		Rollout: RolloutConfig{Tasks: r.Tasks, Group: r.Group, Temperature: r.Sampling.Temperature, TopP: 1,
			MaxNewTokens: r.Sampling.MaxNewTokens, MaxContextTokens: r.MaxContextTokens,
			Condenser: CondenserConfig{Type: CondenseFull}},
		Advantage: AdvantageConfig{Estimator: a.Estimator, Eps: a.Eps, NormStd: a.NormStd, TurnCoef: a.TurnCoef,
			Gamma: a.GAE.Gamma, Lambda: a.GAE.Lambda, BiLevel: a.GAE.BiLevel, TurnGamma: a.GAE.TurnGamma},
		Reward: RewardConfig{KLCoef: g.Reward.KLCoef, KLKind: g.Reward.KLKind},
		Loss: LossConfig{Policy: l.Policy, ClipLow: l.ClipLow, ClipHigh: l.ClipHigh, DualClip: l.DualClip,
			GSPOClipLow: l.GSPOClipLow, GSPOClipHigh: l.GSPOClipHigh, KLCoef: l.KLCoef, KLKind: l.KLKind,
			EntropyCoef: l.EntropyCoef, IS: l.IS, ISMin: l.ISMin, ISMax: l.ISMax, Agg: l.Agg.Mode,
			AggTurns: l.Agg.Turns, AggNorm: l.Agg.Norm},
		Optim: OptimConfig{LR: o.LR, Beta1: o.Beta1, Beta2: o.Beta2, Eps: o.Eps, WeightDecay: o.WeightDecay,
			Warmup: o.Warmup, Schedule: o.Schedule, MinLRRatio: o.MinLRRatio, MaxGradNorm: o.MaxGradNorm},
		Update: UpdateConfig{Epochs: g.Update.Epochs, MiniBatches: g.Update.MiniBatches, MicroTokens: g.Update.MicroTokens},
		DAPO: DAPOConfig{DynamicSampling: g.DAPO.DynamicSampling, MaxGenBatches: g.DAPO.MaxGenBatches,
			OverlongLen: g.DAPO.OverlongLen, OverlongFactor: g.DAPO.OverlongFactor},
		Critic: CriticConfig{LR: g.Critic.LR, Warmup: g.Critic.Warmup, ValueClip: g.Critic.ValueClip,
			MaxGradNorm: g.Critic.MaxGradNorm},
		SFT:   SFTConfig{LR: 1e-4, Schedule: grpo.Constant, Batch: 16, Tasks: 256},
		Train: TrainConfig{Epochs: 1, KeepCheckpoints: 2, Samples: 4, Export: true, Report: true},
		Eval:  EvalConfig{Samples: 1, Greedy: true, Temperature: 1, TopP: 1, Before: true},
	}
}
