package grpo

import (
	"fmt"
	"math"

	"github.com/mtgrpo/mtgrpo/grpo/exchange"
	"github.com/mtgrpo/mtgrpo/model"
	"github.com/mtgrpo/mtgrpo/torch"
)

// score runs the no-grad passes the configuration needs before the update: ℓ_old when the policy
// changes between optimizer steps on this batch (several epochs or mini-batches; otherwise ℓ_old is
// ℓ detached and costs nothing), ℓ_ref when the loss has a KL term, and the critic's values for GAE.
func (t *Trainer) score(samples []*sample, m Metrics) error {
	// Data parallel, each pass runs on this rank's share and every rank receives all the values.
	if t.cfg.needsOld() {
		if err := timedDo(m, phaseOldLogProb, func() error {
			set := func(s *sample, v []float32) { s.old = v }
			return t.dist.scoreShared(samples, func(part []*sample) error {
				return t.logProbs(t.ms.Policy, false, part, set)
			}, func(s *sample) []float32 { return s.old }, set)
		}); err != nil {
			return err
		}
	}
	if t.cfg.NeedsReference() {
		if err := timedDo(m, phaseRef, func() error {
			set := func(s *sample, v []float32) { s.ref = v }
			return t.dist.scoreShared(samples, func(part []*sample) error {
				ref, base := t.reference()
				return t.logProbs(ref, base, part, set)
			}, func(s *sample) []float32 { return s.ref }, set)
		}); err != nil {
			return err
		}
	}
	if t.cfg.NeedsCritic() {
		if err := timedDo(m, phaseValues, func() error {
			return t.dist.scoreShared(samples, func(part []*sample) error {
				return t.ms.Critic.values(part, t.cfg.Update.MicroTokens)
			}, func(s *sample) []float32 { return s.values }, func(s *sample, v []float32) { s.values = v })
		}); err != nil {
			return err
		}
	}
	return nil
}

// logProbs computes mod's log-probs of every sample (at the sampling temperature, micro-batch by
// micro-batch, no grad) and hands each sample its per-token values.
func (t *Trainer) logProbs(mod *model.Model, base bool, samples []*sample, set func(*sample, []float32)) error {
	for _, micro := range pack(samples, t.cfg.Update.MicroTokens) {
		b, err := batchOf(micro)
		if err != nil {
			return err
		}
		err = torch.Do(func() error {
			s := torch.NewScope()
			defer s.Close()
			var out *model.Output
			score := func() { out, err = mod.LogProbs(b, model.ForwardOptions{Temperature: t.temperature()}) }
			if base { // switched inside this torch task, so that no generation step sees it
				mod.WithoutAdapters(score)
			} else {
				score()
			}
			if err != nil {
				return err
			}
			vals, err := b.Values(out.LogProbs)
			if err != nil {
				return err
			}
			for i, smp := range micro {
				set(smp, vals[i])
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("grpo: scoring pass: %w", err)
		}
	}
	return nil
}

// temperature is the sampling temperature the trainer's log-probs must use (0 means 1).
func (t *Trainer) temperature() float64 {
	if s := t.cfg.Rollout.Sampling; s.Temperature > 0 && !s.Greedy {
		return s.Temperature
	}
	return 1
}

// batchOf lays a micro-batch out as one packed row, scoring from each sample's context end. The
// leading tokens all its samples share (a system prompt and tool list, a task's prompt in its
// group) are laid out and computed once (model.NewSharedBatch): exact, and often most of the
// tokens of multi-turn samples.
func batchOf(micro []*sample) (*model.Batch, error) {
	seqs := make([][]int32, len(micro))
	from := make([]int, len(micro))
	shared := math.MaxInt
	for i, s := range micro {
		seqs[i], from[i] = s.IDs, s.ScoreFrom
		shared = min(shared, s.ScoreFrom-1)
	}
	var b *model.Batch
	var err error
	if shared = min(shared, model.SharedPrefix(seqs)); len(micro) > 1 && shared >= minSharedPrefix {
		b, err = model.NewSharedBatch(seqs, shared)
	} else {
		b, err = model.NewBatch(seqs, true)
	}
	if err != nil {
		return nil, fmt.Errorf("grpo: %w", err)
	}
	b.ScoreFrom = from
	return b, nil
}

// minSharedPrefix is the shortest common prefix worth laying out once (shorter ones cost more in
// attention calls than they save).
const minSharedPrefix = 16

// perToken lays one per-token slice of each sample out in b's layout on dev (nil slices are 0).
func perToken(b *model.Batch, micro []*sample, dev torch.Device, get func(*sample) []float32) *torch.Tensor {
	vals := make([][]float32, len(micro))
	for i, s := range micro {
		if vals[i] = get(s); vals[i] == nil {
			vals[i] = make([]float32, len(s.IDs))
		}
	}
	t, err := b.Tensor(vals, dev)
	if err != nil {
		panic(err) // the slices are built with the samples' lengths: a mismatch is a bug here
	}
	return t
}

// reference is the KL term's reference model: Models.Reference, or, when the policy trains LoRA
// adapters and no reference was given, the policy with its adapters switched off (base true): the
// base model, with no second copy of the weights.
func (t *Trainer) reference() (m *model.Model, base bool) {
	if t.ms.Reference == nil && t.ms.Policy.LoRA() != nil {
		return t.ms.Policy, true
	}
	return t.ms.Reference, false
}

// scoreShared runs a scoring pass (compute, on a share of samples) on each training rank's share
// and gives every rank every sample's values (get reads a computed sample's values, set stores
// received ones; package exchange carries them). A single process computes everything.
func (d *Dist) scoreShared(samples []*sample, compute func([]*sample) error, get func(*sample) []float32,
	set func(*sample, []float32)) error {
	if d == nil {
		return compute(samples)
	}
	index := make(map[*sample]int, len(samples))
	for i, s := range samples {
		index[s] = i
	}
	mine := d.share(samples)
	if err := compute(mine); err != nil {
		return err
	}
	at, values := make([]int, len(mine)), make([][]float32, len(mine))
	for k, s := range mine {
		at[k], values[k] = index[s], get(s)
	}
	if err := exchange.Scores(d.train, len(samples), at, values, func(i int) int { return len(samples[i].IDs) },
		func(i int, v []float32) { set(samples[i], v) }); err != nil {
		return fmt.Errorf("grpo: %w", err)
	}
	return nil
}
