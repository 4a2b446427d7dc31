package config

import (
	"github.com/mtgrpo/mtgrpo/cmd/internal/modelinit"
	"github.com/mtgrpo/mtgrpo/env"
	"github.com/mtgrpo/mtgrpo/env/agent"
	"github.com/mtgrpo/mtgrpo/env/extreward"
	"github.com/mtgrpo/mtgrpo/env/mcp"
	"github.com/mtgrpo/mtgrpo/env/openenv"
	"github.com/mtgrpo/mtgrpo/env/sandbox"
	"github.com/mtgrpo/mtgrpo/grpo"
	"github.com/mtgrpo/mtgrpo/grpo/algo"
	"github.com/mtgrpo/mtgrpo/model"
	"github.com/mtgrpo/mtgrpo/rollout"
)

// Config is one run's resolved configuration: what train, eval and demo run from, printed at
// start and saved as RUN/config.yaml. Field names are the YAML keys (docs/config.md lists every
// key, its default and the seed-project keys that map onto it).
type Config struct {
	// Preset names the preset this configuration started from (general, math, mt-grpo).
	Preset string `yaml:"preset"`
	// Model is the policy's model directory (Hugging Face layout) or Hub id ORG/NAME[@REVISION]
	// (resolved by model/hub in the command). Empty with Init set: a random
	// model of Init's shape is written into RUN/base-model first.
	Model string `yaml:"model"`
	// Init describes the random model written when Model is empty: an architecture at a preset's
	// size (model presets: tiny, qwen2.5-0.5b, llama3.2-1b), with any of the widths overridden.
	Init *modelinit.Spec `yaml:"init,omitempty"`
	// CriticModel is the critic's starting weights for the gae estimator (empty: Model).
	CriticModel string `yaml:"critic_model,omitempty"`
	// LoRA, with a rank > 0, trains low-rank adapters on the policy's linear layers instead of the
	// whole model (model.LoRAConfig): the base stays frozen in its dtype, the KL reference is the
	// base with the adapters switched off, checkpoints and the export hold the adapters in PEFT's
	// layout (docs/models.md).
	LoRA model.LoRAConfig `yaml:"lora"`
	// CriticLoRA, with a rank > 0, trains adapters on the critic's linear layers (and its value
	// head whole) instead of the whole critic: its own setting, as verl's critic.model.lora_rank,
	// independent of the policy's.
	CriticLoRA model.LoRAConfig `yaml:"critic_lora"`
	// RunDir receives config.yaml, metrics, the log, samples, checkpoints and the exported model.
	RunDir string `yaml:"run_dir"`
	// Device is cpu, cuda or cuda:N; DType the compute dtype ("" is float32 on cpu, the
	// checkpoint's own dtype elsewhere).
	Device string `yaml:"device"`
	DType  string `yaml:"dtype"`
	// Seed drives generated data, sampling and shuffles; a random model's weights come from init.seed.
	Seed uint64 `yaml:"seed"`

	Env       EnvConfig          `yaml:"env"`
	Data      DataConfig         `yaml:"data"`
	Rollout   RolloutConfig      `yaml:"rollout"`
	Advantage algo.AdvConfig     `yaml:"advantage"`
	Reward    grpo.RewardConfig  `yaml:"reward"`
	Loss      grpo.LossConfig    `yaml:"loss"`
	Optim     grpo.OptimConfig   `yaml:"optim"`
	Update    grpo.UpdateConfig  `yaml:"update"`
	DAPO      grpo.DAPOConfig    `yaml:"dapo"`
	Critic    grpo.CriticConfig  `yaml:"critic"`
	SFT       grpo.SFTConfig     `yaml:"sft"`
	Train     TrainConfig        `yaml:"train"`
	Eval      EvalConfig         `yaml:"eval"`
	Profiling grpo.ProfileConfig `yaml:"profiling"`
	Dist      DistConfig         `yaml:"dist"`

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
	// layouts records where each foreign family's first key was given (Family.Implies);
	// foreignSeen where each foreign key was.
	layouts     map[string]string
	foreignSeen map[string]string
}

// DistConfig is data-parallel training's settings (grpo.DistConfig, its keys inlined;
// docs/distributed.md) and dist.zero1, the older spelling of zero_stage 1. They apply when the run
// has several processes (torchrun, srun, --nproc).
type DistConfig struct {
	grpo.DistConfig `yaml:",inline"`
	// Zero1 true is zero_stage 1 (an older spelling).
	Zero1 bool `yaml:"zero1"`
}

