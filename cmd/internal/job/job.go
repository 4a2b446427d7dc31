package job

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"

	"github.com/mtgrpo/mtgrpo/cmd/internal/config"
	"github.com/mtgrpo/mtgrpo/cmd/internal/modelinit"
	"github.com/mtgrpo/mtgrpo/cmd/internal/progress"
	rundir "github.com/mtgrpo/mtgrpo/cmd/internal/run"
	"github.com/mtgrpo/mtgrpo/cmd/internal/setup"
	"github.com/mtgrpo/mtgrpo/env"
	"github.com/mtgrpo/mtgrpo/env/external"
	"github.com/mtgrpo/mtgrpo/grpo"
	"github.com/mtgrpo/mtgrpo/internal/staged"
	"github.com/mtgrpo/mtgrpo/model"
	"github.com/mtgrpo/mtgrpo/torch"
)

// Options say what to train and where to report.
type Options struct {
	Config *config.Config
	// ModelDir and CriticDir are the directories of Config.Model and Config.CriticModel when the
	// command resolved them elsewhere (a Hugging Face Hub id to its snapshot in the cache); ""
	// reads the configured paths as directories.
	ModelDir, CriticDir string
	// Checkpoint is the checkpoint directory to continue from ("" starts from the beginning).
	Checkpoint string
	// Resume reopens a run directory that already holds a run (metrics after the checkpoint's
	// step are dropped: they are trained again).
	Resume bool
	// Console receives the log beside RUN/train.log (nil: the file only).
	Console *os.File
	// Bars draws progress bars (nil or off: none).
	Bars *progress.Bars
	// Out receives the resolved configuration at the start and the summary at the end.
	Out io.Writer
	// Stop, when it delivers a signal, ends training after the current step with a checkpoint.
	Stop <-chan os.Signal
	// Dist is this process's place in data-parallel training (nil: a single process). Every rank
	// runs the same job; only the main rank writes the run directory (config, metrics, log,
	// samples, checkpoints, export, report) and prints; the others log warnings and errors to
	// Console.
	Dist *grpo.Dist
}

// Files and directories a run adds to the run directory (package run writes the others).
const (
	BaseModelDir = "base-model" // the random model of an init: section
	ModelDir     = "model"      // the trained model, exported at the end
	AdapterDir   = "adapter"    // instead of model with LoRA: the trained adapters (PEFT's layout)
)

// job is one training run in progress.
type job struct {
	o    Options
	cfg  *config.Config
	run  *rundir.Run
	log  zerolog.Logger
	envs *env.Environment
	ext  io.Closer
	data *datasets
	src  *taskSource

	baseDir string            // the model training started from
	base    model.AdapterBase // the base as adapters name it (LoRA)
	// criticBase is the fingerprint of the critic's base weights when it trains adapters.
	criticBase string
	policy     *setup.Policy
	gen        *progress.Phases
	agents     *agentRunner // nil unless env.agent is set
	ref        *model.Model
	critic     *grpo.Critic
	cmodel     *model.Model

	st state // the position: steps done, data position, trainer progress
	// restorePhase is the phase whose trainer takes the checkpoint's State when it starts ("":
	// none; cleared once restored, so a later phase starts fresh).
	restorePhase      string
	sftSteps, rlSteps int
	steps             *progress.Steps // the step bar: phase, step, time left
	start             time.Time
}

