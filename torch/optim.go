package torch

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"
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

// NamedTensor is a tensor with its name: a parameter of an optimizer (model.Param is this type) or
// an entry of a checkpoint.
type NamedTensor struct {
	Name   string
	Tensor *Tensor
}

// AdamW is torch.optim.AdamW over a fixed list of named parameters, with mixed precision.
//
// A float32 or float64 parameter is updated in place, its moments in its own dtype. A float16 or
// bfloat16 parameter gets a float32 master copy and float32 moments: Step updates the master and
// writes it back, rounded to the parameter's dtype, in the same crossing, so the model that
// generates and trains keeps its low-precision weights while steps far below their rounding step
// (1e-6 on |w| ≈ 0.02 is 1/120 of a bf16 ulp) accumulate in the master instead of being lost, as in
// FSDP's and DeepSpeed's mixed precision.
//
// Decoupled weight decay, bias correction and one step count per parameter follow PyTorch; the
// step runs libtorch's multi-tensor kernels (AdamWKernel), as torch.optim.AdamW with foreach=True
// or fused=True does, equal to the per-parameter step to float32 rounding. Config
// is read at every Step: a schedule sets Config.LR before each one. The state (State, LoadState) is
// keyed by parameter name. One Step and one ClipGradNorm are one crossing each for all parameters.
type AdamW struct {
	Config AdamWConfig

	names   []string
	index   map[string]int
	params  []*Tensor
	master  []*Tensor // float32 copy of a float16/bfloat16 parameter; nil for float32/float64 ones
	m, v    []*Tensor // first and second moments, in the master's (or parameter's) dtype
	decay   []C.int   // 1 where weight decay applies
	steps   []int64   // per parameter: the updates it received (its bias-correction step)
	step    int64     // Step calls
	skipped int64     // Skip calls
	state   *Scope

	// perTensor runs the step one parameter at a time (the reference the multi-tensor kernels
	// are tested against) instead of libtorch's multi-tensor kernels.
	perTensor bool
}

// AdamWKernel names the multi-tensor AdamW kernel of this build: "fused" (at::_fused_adamw_,
// libtorch 2.4+, one kernel chain for all parameters of a device and dtype) or "foreach" (the
// _foreach_ ops, a few multi-tensor kernels per step).
func AdamWKernel() string {
	if C.mt_adamw_kernel() == 2 {
		return "fused"
	}
	return "foreach"
}

// lowPrecision reports the parameter dtypes that AdamW updates through a float32 master copy.
func lowPrecision(dt DType) bool { return dt == BFloat16 || dt == Float16 }

// NewAdamW makes an optimizer for params (unique, non-empty names; floating-point tensors). The
// moments start at zero; the master copies of float16/bfloat16 parameters start at their values.
func NewAdamW(params []NamedTensor, cfg AdamWConfig) (o *AdamW, err error) {
	defer Recover(&err)
	o = &AdamW{Config: cfg, index: map[string]int{}}
	if err := o.addNames(params); err != nil {
		return nil, err
	}
	o.state = NewLongScope("adamw")
	o.state.With(func() {
		NoGrad(func() {
			for _, p := range o.params {
				i := p.Info()
				dt := i.DType
				var w *Tensor
				if lowPrecision(dt) {
					dt = Float32
					w = p.Detach().To(i.Device, Float32)
				}
				o.master = append(o.master, w)
				o.m = append(o.m, Zeros(i.Shape, dt, i.Device))
				o.v = append(o.v, Zeros(i.Shape, dt, i.Device))
			}
		})
	})
	return o, nil
}

// addNames checks and records the parameters: names unique and non-empty, tensors alive and
// floating-point. (Unique names give unique state keys: no key suffix ends with another.)
func (o *AdamW) addNames(params []NamedTensor) error {
	for _, p := range params {
		if p.Name == "" {
			return fmt.Errorf("torch: AdamW: a parameter has an empty name")
		}
		if !p.Tensor.Valid() {
			return fmt.Errorf("torch: AdamW: parameter %q is nil or freed", p.Name)
		}
		if dt := p.Tensor.DType(); !dt.IsFloat() {
			return fmt.Errorf("torch: AdamW: parameter %q is %s, want a floating-point tensor", p.Name, dt)
		}
		if _, dup := o.index[p.Name]; dup {
			return fmt.Errorf("torch: AdamW: parameter %q is listed twice", p.Name)
		}
		for i, q := range o.params {
			if q == p.Tensor {
				return fmt.Errorf("torch: AdamW: parameters %q and %q are the same tensor (a tied weight is listed once)", o.names[i], p.Name)
			}
		}
		o.index[p.Name] = len(o.names)
		o.names = append(o.names, p.Name)
		o.params = append(o.params, p.Tensor)
		o.decay = append(o.decay, 1)
		o.steps = append(o.steps, 0)
	}
	return nil
}

