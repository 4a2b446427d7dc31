package grpo

import (
	"fmt"
	"math"

	"github.com/mtgrpo/mtgrpo/model"
	"github.com/mtgrpo/mtgrpo/rollout"
	"github.com/mtgrpo/mtgrpo/torch"
)

// SFT takes one optimizer step of supervised fine-tuning on demonstrations: cross-entropy on every
// trained token of every turn (the same per-turn samples and packing as the RL update: contexts
// masked, outputs trained), averaged over all trained tokens of the batch (token-mean). Use it to
// warm a policy up on the task's format before RL. Demonstrations are trajectories, typically
// played by a scripted policy (rollout.Scripted) through the same driver and chat template. The
// learning rate follows the same schedule as RL steps, counted in the same optimizer steps.
func (t *Trainer) SFT(demos []*rollout.Trajectory) (Metrics, error) {
	m := Metrics{}
	samples := samplesOf(demos)
	tokens := 0
	for _, s := range samples {
		tokens += s.trained
	}
	if tokens == 0 {
		return nil, fmt.Errorf("grpo: sft: no trained token in %d demonstrations", len(demos))
	}
	var nll float64
	_, err := timed(m, "update_actor", func() (struct{}, error) {
		for _, micro := range pack(samples, t.cfg.Update.MicroTokens) {
			v, err := t.sftMicro(micro, tokens)
			if err != nil {
				return struct{}{}, err
			}
			nll += v
		}
		return struct{}{}, nil
	})
	if err != nil {
		return nil, err
	}
	t.optimizerStep(m)
	t.sftSteps++
	m["sft/loss"] = nll
	m["sft/tokens"] = float64(tokens)
	m["sft/ppl"] = math.Exp(nll)
	return m, nil
}

// sftMicro backpropagates one micro-batch's share of the token-mean cross-entropy and returns it.
func (t *Trainer) sftMicro(micro []*sample, tokens int) (float64, error) {
	b, err := batchOf(micro)
	if err != nil {
		return 0, err
	}
	var v float64
	err = torch.Do(func() error {
		s := torch.NewScope()
		defer s.Close()
		p, err := t.ms.Policy.Train(b, model.ForwardOptions{Checkpoint: t.cfg.Update.Checkpoint})
		if err != nil {
			return fmt.Errorf("grpo: sft pass: %w", err)
		}
		w := float32(1 / float64(tokens))
		mask := perToken(b, micro, p.LogProbs.Device(), func(s *sample) []float32 {
			out := make([]float32, len(s.IDs))
			for i, on := range s.Mask {
				if on {
					out[i] = w
				}
			}
			return out
		})
		loss := p.LogProbs.Mul(mask).Sum(false).Neg()
		v = loss.Float()
		return p.Backward(loss)
	})
	return v, err
}
