package grpo

import (
	"fmt"
	"math"

	"github.com/mtgrpo/mtgrpo/model"
	"github.com/mtgrpo/mtgrpo/torch"
)

// update trains the policy on the step's samples: Epochs passes, each split into MiniBatches
// optimizer steps (by trajectory, shuffled), each accumulated over micro-batches of at most
// MicroTokens tokens. Aggregation weights are computed per mini-batch over all its tokens, so the
// micro-batch split never changes the loss. A non-finite gradient norm skips the optimizer step and
// leaves weights and optimizer state untouched. Under ZeRO-3 the policy's weights are sharded for
// the update and whole again after it.
func (t *Trainer) update(samples []*sample, m Metrics) error {
	return t.sharded(func() error {
		return t.passes(samples, rngActor, m, t.opt, policyLayout, func(micro []*sample, epoch int, acc *statAcc) error {
			return t.microStep(micro, epoch == 0, acc)
		}, func() error { return t.optimizerStep(m) })
	})
}

// sharded runs fn with the policy's weights sharded (ZeRO-3; as they are otherwise) and gathers
// them whole after it.
func (t *Trainer) sharded(fn func() error) error {
	if err := torch.Do(func() error { t.opt.Shard(); return nil }); err != nil {
		return err
	}
	if err := fn(); err != nil {
		return err
	}
	if err := inCollective(t.dist.trainGroup(), "gathering the weights", t.opt.Unshard); err != nil {
		return fmt.Errorf("grpo: step %d: %w", t.iter, err)
	}
	return nil
}

// Purposes of the step's random generators (stepRNG).
const (
	rngActor  = 1   // the actor's mini-batch shuffles, one per epoch from here
	rngCritic = 101 // the critic's
)

// passes runs Epochs passes over samples, each split into MiniBatches by trajectory (shuffled by
// the step's generator for purpose+epoch), each mini-batch's aggregation weights set from all its
// tokens, its micro-batches (at most MicroTokens tokens) given to micro, then step called once.
// Data parallel, a rank packs only its share of each mini-batch (the weights are still the whole
// mini-batch's) and opt, told before the last backward pass, sums the ranks' gradients in step.
// The loss statistics (of layout l) accumulate over everything, are summed across ranks and
// reported at the end.
func (t *Trainer) passes(samples []*sample, purpose uint64, m Metrics, opt optimizer, l *statLayout,
	micro func(micro []*sample, epoch int, acc *statAcc) error, step func() error) error {
	u := t.cfg.Update
	acc := newStatAcc()
	defer acc.close()
	for epoch := 0; epoch < u.Epochs; epoch++ {
		for _, mb := range miniBatches(samples, u.MiniBatches, t.stepRNG(purpose+uint64(epoch))) {
			if err := t.setWeights(mb); err != nil {
				return err
			}
			mcs := pack(t.dist.share(mb), u.MicroTokens)
			err := t.matchedPasses(opt, len(mcs), func() error {
				for i, mc := range mcs {
					if i == len(mcs)-1 {
						opt.Arm()
					}
					if err := micro(mc, epoch, acc); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				return err
			}
			if err := step(); err != nil {
				return err
			}
			acc.updates++
		}
	}
	if err := t.dist.reduceStats(acc, l); err != nil {
		return fmt.Errorf("grpo: step %d: %w", t.iter, err)
	}
	acc.report(m)
	return nil
}

// matchedPasses runs this rank's n backward passes (run) and then the idle ones it owes the other
// ranks' collectives: under ZeRO-2 and -3 every rank makes as many passes as the rank with the
// most micro-batches, a count agreed before any pass (a collective of its own).
func (t *Trainer) matchedPasses(opt optimizer, n int, run func() error) error {
	return matchPasses(t.dist.trainGroup(), opt, n, t.iter, run)
}

// matchPasses is matchedPasses over group g in step iter: run's error comes back as it is, the
// collectives' with the step and where they failed.
func matchPasses(g *torch.ProcessGroup, opt optimizer, n, iter int, run func() error) error {
	total := n
	if err := inCollective(g, "agreeing on the backward passes", func() { total = opt.Passes(n) }); err != nil {
		return fmt.Errorf("grpo: step %d: %w", iter, err)
	}
	if err := run(); err != nil {
		return err
	}
	err := inCollective(g, "idle backward passes", func() {
		for i := n; i < total; i++ {
			opt.Idle()
		}
	})
	if err != nil {
		return fmt.Errorf("grpo: step %d: %w", iter, err)
	}
	return nil
}

// optimizerStep sums the gradients across ranks (data parallel), clips them, and steps AdamW with
// the scheduled learning rate unless the gradient norm is not finite; then the gradients are
// dropped either way.
func (t *Trainer) optimizerStep(m Metrics) error {
	o := t.cfg.Optim
	var norm float64
	if err := inCollective(t.dist.trainGroup(), "summing gradients", func() {
		norm = t.opt.ClipGradNorm(clipNorm(o.MaxGradNorm))
	}); err != nil {
		return fmt.Errorf("grpo: step %d: %w", t.iter, err)
	}
	m["actor/grad_norm"] = norm // the last mini-batch's, as verl logs it
	lr := LR(o.LR, t.updates+t.skipped, o.Warmup, o.TotalSteps, o.Schedule, o.MinLRRatio)
	m["actor/lr"] = lr
	if math.IsNaN(norm) || math.IsInf(norm, 0) {
		t.opt.Skip() // drops the gradients; weights, masters and moments untouched
		t.skipped++
		m["actor/skipped_steps"]++
		return nil
	}
	if err := inCollective(t.dist.trainGroup(), "updating the weights", func() { t.opt.Step(lr) }); err != nil {
		return fmt.Errorf("grpo: step %d: %w", t.iter, err)
	}
	t.updates++
	return nil
}

// microStep runs the training forward pass of one micro-batch, builds its loss and backpropagates
// it (gradients accumulate across micro-batches). first marks the batch's first epoch, where the
// trainer's log-probs are compared with the sampler's.
func (t *Trainer) microStep(micro []*sample, first bool, acc *statAcc) error {
	b, err := batchOf(micro)
	if err != nil {
		return err
	}
	return torch.Do(func() error {
		s := torch.NewScope()
		defer s.Close()
		p, err := t.ms.Policy.Train(b, model.ForwardOptions{Temperature: t.temperature(), Entropy: true,
			Checkpoint: t.cfg.Update.Checkpoint, GradsReady: t.opt.GradsReady(), Weights: t.opt.UnitWeights()})
		if err != nil {
			return fmt.Errorf("grpo: training pass: %w", err)
		}
		loss, stats, err := Loss(t.cfg.Loss, t.lossInputs(b, micro, p.Output, first))
		if err != nil {
			return fmt.Errorf("grpo: loss: %w", err)
		}
		if err := p.Backward(loss); err != nil {
			return fmt.Errorf("grpo: backward: %w", err)
		}
		acc.add(stats)
		return nil
	})
}
