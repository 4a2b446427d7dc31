package job

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"syscall"

	rundir "github.com/mtgrpo/mtgrpo/cmd/internal/run"
	"github.com/mtgrpo/mtgrpo/grpo"
	"github.com/mtgrpo/mtgrpo/rollout"
	"github.com/mtgrpo/mtgrpo/torch"
)

// StoppedError reports a run stopped by a signal after a step, with a checkpoint to resume from.
type StoppedError struct {
	Signal os.Signal
	Step   int
	RunDir string
}

func (e *StoppedError) Error() string {
	return fmt.Sprintf("stopped by %v after step %d (checkpoint saved); continue with: mtgrpo train --resume --run-dir %s",
		e.Signal, e.Step, e.RunDir)
}

// ExitCode is the conventional status of a process ended by the signal: 128 + its number.
func (e *StoppedError) ExitCode() int {
	if s, ok := e.Signal.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 1
}

// Train runs a training job: the optional SFT warm-up, the RL steps, evaluation, checkpoints,
// the exported model, the report and the summary. Run it on the torch thread.
func Train(ctx context.Context, o Options) (err error) {
	j := &job{o: o, cfg: o.Config}
	defer func() {
		if err != nil && j.run != nil && !errors.As(err, new(*StoppedError)) {
			j.run.Failed(err)
		}
		if cerr := j.close(); err == nil {
			err = cerr
		}
	}()
	defer ExplainTorch(&err)
	defer torch.Recover(&err) // runs first: a failed op's panic becomes the error the log above gets
	if err := j.open(ctx); err != nil {
		return err
	}
	j.steps = o.Bars.Steps()
	defer j.steps.Done()
	if j.st.Step == 0 && j.cfg.Eval.Before {
		if err := j.evalOnly(ctx, 0, "before training"); err != nil {
			return err
		}
	}
	if err := j.sft(ctx); err != nil {
		return err
	}
	if err := j.rl(ctx); err != nil {
		return err
	}
	return j.finish()
}

// sft runs the supervised warm-up steps on the environment's demonstrations, then saves the
// boundary checkpoint from which RL starts.
func (j *job) sft(ctx context.Context) error {
	if j.st.Step >= j.sftSteps {
		return nil
	}
	g, err := j.cfg.SFTTrainer()
	if err != nil {
		return err
	}
	tr, err := grpo.New(grpo.Models{Policy: j.policy.Model}, j.gen, j.policy.Tok, j.envs, g, grpo.WithDist(j.o.Dist))
	if err != nil {
		return err
	}
	defer tr.Close()
	if err := j.restoreInto(tr, phaseSFT); err != nil {
		return err
	}
	demos, perfect, perfectSteps, err := j.demonstrations(ctx, g.Rollout)
	if err != nil {
		return err
	}
	j.steps.Phase("sft", 0, j.sftSteps, j.st.Step)
	for j.st.Step < j.sftSteps {
		k := j.st.Step // the k-th SFT step takes the next Batch demonstrations, cycling
		from := demos
		if k < perfectSteps {
			from = perfect
		}
		batch := make([]*rollout.Trajectory, j.cfg.SFT.Batch)
		for i := range batch {
			batch[i] = from[(k*len(batch)+i)%len(from)]
		}
		m, err := tr.SFT(batch)
		if err != nil {
			return fmt.Errorf("sft step %d: %w", k+1, err)
		}
		j.st.Step++
		j.st.Phase, j.st.Trainer = phaseSFT, tr.Progress()
		last := j.st.Step == j.sftSteps
		if last && j.cfg.Eval.Before {
			if err := j.evaluate(ctx, m, "after SFT"); err != nil {
				return err
			}
		}
		if err := j.record(m, nil); err != nil {
			return err
		}
		if last {
			// The boundary: RL starts with a fresh trainer from these weights.
			j.st.Phase, j.st.Trainer = phaseRL, grpo.Progress{}
			if err := j.save(nil); err != nil {
				return err
			}
		} else if err := j.afterStep(tr, false); err != nil {
			return err
		}
	}
	return nil
}

// demonstrations plays the warm-up's demonstrations of the first sft.tasks training tasks: the
// environment's mix and, when sft.perfect_first asks for them and the mix has imperfect ones,
// the perfect demonstrations that the first perfectSteps SFT steps train on.
func (j *job) demonstrations(ctx context.Context, r grpo.RolloutConfig) (demos, perfect []*rollout.Trajectory, perfectSteps int, err error) {
	n := min(j.cfg.SFT.Tasks, len(j.data.train))
	if demos, err = grpo.Demonstrations(ctx, j.policy.Tok, j.envs, j.data.train[:n], r); err != nil {
		return nil, nil, 0, fmt.Errorf("sft (sft.steps %d): %w", j.sftSteps, err)
	}
	j.log.Info().Int("demonstrations", len(demos)).Int("of_tasks", n).Msg("sft: demonstrations played")
	perfectSteps = int(math.Round(j.cfg.SFT.PerfectFirst * float64(j.sftSteps)))
	if perfectSteps == 0 || j.envs.DemonstratePerfect == nil || j.st.Step >= perfectSteps {
		return demos, demos, 0, nil
	}
	pe := *j.envs
	pe.Demonstrate = j.envs.DemonstratePerfect
	if perfect, err = grpo.Demonstrations(ctx, j.policy.Tok, &pe, j.data.train[:n], r); err != nil {
		return nil, nil, 0, fmt.Errorf("sft (sft.perfect_first %g): %w", j.cfg.SFT.PerfectFirst, err)
	}
	j.log.Info().Int("perfect_demonstrations", len(perfect)).Int("sft_steps", perfectSteps).Msg("sft: the first steps train on perfect demonstrations")
	return demos, perfect, perfectSteps, nil
}