// open prepares everything the loop needs; on an error, close releases what was opened.
func (j *job) open(ctx context.Context) error {
	j.start = time.Now()
	resumeStep := -1 // resuming without a checkpoint starts over: nothing logged is kept
	if j.o.Checkpoint != "" {
		st, err := readState(j.o.Checkpoint)
		if err != nil {
			return err
		}
		j.st, resumeStep, j.restorePhase = st, st.Step, st.Phase
	}
	if err := checkInputs(j.cfg, j.modelDir(), j.criticDir()); err != nil {
		return err
	}
	if !j.main() {
		return j.openRank(ctx)
	}
	var err error
	j.run, err = rundir.Open(rundir.Options{Dir: j.cfg.RunDir, Config: j.cfg, Console: j.o.Console,
		Resume: j.o.Resume || j.o.Checkpoint != "", ResumeStep: resumeStep, KeepCheckpoints: j.cfg.Train.KeepCheckpoints})
	if err != nil {
		return err
	}
	j.log = j.run.Log
	if err := staged.Sweep(j.cfg.RunDir); err != nil { // a killed run's half-written model directories
		return err
	}
	fmt.Fprintf(j.out(), "mtgrpo train: run %s\n%s\n", j.cfg.RunDir, j.cfg.Compact())
	j.log.Info().Str("file", filepath.Join(j.cfg.RunDir, rundir.ConfigFile)).Msg("configuration saved")
	for _, w := range j.cfg.Warnings() { // keys accepted without effect
		j.log.Warn().Msg(w)
	}
	if j.o.Checkpoint != "" {
		j.log.Info().Str("checkpoint", j.o.Checkpoint).Int("step", j.st.Step).Msg("resuming")
		j.logChanges()
	}
	return j.openRest(ctx)
}

// openRank is open on a rank that does not write the run directory: its log goes to Console,
// warnings and errors only, marked with the rank.
func (j *job) openRank(ctx context.Context) error {
	var w io.Writer = io.Discard
	if j.o.Console != nil {
		w = zerolog.ConsoleWriter{Out: j.o.Console, NoColor: true}
	}
	j.log = zerolog.New(w).Level(zerolog.WarnLevel).With().Timestamp().Int("rank", j.o.Dist.Rank()).Logger()
	return j.openRest(ctx)
}

// main reports whether this process writes the run directory.
func (j *job) main() bool { return j.o.Dist.IsMain() }

// openRest opens the environment, the data and the models: every rank alike.
func (j *job) openRest(ctx context.Context) error {
	var err error
	if err := j.openEnv(ctx); err != nil {
		return err
	}
	if j.data, err = loadDatasets(j.cfg, j.envs); err != nil {
		return err
	}
	for _, n := range j.data.notes {
		j.log.Warn().Msg(n)
	}
	j.src = newTaskSource(j.data.train, j.cfg.Data.Shuffle, j.cfg.Seed, j.st.DataPos)
	j.sftSteps, j.rlSteps = j.cfg.SFT.Steps, j.cfg.RLSteps(len(j.data.train))
	j.log.Info().Int("train_tasks", len(j.data.train)).Int("val_tasks", len(j.data.val)).Int("sft_steps", j.sftSteps).
		Int("rl_steps", j.rlSteps).Msg("data")
	return j.openModels()
}

// checkInputs checks that the directories and files the configuration names exist, before the
// run directory is touched: a mistyped path leaves nothing behind.
func checkInputs(c *config.Config, modelDir, criticDir string) error {
	checks := []struct{ key, path, must string }{
		{"model", modelDir, "config.json"}, {"critic_model", criticDir, "config.json"}, {"data.ground_truth_file", c.Data.GroundTruthFile, ""},
	}
	for _, d := range []struct {
		key   string
		files config.Files
	}{{"data.train", c.Data.Train}, {"data.val", c.Data.Val}} {
		for _, f := range d.files {
			checks = append(checks, struct{ key, path, must string }{d.key, f, ""})
		}
	}
	for _, f := range checks {
		if f.path == "" {
			continue
		}
		p := filepath.Join(f.path, f.must)
		if _, err := os.Stat(p); err != nil {
			if f.must != "" {
				return fmt.Errorf("%s %s: not a model directory: %w", f.key, f.path, err)
			}
			return fmt.Errorf("%s: %w", f.key, err)
		}
	}
	return nil
}

// modelDir is the directory of the configured policy model ("" for an init: section's).
func (j *job) modelDir() string {
	if j.o.ModelDir != "" {
		return j.o.ModelDir
	}
	return j.cfg.Model
}

// criticDir is the directory of the configured critic model ("": the policy's).
func (j *job) criticDir() string {
	if j.o.CriticDir != "" {
		return j.o.CriticDir
	}
	return j.cfg.CriticModel
}