// EnvConfig selects the environment and configures it: env.Config's keys (max_turns,
// reward_rule, tools, ...) beside the program's name and python sandbox.
type EnvConfig struct {
	// Name is a built-in environment (calc_mult, gsm8k, ...), data (dataset rows with the tools
	// in env.tools) or openenv (an OpenEnv server, see the openenv section).
	Name       string `yaml:"name"`
	env.Config `yaml:",inline"`
	// Python configures the python tool's sandbox, in megabytes and guarantee names
	// (env.Config.Python is the sandbox.Config these settings make).
	Python sandbox.Settings `yaml:"python"`
	// Agent, when set, plays every episode with an agent program calling the policy through an
	// OpenAI-compatible endpoint (package env/agent; docs/agents.md): Name's environment gives
	// the tasks and, with agent.reward task, the reward.
	Agent *agent.Config `yaml:"agent,omitempty"`
}

// DataConfig says where tasks come from: dataset files in verl's layout, or the environment's
// generator.
type DataConfig struct {
	// Train and Val are parquet or JSONL files (several: their rows in order); empty means
	// generated by the environment.
	Train Files `yaml:"train"`
	Val   Files `yaml:"val"`
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

// RolloutConfig is what one step generates: the trainer's rollout settings (grpo.RolloutConfig;
// rollout.temperature 0 decodes greedily), the condenser's section and the engine's slots.
type RolloutConfig struct {
	grpo.RolloutConfig `yaml:",inline"`
	// Condenser builds each turn's context.
	Condenser rollout.CondenserConfig `yaml:"condenser"`
	// Slots is how many sequences are decoded at once (0: tasks × group).
	Slots int `yaml:"slots"`
	// CUDAGraphs replays the decode step from CUDA graphs on a CUDA device (verl's enforce_eager
	// false); false decodes eagerly. No effect on the CPU, which always decodes eagerly.
	CUDAGraphs bool `yaml:"cuda_graphs"`
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
	// Checkpoint false writes no checkpoint at all, not even at the end or on a signal (the run
	// cannot be resumed): for measurements whose full state would not fit the disk.
	Checkpoint bool `yaml:"checkpoint"`
	// Samples is how many trajectories per step are written to RUN/samples.
	Samples int `yaml:"samples"`
	// Export writes the trained model to RUN/model at the end, in ExportDType ("": as trained).
	Export      bool   `yaml:"export"`
	ExportDType string `yaml:"export_dtype"`
	// Report writes RUN/report.html at the end.
	Report bool `yaml:"report"`
}

// EvalConfig is how the validation set is played (grpo.EvalConfig, its keys inlined) and when.
type EvalConfig struct {
	grpo.EvalConfig `yaml:",inline"`
	// Before evaluates the starting model (and after SFT) so the summary can compare.
	Before bool `yaml:"before"`
}

// Defaults is the configuration before any preset: the trainer's defaults (grpo.Defaults), the
// calc_mult tool task generated in-process, and a run that evaluates before and after, checkpoints
// at the end, exports and writes its report.
func Defaults() *Config {
	g := grpo.Defaults()
	return &Config{
		RunDir:     "runs/train",
		Device:     "cpu",
		Env:        EnvConfig{Name: "calc_mult", Config: env.Config{RewardRule: env.RuleOff}},
		Data:       DataConfig{TrainSize: 2048, ValSize: 64, Shuffle: true},
		Rollout:    RolloutConfig{RolloutConfig: g.Rollout, Condenser: rollout.CondenserConfig{Type: rollout.CondenseFull}, CUDAGraphs: true},
		Advantage:  g.Advantage,
		Reward:     g.Reward,
		Loss:       g.Loss,
		Optim:      g.Optim,
		Update:     g.Update,
		DAPO:       g.DAPO,
		Critic:     g.Critic,
		LoRA:       model.DefaultLoRA(),
		CriticLoRA: model.DefaultLoRA(),
		SFT:        grpo.DefaultSFTConfig(),
		Train:      TrainConfig{Epochs: 1, KeepCheckpoints: 2, Checkpoint: true, Samples: 4, Export: true, Report: true},
		Eval:       EvalConfig{EvalConfig: grpo.DefaultEvalConfig(), Before: true},
	}
}