// Step applies one update from the parameters' current gradients. A parameter without one is left
// alone and, as in PyTorch, its own step count (which sets its bias correction) does not advance.
// It does not look at the gradients' values: check ClipGradNorm's result and call Skip instead
// when it is not finite.
func (o *AdamW) Step() { o.step1("AdamW.Step", nil) }

// StepWith is Step with the gradients given, one per parameter in the optimizer's order (nil:
// none, the parameter is left alone), instead of the parameters' own: GradBuffers.StepGrads,
// float32 for the parameters with float32 masters. Each must have its parameter's shape.
func (o *AdamW) StepWith(grads []*Tensor) {
	if len(grads) != len(o.params) {
		errorf("AdamW.StepWith", "%d gradients for %d parameters", len(grads), len(o.params))
	}
	o.step1("AdamW.StepWith", grads)
}

func (o *AdamW) step1(op string, grads []*Tensor) {
	if len(o.params) == 0 {
		return
	}
	c := o.Config
	ps, ws := handles(op, o.params), handles(op, o.master)
	ms, vs := handles(op, o.m), handles(op, o.v)
	var gs *C.mt_tensor
	if grads != nil {
		gs = &handles(op, grads)[0]
	}
	check(op, C.mt_adamw_step(&ps[0], &ws[0], &ms[0], &vs[0], gs, &o.decay[0],
		(*C.int64_t)(unsafe.Pointer(&o.steps[0])), C.int(len(ps)),
		C.double(c.LR), C.double(c.Beta1), C.double(c.Beta2), C.double(c.Eps), C.double(c.WeightDecay),
		cbool(o.perTensor)))
	o.step++
}

// Skip gives up the step the current gradients were for (a non-finite loss or gradient norm):
// it drops the gradients and counts the skip; weights, master copies, moments and step counts are
// not touched, so the next Step is the one it would have been without the bad batch.
func (o *AdamW) Skip() {
	o.ZeroGrad()
	o.skipped++
}

// ClipGradNorm is ClipGradNorm over the optimizer's parameters.
func (o *AdamW) ClipGradNorm(maxNorm float64) float64 { return ClipGradNorm(o.params, maxNorm) }

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

// NoDecayNames exempts the named parameters from weight decay. An unknown name is an error and
// changes nothing.
func (o *AdamW) NoDecayNames(names ...string) error {
	for _, n := range names {
		if _, ok := o.index[n]; !ok {
			return fmt.Errorf("torch: AdamW.NoDecayNames: %q is not a parameter of this optimizer", n)
		}
	}
	for _, n := range names {
		o.decay[o.index[n]] = 0
	}
	return nil
}

// Decays reports whether weight decay applies to the named parameter (false for unknown names).
func (o *AdamW) Decays(name string) bool {
	i, ok := o.index[name]
	return ok && o.decay[i] != 0
}

// Names lists the parameters' names in the order they were given.
func (o *AdamW) Names() []string { return append([]string(nil), o.names...) }

// Master is the float32 master copy of a float16/bfloat16 parameter (owned by the optimizer:
// read it, do not keep it past Close), or nil for a float32/float64 or unknown parameter.
func (o *AdamW) Master(name string) *Tensor {
	if i, ok := o.index[name]; ok {
		return o.master[i]
	}
	return nil
}

// Steps is the number of Step calls so far.
func (o *AdamW) Steps() int64 { return o.step }

// Skipped is the number of Skip calls so far.
func (o *AdamW) Skipped() int64 { return o.skipped }

// ZeroGrad drops the parameters' gradients.
func (o *AdamW) ZeroGrad() { ZeroGrad(o.params) }

// Close frees the optimizer state.
func (o *AdamW) Close() {
	if o.state != nil {
		o.state.Close()
	}
}

// ClipGradNorm scales the gradients of params so that their global L2 norm is at most maxNorm
// (torch.nn.utils.clip_grad_norm_) and returns the norm before clipping, accumulated in float32
// whatever the gradients' dtype. As in PyTorch, a non-finite norm (an Inf or NaN gradient) is
// returned as it is and leaves the gradients scaled by 0 or NaN: check it (math.IsInf, math.IsNaN)
// and skip the optimizer step (AdamW.Skip), or the weights and AdamW's moments become NaN for good.
func ClipGradNorm(params []*Tensor, maxNorm float64) float64 {
	if len(params) == 0 {
		return 0
	}
	hs := handles("ClipGradNorm", params)
	var total C.double
	check("ClipGradNorm", C.mt_clip_grad_norm(&hs[0], C.int(len(hs)), C.double(maxNorm), &total))
	return float64(total)
}