// logChanges warns about settings that differ from the checkpoint's: the run continues with them.
func (j *job) logChanges() {
	saved, err := config.ReadSaved(filepath.Join(j.o.Checkpoint, rundir.ConfigFile))
	if err != nil {
		j.log.Warn().Err(err).Msg("the checkpoint's configuration cannot be read")
		return
	}
	if d := config.Diff(saved, j.cfg); len(d) > 0 {
		j.log.Warn().Strs("changed", d).Msg("resuming with settings that differ from the checkpoint's")
	}
}

func (j *job) out() io.Writer {
	if j.o.Out == nil {
		return io.Discard
	}
	return j.o.Out
}

// openEnv opens the environment with its outside parts (MCP servers, OpenEnv, external reward).
func (j *job) openEnv(ctx context.Context) error {
	ec := j.cfg.EnvConfig(func(s string) { j.log.Info().Msg(s) })
	var err error
	if j.envs, j.ext, err = externalOpen(ctx, j.cfg, ec); err != nil {
		return err
	}
	j.log.Info().Str("env", j.envs.Name).Bool("multi_turn", j.envs.MultiTurn).Int("max_concurrent", j.envs.MaxConcurrent).
		Msg(j.envs.Description)
	return nil
}

// externalOpen opens the configured environment; the closer is never nil.
func externalOpen(ctx context.Context, c *config.Config, ec env.Config) (*env.Environment, io.Closer, error) {
	envs, ext, err := external.Open(ctx, c.Env.Name, ec, c.External())
	if err != nil {
		return nil, ext, fmt.Errorf("environment %s: %w", c.Env.Name, err)
	}
	return envs, ext, nil
}

// openPolicy loads a model with its engine, as the configuration says, with the LoRA adapters of
// adapter ("": none) and, to train, the lora: section's (fresh ones, or those adapter must hold).
// Run on the torch thread.
func openPolicy(dir, adapter string, c *config.Config, trainable bool, bars *progress.Bars) (*setup.Policy, error) {
	o := setup.Options{Dir: dir, Adapter: adapter, Device: c.Device, DType: c.DType, Slots: c.Slots(),
		MaxLen: c.MaxLen(), Seed: c.Seed, Trainable: trainable, Eager: !c.Rollout.CUDAGraphs, Progress: &progress.Load{Bars: bars}, Parked: c.ParkedSlots()}
	if trainable {
		o.LoRA = c.PolicyLoRA()
	}
	p, err := setup.Open(o)
	if err != nil {
		return nil, fmt.Errorf("model %s: %w", dir, err)
	}
	return p, nil
}

