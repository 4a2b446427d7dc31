package grpo

import (
	"fmt"
	"math"

	"github.com/mtgrpo/mtgrpo/grpo/shard"
	"github.com/mtgrpo/mtgrpo/model"
	"github.com/mtgrpo/mtgrpo/torch"
)

// Critic is PPO's value model: a decoder of the policy's family (typically initialised from the
// same checkpoint) with a scalar value head on its final hidden states, as verl's critic
// (AutoModelForTokenClassification with one label). The value of token i is read from the hidden
// state that predicts it, V_i = w·h_{i−1} + b: the value of the state in which token i was chosen.
type Critic struct {
	Model *model.Model
	// Head is value_head.weight [1, hidden] and Bias value_head.bias [1], float32, zero at start
	// (every value starts at 0, so the first advantages are the rewards themselves). Before the
	// first update the bias is set to that batch's mean return (initBias).
	Head, Bias *torch.Tensor

	opt   *shard.Optimizer
	scope *torch.Scope
}

// NewCritic puts a zero value head on m. Call on the torch thread; Close frees the head and the
// optimizer (the model belongs to the caller).
func NewCritic(m *model.Model) (c *Critic, err error) {
	defer torch.Recover(&err)
	if m == nil {
		return nil, fmt.Errorf("grpo: critic: nil model")
	}
	c = &Critic{Model: m, scope: torch.NewLongScope("critic head")}
	c.scope.With(func() {
		c.Head = torch.Zeros([]int64{1, int64(m.Config.HiddenSize)}, torch.Float32, m.Device).SetRequiresGrad(true)
		c.Bias = torch.Zeros([]int64{1}, torch.Float32, m.Device).SetRequiresGrad(true)
	})
	return c, nil
}

// Parameters are the critic's trainable tensors by name: the decoder's weights and the head
// (value_head.weight, value_head.bias).
func (c *Critic) Parameters() []torch.NamedTensor {
	return append(c.Model.Parameters(), torch.NamedTensor{Name: "value_head.weight", Tensor: c.Head},
		torch.NamedTensor{Name: "value_head.bias", Tensor: c.Bias})
}

// tensors are the critic's trainable tensors, for gradient clipping.
func (c *Critic) tensors() []*torch.Tensor {
	return append(c.Model.ParameterTensors(), c.Head, c.Bias)
}

// Close frees the head and the optimizer state.
func (c *Critic) Close() {
	if c.opt != nil {
		c.opt.Close()
	}
	c.scope.Close()
}

// start makes the critic's optimizer (once), clipping at cfg.Critic.MaxGradNorm; with d, its
// gradients are summed across the training ranks.
func (c *Critic) start(cfg Config, d *Dist) error {
	if c.opt != nil {
		return nil
	}
	c.Model.SetTrainable(true)
	var err error
	if c.opt, err = d.newOptimizer(c.Parameters(), shard.Units{}, cfg.Optim, cfg.Critic.MaxGradNorm, false); err != nil {
		return fmt.Errorf("grpo: critic optimizer: %w", err)
	}
	return nil
}

// valuesOf maps the final hidden states [rows, cols, hidden] to per-token values [rows, cols],
// shifted so that position i holds the value of the state before token i (position 0 of a row
// gets 0; in a packed row the first token of each sample gets its predecessor's last value, which
// no loss reads: it is context).
func (c *Critic) valuesOf(h *torch.Tensor) *torch.Tensor {
	v := torch.Linear(h.ToDType(torch.Float32), c.Head, c.Bias).Squeeze(-1) // [rows, cols]
	cols := v.Size(1)
	if cols == 1 {
		return torch.ZerosLike(v)
	}
	zero := torch.Zeros([]int64{v.Size(0), 1}, torch.Float32, v.Device())
	return torch.Cat([]*torch.Tensor{zero, v.Slice(1, 0, cols-1, 1)}, 1)
}

