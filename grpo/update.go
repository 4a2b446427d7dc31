package grpo

import (
	"fmt"

	"github.com/mtgrpo/mtgrpo/grpo/algo"
	"github.com/mtgrpo/mtgrpo/grpo/shard"
	"github.com/mtgrpo/mtgrpo/model"
	"github.com/mtgrpo/mtgrpo/torch"
)

// update trains the policy on the step's samples: for each epoch and mini-batch, the passes of its
// micro-batches, then an optimizer step at the scheduled learning rate (skipped on a non-finite
// gradient norm: weights and optimizer state untouched).
func (t *Trainer) update(samples []*sample, m Metrics) error {
	return t.fit(t.opt, samples, rngActor, policyLayout, m,
		func(micro []*sample, epoch int, fo model.ForwardOptions, acc *statAcc) error {
			return t.microStep(micro, epoch == 0, fo, acc)
		}, func(norm float64) error { return t.stepPolicy(norm, m) })
}

// Purposes of the step's random generators (stepRNG).
const (
	rngActor  = 1   // the actor's mini-batch shuffles, one per epoch from here
	rngCritic = 101 // the critic's
)

// fit trains opt on samples: Epochs passes over them, each split into MiniBatches by trajectory
// (shuffled by the step's generator for purpose+epoch); for each mini-batch, its aggregation
// weights set from all its tokens, the passes of its micro-batches (at most MicroTokens tokens;
// pass), then a step (step, given the gradient norm). Data parallel, a rank packs only its share
// of each mini-batch (the weights are still the whole mini-batch's) and opt sums the ranks'
// gradients. The loss statistics (of layout l) accumulate over everything, are summed across
// ranks and reported at the end.
func (t *Trainer) fit(opt *shard.Optimizer, samples []*sample, purpose uint64, l *statLayout, m Metrics,
	pass func(micro []*sample, epoch int, fo model.ForwardOptions, acc *statAcc) error, step func(norm float64) error) error {
	u := t.cfg.Update
	acc := newStatAcc()
	defer acc.close()
	err := opt.Update(func() error {
		for epoch := range u.Epochs {
			for _, mb := range miniBatches(samples, u.MiniBatches, t.stepRNG(purpose+uint64(epoch))) {
				if err := t.setWeights(mb); err != nil {
					return err
				}
				mcs := pack(t.dist.share(mb), u.MicroTokens)
				norm, err := opt.Passes(len(mcs), func(i int, fo model.ForwardOptions) error {
					return pass(mcs[i], epoch, fo, acc)
				})
				if err != nil {
					return err
				}
				if err := step(norm); err != nil {
					return err
				}
				acc.updates++
			}
		}
		return t.dist.reduceStats(acc, l)
	})
	if err != nil {
		return fmt.Errorf("grpo: step %d: %w", t.iter, err)
	}
	acc.report(m)
	return nil
}

// stepPolicy steps the policy's optimizer at the scheduled learning rate, or counts the skip of
// a non-finite gradient norm; actor/grad_norm and actor/lr are the last mini-batch's, as verl
// logs them.
func (t *Trainer) stepPolicy(norm float64, m Metrics) error {
	o := t.cfg.Optim
	lr := algo.LR(o.LR, t.updates+t.skipped, o.WarmupSteps(), o.TotalSteps, o.Schedule, o.MinLRRatio)
	m["actor/grad_norm"], m["actor/lr"] = norm, lr
	stepped, err := t.opt.Step(lr)
	switch {
	case err != nil:
		return err
	case stepped:
		t.updates++
	default:
		t.skipped++
		m["actor/skipped_steps"]++
	}
	return nil
}

// microStep runs the training forward pass of one micro-batch with fo (the optimizer's hooks),
// builds its loss and backpropagates it (gradients accumulate across micro-batches). first marks
// the batch's first epoch, where the trainer's log-probs are compared with the sampler's.
func (t *Trainer) microStep(micro []*sample, first bool, fo model.ForwardOptions, acc *statAcc) error {
	b, err := batchOf(micro)
	if err != nil {
		return err
	}
	return torch.Do(func() error {
		s := torch.NewScope()
		defer s.Close()
		fo.Temperature, fo.Entropy, fo.Checkpoint = t.temperature(), true, t.cfg.Update.Checkpoint
		fo.HeadMemoryBudget = t.cfg.Update.HeadMemoryBudget
		p, err := t.ms.Policy.Train(b, fo)
		if err != nil {
			return fmt.Errorf("training pass: %w", err)
		}
		loss, stats, err := Loss(t.cfg.Loss, t.lossInputs(b, micro, p.Output, first))
		if err != nil {
			return fmt.Errorf("loss: %w", err)
		}
		if err := p.Backward(loss); err != nil {
			return fmt.Errorf("backward: %w", err)
		}
		acc.add(stats)
		return nil
	})
}