// openModels loads the policy (from the checkpoint when resuming), the reference model when a
// KL term needs one, and the critic for gae. Run on the torch thread.
func (j *job) openModels() error {
	var err error
	if j.baseDir, err = j.baseModel(); err != nil {
		return err
	}
	dir, adapter := j.baseDir, ""
	if j.o.Checkpoint != "" {
		if dir, adapter, err = checkpointPolicy(j.o.Checkpoint, j.baseDir, j.cfg); err != nil {
			return err
		}
	}
	if j.cfg.PolicyLoRA() != nil {
		if j.base, err = adapterBase(j.cfg, j.o.ModelDir != "", j.baseDir); err != nil {
			return err
		}
	}
	if j.policy, err = openPolicy(dir, adapter, j.cfg, true, j.o.Bars); err != nil {
		return err
	}
	j.policy.Model.SetLoRAPasses(j.st.LoRAPasses)
	j.policy.Backend.Warn = func(msg string) { j.log.Warn().Msg(msg) }
	// Exports (checkpoints, the final model) copy the tokenizer files from the base model, which
	// outlives any checkpoint (the oldest are removed as training goes on).
	j.policy.Model.TokenizerDir = j.baseDir
	j.gen = progress.NewPhases(j.policy.Engine, j.o.Bars)
	if j.agents, err = openAgents(j.cfg, j.policy, j.gen, func(s string) { j.log.Warn().Msg(s) }); err != nil {
		return err
	}
	j.log.Info().Str("model", dir).Int64("parameters", j.policy.Model.NumParameters()).Str("dtype", j.policy.Model.DType.String()).
		Str("device", j.cfg.Device).Str("blas", torch.BLASKernels()).Msg("policy loaded")
	if l := j.policy.Model.LoRA(); l != nil {
		var n int64
		for _, p := range j.policy.Model.Parameters() {
			n += p.Tensor.Numel()
		}
		j.log.Info().Int("rank", l.Rank).Float64("alpha", l.Alpha).Strs("targets", l.Targets()).Int64("trainable", n).
			Str("adapters", adapter).Msg("LoRA adapters: the base is frozen")
	}
	g, err := j.cfg.Trainer()
	if err != nil {
		return err
	}
	if g.NeedsReference() && j.policy.Model.LoRA() == nil { // with LoRA: the base, adapters off
		if j.ref, err = model.Load(j.baseDir, model.Options{Device: j.cfg.Device, DType: j.policy.Model.DType.String()}); err != nil {
			return fmt.Errorf("reference model: %w", err)
		}
	}
	if g.NeedsCritic() {
		cdir := j.criticDir()
		if cdir == "" {
			cdir = j.baseDir
		}
		if j.cmodel, err = model.Load(cdir, model.Options{Device: j.cfg.Device, DType: j.policy.Model.DType.String()}); err != nil {
			return fmt.Errorf("critic model: %w", err)
		}
		if l := j.cfg.CriticLoRAConfig(); l != nil { // its own adapters; the value head trains whole
			if err := j.cmodel.AddAdapters(*l, j.cfg.Seed+1); err != nil {
				return fmt.Errorf("critic model: %w", err)
			}
			if j.criticBase, err = model.Fingerprint(cdir); err != nil {
				return fmt.Errorf("critic model: %w", err)
			}
			j.cmodel.SetLoRAPasses(j.st.CriticLoRAPasses)
		}
		if j.critic, err = grpo.NewCritic(j.cmodel); err != nil {
			return err
		}
	}
	return nil
}

// baseModel is the model training starts from: the configured directory, or the random model of
// the init: section, written into RUN/base-model the first time.
func (j *job) baseModel() (string, error) {
	if dir := j.modelDir(); dir != "" {
		return dir, nil
	}
	dir := filepath.Join(j.cfg.RunDir, BaseModelDir)
	if pg := j.o.Dist.ProcessGroup(); pg != nil {
		// The main rank writes the random model; the others read it once it is there.
		var err error
		if j.main() {
			dir, err = j.writeBaseModel(dir)
		}
		if berr := j.collective("waiting for rank 0's random model", func() error { pg.Barrier(); return nil }); berr != nil && err == nil {
			err = fmt.Errorf("init: %w", berr)
		}
		return dir, err
	}
	return j.writeBaseModel(dir)
}

// writeBaseModel writes the random model of the init: section into dir, unless it is there.
func (j *job) writeBaseModel(dir string) (string, error) {
	if _, err := os.Stat(filepath.Join(dir, "config.json")); err == nil {
		return dir, nil
	}
	d, err := staged.Begin(dir)
	if err != nil {
		return "", fmt.Errorf("init: %w", err)
	}
	defer d.Discard()
	params, err := modelinit.Write(d.Path, *j.cfg.Init)
	if err != nil {
		return "", fmt.Errorf("init: %w", err)
	}
	if err := d.Commit(); err != nil {
		return "", fmt.Errorf("init: %w", err)
	}
	j.log.Info().Str("dir", dir).Int64("parameters", params).Str("arch", j.cfg.Init.Arch).Str("preset", j.cfg.Init.Preset).
		Msg("random model written")
	return dir, nil
}

// close releases everything open; safe after a partial open.
func (j *job) close() error {
	var errs []error
	if j.critic != nil {
		j.critic.Close()
	}
	for _, m := range []*model.Model{j.cmodel, j.ref} {
		if m != nil {
			m.Close()
		}
	}
	if j.agents != nil {
		errs = append(errs, j.agents.Close())
	}
	if j.policy != nil {
		j.policy.Close()
	}
	if j.ext != nil {
		errs = append(errs, j.ext.Close())
	}
	if j.run != nil {
		errs = append(errs, j.run.Close())
	}
	return errors.Join(errs...)
}