// values computes the values of every sample (no grad) into sample.values.
func (c *Critic) values(samples []*sample, budget int) error {
	for _, micro := range pack(samples, budget) {
		b, err := batchOf(micro)
		if err != nil {
			return err
		}
		err = torch.Do(func() error {
			s := torch.NewScope()
			defer s.Close()
			h, err := c.Model.Hidden(b)
			if err != nil {
				return err
			}
			var v *torch.Tensor
			torch.NoGrad(func() { v = c.valuesOf(h) })
			vals, err := b.Values(v)
			if err != nil {
				return err
			}
			for i, smp := range micro {
				smp.values = vals[i]
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("grpo: critic values: %w", err)
		}
	}
	return nil
}

// updateCritic trains the critic on the returns: the clipped value loss, aggregated like the policy
// loss, one optimizer step per mini-batch and epoch at the critic's constant learning rate (a
// non-finite gradient norm skips it). The first update starts from the batch's mean return
// (initBias).
func (t *Trainer) updateCritic(samples []*sample, m Metrics) error {
	c := t.ms.Critic
	criticStats(samples, m)
	if c.opt.Steps() == 0 {
		if err := c.initBias(samples); err != nil {
			return err
		}
	}
	return t.fit(c.opt, samples, rngCritic, valueLayout, m,
		func(micro []*sample, _ int, fo model.ForwardOptions, acc *statAcc) error {
			return t.criticMicro(micro, fo, acc)
		}, func(norm float64) error {
			lr := t.cfg.CriticLR()
			m["critic/grad_norm"], m["critic/lr"] = norm, lr
			stepped, err := c.opt.Step(lr)
			if err == nil && !stepped {
				m["critic/skipped_steps"]++
			}
			return err
		})
}

// initBias sets the value head's bias, before the critic's first update, to the mean return over
// the samples' trained tokens, and moves their old values (the clip's centre, else the clip would
// hold the first update at the zero values) by as much. A zero head has to learn the returns'
// mean before anything else: while the values are all far below the returns, the error's common
// part dominates the head's gradient and AdamW spends its steps on the bias direction. That part
// is worth nothing to the policy (GAE whitens the advantages, so a constant value is no baseline);
// the values' differences between states are what explained variance measures and what makes
// the critic a baseline. Starting at the mean lets the first updates go to those.
func (c *Critic) initBias(samples []*sample) error {
	var sum, n float64
	for _, s := range samples {
		for i, on := range s.Mask {
			if on && s.returns != nil {
				sum += float64(s.returns[i])
				n++
			}
		}
	}
	if n == 0 {
		return nil
	}
	mean := sum / n
	err := torch.Do(func() error {
		torch.NoGrad(func() { c.Bias.AddScalar_(mean) })
		return nil
	})
	if err != nil {
		return err
	}
	for _, s := range samples {
		for i, on := range s.Mask {
			if on && s.values != nil {
				s.values[i] += float32(mean)
			}
		}
	}
	return nil
}

// criticStats records, before the critic's update, the values the advantages were computed with
// against GAE's returns over every trained token of the step (verl's names):
// critic/values/{mean,max,min}, critic/returns/{mean,max,min} and critic/vf_explained_var.
func criticStats(samples []*sample, m Metrics) {
	var vs, rs []float64
	for _, s := range samples {
		if s.values == nil || s.returns == nil {
			continue
		}
		vs = append(vs, s.trainedValues(s.values)...)
		rs = append(rs, s.trainedValues(s.returns)...)
	}
	m.stat("critic/values", vs)
	m.stat("critic/returns", rs)
	if ev := ExplainedVariance(vs, rs); !math.IsNaN(ev) {
		m["critic/vf_explained_var"] = ev
	}
}

// criticMicro backpropagates one micro-batch's value loss, its pass run with fo (the optimizer's
// hooks).
func (t *Trainer) criticMicro(micro []*sample, fo model.ForwardOptions, acc *statAcc) error {
	c := t.ms.Critic
	b, err := batchOf(micro)
	if err != nil {
		return err
	}
	return torch.Do(func() error {
		s := torch.NewScope()
		defer s.Close()
		fo.Hidden, fo.HiddenOnly, fo.Checkpoint = true, true, t.cfg.Update.Checkpoint
		p, err := c.Model.Train(b, fo)
		if err != nil {
			return fmt.Errorf("critic pass: %w", err)
		}
		dev := p.Hidden.Device()
		get := func(f func(*sample) []float32) *torch.Tensor { return perToken(b, micro, dev, f) }
		var v *torch.Tensor
		torch.EnableGrad(func() { v = c.valuesOf(p.Hidden) })
		loss, st, err := ValueLoss(t.cfg.Critic.ValueClip, ValueInputs{
			Values:  v,
			Old:     get(func(s *sample) []float32 { return s.values }),
			Returns: get(func(s *sample) []float32 { return s.returns }),
			Weights: get(func(s *sample) []float32 { return s.weight }),
			Mask:    get(maskOf),
		})
		if err != nil {
			return fmt.Errorf("value loss: %w", err)
		}
		if err := p.Backward(loss); err != nil {
			return fmt.Errorf("critic backward: %w", err)
		}
		acc.add(st)
		return nil
	})
}
