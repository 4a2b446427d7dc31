package job

import (
	"context"
	"fmt"

	"github.com/mtgrpo/mtgrpo/cmd/internal/config"
	"github.com/mtgrpo/mtgrpo/cmd/internal/inputs"
	"github.com/mtgrpo/mtgrpo/cmd/internal/progress"
	rundir "github.com/mtgrpo/mtgrpo/cmd/internal/run"
	"github.com/mtgrpo/mtgrpo/env"
	"github.com/mtgrpo/mtgrpo/grpo"
	"github.com/mtgrpo/mtgrpo/rollout"
	"github.com/mtgrpo/mtgrpo/tokenizer"
)

// validate plays the validation tasks on gen with the run's evaluation settings and returns the
// val/ metrics and the trajectories. Run on the torch thread.
// With d, the ranks share the tasks (every rank gets the whole set's metrics).
func validate(ctx context.Context, c *config.Config, gen rollout.Generator, tok *tokenizer.Tokenizer,
	envs *env.Environment, tasks []env.Task, d *grpo.Dist, agents *agentRunner) (grpo.Metrics, []*rollout.Trajectory, error) {
	ec, err := c.EvalRun()
	if err != nil {
		return nil, nil, err
	}
	ec.Runner = agents.runner()
	ec.Dist = d // the environment's session limit applies within grpo.Evaluate
	return grpo.Evaluate(ctx, gen, tok, envs, tasks, ec)
}

// evaluate adds the validation metrics to a step's metrics and logs the headline numbers.
func (j *job) evaluate(ctx context.Context, m grpo.Metrics, label string) error {
	j.gen.Begin(fmt.Sprintf("step %d eval", j.st.Step))
	val, trajs, err := validate(ctx, j.cfg, j.gen, j.policy.Tok, j.envs, j.data.val, j.o.Dist, j.agents)
	j.gen.End()
	if err != nil {
		return fmt.Errorf("eval at step %d: %w", j.st.Step, err)
	}
	if n, why := rollout.Failures(trajs); n > 0 {
		j.log.Warn().Int("step", j.st.Step).Int("failed", n).Int("episodes", len(trajs)).Str("why", why).
			Msgf("eval at step %d: %d of %d episodes failed (scored 0)", j.st.Step, n, len(trajs))
	}
	for k, v := range val {
		m[k] = v
	}
	ev := j.log.Info().Int("step", j.st.Step).Int("tasks", len(j.data.val))
	for _, k := range []string{grpo.ValScore, grpo.ValFormat, grpo.ValAccuracy, grpo.ValAccuracyStrict, grpo.ValPass1} {
		if v, ok := val[k]; ok {
			ev = rundir.Field(ev, k, v)
		}
	}
	if label == "" {
		label = fmt.Sprintf("step %d", j.st.Step)
	}
	ev.Msg("eval: " + label)
	return nil
}

// evalOnly evaluates and records the result as step's metrics (step 0: the starting model).
func (j *job) evalOnly(ctx context.Context, step int, label string) error {
	m := grpo.Metrics{}
	if err := j.evaluate(ctx, m, label); err != nil {
		return err
	}
	if !j.main() {
		return nil
	}
	return j.run.Step(step, rundir.Metrics(m))
}

// EvalOptions say what to evaluate.
type EvalOptions struct {
	Config *config.Config
	// Model is the model directory (a checkpoint's model/ or any model).
	Model string
	// Adapter is a LoRA adapter directory to apply to Model ("": none).
	Adapter string
	Bars    *progress.Bars
}

// Eval plays the validation set of c on a model and returns the val/ metrics and the
// trajectories. Run on the torch thread.
func Eval(ctx context.Context, o EvalOptions) (grpo.Metrics, []*rollout.Trajectory, error) {
	c := o.Config
	envs, ext, err := externalOpen(ctx, c, c.EnvConfig(nil))
	if err != nil {
		return nil, nil, err
	}
	defer ext.Close()
	tasks, _, err := loadTasks(c.Data.Val, true, c.Data.ValSize, int64(c.Seed)^valSeedSalt, c, envs)
	inputs.Release()
	if err != nil {
		return nil, nil, fmt.Errorf("validation data: %w", err)
	}
	p, err := openPolicy(o.Model, o.Adapter, c, false, o.Bars)
	if err != nil {
		return nil, nil, err
	}
	defer p.Close()
	gen := progress.NewPhases(p.Engine, o.Bars)
	agents, err := openAgents(c, p, gen, nil)
	if err != nil {
		return nil, nil, err
	}
	defer agents.Close()
	gen.Begin("eval")
	defer gen.End()
	return validate(ctx, c, gen, p.Tok, envs, tasks, nil, agents)
}