// rl runs the RL steps.
func (j *job) rl(ctx context.Context) error {
	total := j.sftSteps + j.rlSteps
	if j.st.Step >= total {
		return nil
	}
	g, err := j.cfg.Trainer()
	if err != nil {
		return err
	}
	g.ScheduleSteps(j.rlSteps)
	tr, err := grpo.New(grpo.Models{Policy: j.policy.Model, Reference: j.ref, Critic: j.critic}, j.gen, j.policy.Tok, j.envs, g,
		grpo.WithDist(j.o.Dist), grpo.WithRunner(j.agents.runner()))
	if err != nil {
		return err
	}
	defer tr.Close()
	if err := j.restoreInto(tr, phaseRL); err != nil {
		return err
	}
	j.steps.Phase("rl", j.sftSteps, j.rlSteps, j.st.Step-j.sftSteps)
	for j.st.Step < total {
		step := j.st.Step + 1
		j.gen.Begin(fmt.Sprintf("step %d rollout", step))
		m, trajs, err := tr.Step(ctx, j.src)
		j.gen.End()
		if err != nil {
			j.keepFailed(step, trajs)
			return fmt.Errorf("step %d: %w", step, err)
		}
		if n, why := rollout.Failures(trajs); n > 0 {
			j.log.Warn().Int("step", step).Int("failed", n).Int("episodes", len(trajs)).Str("why", why).
				Msgf("step %d: %d of %d episodes failed (not trained)", step, n, len(trajs))
		}
		j.st = state{Step: step, Phase: phaseRL, Trainer: tr.Progress(), DataPos: j.src.Pos}
		rlStep := step - j.sftSteps
		if every := j.cfg.Train.EvalEvery; step == total || (every > 0 && rlStep%every == 0) {
			if err := j.evaluate(ctx, m, ""); err != nil {
				return err
			}
		}
		if err := j.record(m, trajs); err != nil {
			return err
		}
		if err := j.afterStep(tr, step == total); err != nil {
			return err
		}
	}
	return nil
}

// keepFailed writes a few trajectories of a step that failed, their errors included, as the
// samples of that step: what the environment or reward function did is kept for the user.
func (j *job) keepFailed(step int, trajs []*rollout.Trajectory) {
	if !j.main() || len(trajs) == 0 || j.cfg.Train.Samples == 0 {
		return
	}
	if err := j.run.Samples(step, samplesOf(step, pick(trajs, j.cfg.Train.Samples))); err != nil {
		j.log.Warn().Err(err).Int("step", step).Msg("the failed step's samples were not written")
	}
}

// record logs a step's metrics (metrics.jsonl, TensorBoard, the log's step: line) and a few of its
// trajectories.
func (j *job) record(m grpo.Metrics, trajs []*rollout.Trajectory) error {
	step := j.st.Step
	j.steps.Step()
	if !j.main() {
		return nil
	}
	if err := j.run.Step(step, rundir.Metrics(m)); err != nil {
		return err
	}
	if len(trajs) == 0 || j.cfg.Train.Samples == 0 {
		return nil
	}
	return j.run.Samples(step, samplesOf(step, pick(trajs, j.cfg.Train.Samples)))
}

// afterStep saves a checkpoint when one is due (every checkpoint_every steps, and the last) and
// stops when a signal asked to, after saving one (none with train.checkpoint false).
func (j *job) afterStep(tr *grpo.Trainer, last bool) error {
	every := j.cfg.Train.CheckpointEvery
	due := last || (every > 0 && j.st.Step%every == 0)
	stop, err := j.stopAgreed()
	if err != nil {
		return err
	}
	if (due || stop != nil) && j.cfg.Train.Checkpoint {
		if err := j.save(tr); err != nil {
			return err
		}
	}
	if stop != nil {
		j.log.Warn().Str("signal", stop.String()).Int("step", j.st.Step).Msg("stopped")
		return &StoppedError{Signal: stop, Step: j.st.Step, RunDir: j.cfg.RunDir}
	}
	return nil
}

func (j *job) stopRequested() os.Signal {
	select {
	case s := <-j.o.Stop:
		return s
	default:
		return nil
	}
}

// stopAgreed is stopRequested agreed by every rank: a signal that reached any rank stops them all
// after the same step (a launcher passes it to each, but not at the same instant).
func (j *job) stopAgreed() (os.Signal, error) {
	stop := j.stopRequested()
	pg := j.o.Dist.ProcessGroup()
	if pg == nil {
		return stop, nil
	}
	err := j.collective("agreeing on a stop after step "+fmt.Sprint(j.st.Step), func() error {
		flag := 0.0
		if stop != nil {
			flag = 1
		}
		if pg.AllReduce(torch.Scalar(flag, torch.Float32, pg.Device()), torch.Max).Float() > 0 && stop == nil {
			stop = syscall.SIGTERM // another rank's signal
		}
		return nil
	})
	return stop, err
}

// collective runs fn, a collective of the job's own across the ranks, and names this rank, what
// it was doing and where to look when it fails (usually: another rank died).
func (j *job) collective(what string, fn func() error) error {
	err := torch.Run(fn)
	if err == nil {
		return nil
	}
	pg := j.o.Dist.ProcessGroup()
	return fmt.Errorf("rank %d of %d, %s: %w (another rank died or failed: its own log says which)",
		pg.Rank(), pg.Size(), what, err)
}

// ExplainTorch, deferred, puts a sentence of ours before the message of a failed torch op that
// nothing on the way explained: libtorch's own text is never all the user reads.
func ExplainTorch(err *error) {
	if te, ok := (*err).(*torch.Error); ok {
		*err = fmt.Errorf("stopped by an error inside libtorch (the device, its memory, or a tensor operation the shim cannot run here): %w", te)
	}
}
