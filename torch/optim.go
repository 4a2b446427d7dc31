package torch

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"strconv"
	"unsafe"
)

// AdamWConfig holds AdamW's hyper-parameters (PyTorch's defaults except WeightDecay, which
// follows common LLM fine-tuning practice).
type AdamWConfig struct {
	LR          float64 // learning rate
	Beta1       float64 // first-moment decay (0.9)
	Beta2       float64 // second-moment decay (0.999)
	Eps         float64 // added to the denominator (1e-8)
	WeightDecay float64 // decoupled weight decay (0.01)
}

// DefaultAdamW is PyTorch's torch.optim.AdamW defaults with lr 1e-5.
func DefaultAdamW() AdamWConfig {
	return AdamWConfig{LR: 1e-5, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.01}
}

// AdamW is torch.optim.AdamW over a fixed list of parameters: decoupled weight decay and bias
// correction, state (two moment tensors per parameter, kept as tensors in a long-lived scope, and
// a step count per parameter, as PyTorch keeps). One Step is one crossing for all parameters.
type AdamW struct {
	Config AdamWConfig
	params []*Tensor
	m, v   []*Tensor // first and second moments, like the parameters
	decay  []C.int   // 1 where weight decay applies
	steps  []int64   // per parameter: the updates it received (its bias-correction step)
	step   int64     // Step calls
	state  *Scope
}

// NewAdamW makes an optimizer for params, whose moment buffers start at zero.
func NewAdamW(params []*Tensor, cfg AdamWConfig) *AdamW {
	o := &AdamW{Config: cfg, params: params, state: NewLongScope("adamw")}
	o.state.With(func() {
		for _, p := range params {
			o.decay = append(o.decay, 1)
			o.steps = append(o.steps, 0)
			o.m = append(o.m, ZerosLike(p))
			o.v = append(o.v, ZerosLike(p))
		}
	})
	return o
}

// Step applies one update from the parameters' current gradients. A parameter without one is left
// alone and, as in PyTorch, its own step count (which sets its bias correction) does not advance.
func (o *AdamW) Step() {
	if len(o.params) == 0 {
		return
	}
	c := o.Config
	o.step++
	ps, ms, vs := handles("AdamW.Step", o.params), handles("AdamW.Step", o.m), handles("AdamW.Step", o.v)
	check("AdamW.Step", C.mt_adamw_step(&ps[0], &ms[0], &vs[0], &o.decay[0], (*C.int64_t)(unsafe.Pointer(&o.steps[0])),
		C.int(len(ps)), C.double(c.LR), C.double(c.Beta1), C.double(c.Beta2), C.double(c.Eps), C.double(c.WeightDecay)))
}

// NoDecay exempts ps (which must be among the optimizer's parameters) from weight decay, as
// Hugging Face's Trainer does for biases and normalisation weights.
func (o *AdamW) NoDecay(ps ...*Tensor) {
	for _, p := range ps {
		found := false
		for i, q := range o.params {
			if q == p {
				o.decay[i] = 0
				found = true
			}
		}
		if !found {
			errorf("AdamW.NoDecay", "tensor %v is not a parameter of this optimizer", p)
		}
	}
}

// Steps is the number of Step calls so far.
func (o *AdamW) Steps() int64 { return o.step }

// ZeroGrad drops the parameters' gradients.
func (o *AdamW) ZeroGrad() { ZeroGrad(o.params) }

// Close frees the optimizer state.
func (o *AdamW) Close() { o.state.Close() }

// State returns the optimizer state for a checkpoint: "step" (the Step calls, an int64 scalar)
// and, for parameter i, "<i>.step" (its own step count, an int64 scalar), "<i>.exp_avg" and
// "<i>.exp_avg_sq", as in PyTorch's optimizer state_dict. The moment tensors are the live buffers
// (owned by the optimizer): write them out before the next Step. The step scalars belong to the
// current scope.
func (o *AdamW) State() map[string]*Tensor {
	st := map[string]*Tensor{"step": Scalar(float64(o.step), Int64, CPU)}
	for i := range o.params {
		k := strconv.Itoa(i)
		st[k+".step"] = Scalar(float64(o.steps[i]), Int64, CPU)
		st[k+".exp_avg"] = o.m[i]
		st[k+".exp_avg_sq"] = o.v[i]
	}
	return st
}

// LoadState copies a state written by State into the optimizer, checking every entry's presence
// and shape; on an error the optimizer is unchanged.
func (o *AdamW) LoadState(st map[string]*Tensor) (err error) {
	defer Recover(&err)
	s, ok := st["step"]
	if !ok {
		return fmt.Errorf("torch: AdamW state: missing \"step\"")
	}
	steps := make([]int64, len(o.params))
	for i := range o.params {
		k := strconv.Itoa(i)
		ps, ok := st[k+".step"]
		if !ok {
			return fmt.Errorf("torch: AdamW state: missing %q", k+".step")
		}
		if steps[i] = ps.Int(); steps[i] < 0 {
			return fmt.Errorf("torch: AdamW state: %q is %d, want a count >= 0", k+".step", steps[i])
		}
		for _, kind := range []struct {
			name string
			dst  *Tensor
		}{{"exp_avg", o.m[i]}, {"exp_avg_sq", o.v[i]}} {
			key := k + "." + kind.name
			src, ok := st[key]
			if !ok {
				return fmt.Errorf("torch: AdamW state: missing %q", key)
			}
			if a, b := src.Shape(), kind.dst.Shape(); fmt.Sprint(a) != fmt.Sprint(b) {
				return fmt.Errorf("torch: AdamW state: %q has shape %v, parameter %d has %v", key, a, i, b)
			}
		}
	}
	if want := 1 + 3*len(o.params); len(st) != want {
		return fmt.Errorf("torch: AdamW state: %d entries, want %d for %d parameters", len(st), want, len(o.params))
	}
	for i := range o.params {
		o.m[i].Copy_(st[strconv.Itoa(i)+".exp_avg"])
		o.v[i].Copy_(st[strconv.Itoa(i)+".exp_avg_sq"])
	}
	o.step = s.Int()
	copy(o.steps, steps)
	return nil
}

// ClipGradNorm scales the gradients of params so that their global L2 norm is at most maxNorm
// (torch.nn.utils.clip_grad_norm_) and returns the norm before clipping. As in PyTorch, a
// non-finite norm (an Inf or NaN gradient) is returned as it is and leaves the gradients scaled
// by 0 or NaN: check it (math.IsInf, math.IsNaN) and skip the optimizer step, or the weights and
// AdamW's moments become NaN for good.
func ClipGradNorm(params []*Tensor, maxNorm float64) float64 {
	if len(params) == 0 {
		return 0
	}
	hs := handles("ClipGradNorm", params)
	var total C.double
	check("ClipGradNorm", C.mt_clip_grad_norm(&hs[0], C.int(len(hs)), C.double(maxNorm), &total))
	return float64(total)
}
