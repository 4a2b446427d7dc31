package torch

/*
#include "shim.h"
*/
import "C"

// SetRequiresGrad marks a leaf tensor as a parameter whose gradient Backward accumulates; it
// returns t.
func (t *Tensor) SetRequiresGrad(on bool) *Tensor {
	check("SetRequiresGrad", C.mt_set_requires_grad(t.handle("SetRequiresGrad"), cbool(on)))
	return t
}

// RequiresGrad reports whether autograd tracks t.
func (t *Tensor) RequiresGrad() bool { return t.Info().RequiresGrad }

// Grad is t's accumulated gradient (a new handle in the current scope sharing the gradient's
// memory), or nil when there is none.
func (t *Tensor) Grad() *Tensor {
	var out C.mt_tensor
	check("Grad", C.mt_grad(t.handle("Grad"), &out))
	if out == nil {
		return nil
	}
	return wrap("Grad", out)
}

// ZeroGrad drops the gradients of params (as PyTorch's zero_grad(set_to_none=True)).
func ZeroGrad(params []*Tensor) { zeroGrad("ZeroGrad", params, true) }

// ZeroGradInPlace zeroes the gradients of params, keeping their memory.
func ZeroGradInPlace(params []*Tensor) { zeroGrad("ZeroGradInPlace", params, false) }

func zeroGrad(op string, params []*Tensor, none bool) {
	if len(params) == 0 {
		return
	}
	hs := handles(op, params)
	check(op, C.mt_zero_grad(&hs[0], C.int(len(hs)), cbool(none)))
}

// Detach is t cut from the autograd graph (shares memory).
func (t *Tensor) Detach() *Tensor {
	var out C.mt_tensor
	check("Detach", C.mt_detach(t.handle("Detach"), 0, &out))
	return wrap("Detach", out)
}

// Detach_ cuts t itself from the graph and returns t.
func (t *Tensor) Detach_() *Tensor {
	check("Detach_", C.mt_detach(t.handle("Detach_"), 1, nil))
	return t
}

// BackwardOpts configures Backward and Grads.
type BackwardOpts struct {
	// GradOutputs are d(loss)/d(output) for each output; nil means 1 for scalar outputs.
	GradOutputs []*Tensor
	// Inputs limits Backward's accumulation to these leaves (nil: every leaf that needs grad).
	Inputs []*Tensor
	// RetainGraph keeps the graph for another backward pass.
	RetainGraph bool
	// CreateGraph records the backward pass itself (for higher-order gradients).
	CreateGraph bool
	// AllowUnused (Grads only) returns nil for inputs the outputs do not depend on instead of failing.
	AllowUnused bool
}

// Backward is t.backward() for a scalar t.
func (t *Tensor) Backward() { Backward([]*Tensor{t}, BackwardOpts{}) }

// Backward accumulates into the .grad of the graph's leaves the gradient of outputs, weighted by
// o.GradOutputs (torch.autograd.backward).
func Backward(outputs []*Tensor, o BackwardOpts) {
	if len(outputs) == 0 {
		errorf("Backward", "no outputs")
	}
	outs, grads, ins := backwardArgs("Backward", outputs, o)
	check("Backward", C.mt_backward(&outs[0], C.int(len(outs)), handlesPtr(grads), handlesPtr(ins), C.int(len(ins)),
		cbool(o.RetainGraph), cbool(o.CreateGraph)))
}

// Grads returns d(outputs)/d(inputs) weighted by o.GradOutputs without touching any .grad
// (torch.autograd.grad); o.Inputs is ignored.
func Grads(outputs, inputs []*Tensor, o BackwardOpts) []*Tensor {
	if len(outputs) == 0 || len(inputs) == 0 {
		errorf("Grads", "need outputs and inputs")
	}
	o.Inputs = inputs
	outs, grads, ins := backwardArgs("Grads", outputs, o)
	res := make([]C.mt_tensor, len(ins))
	check("Grads", C.mt_autograd_grad(&outs[0], C.int(len(outs)), handlesPtr(grads), &ins[0], C.int(len(ins)),
		cbool(o.RetainGraph), cbool(o.CreateGraph), cbool(o.AllowUnused), &res[0]))
	gs := make([]*Tensor, len(res))
	for i, h := range res {
		if h != nil {
			gs[i] = wrap("Grads", h)
		}
	}
	return gs
}

func backwardArgs(op string, outputs []*Tensor, o BackwardOpts) (outs, grads, ins []C.mt_tensor) {
	if o.GradOutputs != nil && len(o.GradOutputs) != len(outputs) {
		errorf(op, "%d grad outputs for %d outputs", len(o.GradOutputs), len(outputs))
	}
	outs = handles(op, outputs)
	if o.GradOutputs != nil {
		grads = handles(op, o.GradOutputs)
	}
	return outs, grads, handles(op, o.Inputs)
}

func guarded(op string, kind C.int, fn func()) {
	var g C.mt_guard
	check(op, C.mt_guard_new(kind, &g))
	defer func() { check(op, C.mt_guard_free(g)) }()
	fn()
}

// NoGrad runs fn with gradient recording off (torch.no_grad()).
func NoGrad(fn func()) { guarded("NoGrad", C.MT_GUARD_NO_GRAD, fn) }

// EnableGrad runs fn with gradient recording on, e.g. inside NoGrad (torch.enable_grad()).
func EnableGrad(fn func()) { guarded("EnableGrad", C.MT_GUARD_ENABLE_GRAD, fn) }

// InferenceMode runs fn in inference mode (torch.inference_mode()): faster than NoGrad, but the
// tensors it makes can never enter autograd later. Use it for generation, not for tensors a
// training step will reuse.
func InferenceMode(fn func()) { guarded("InferenceMode", C.MT_GUARD_INFERENCE, fn) }

// GradEnabled reports whether gradient recording is on for the torch thread.
func GradEnabled() bool {
	var r C.int
	check("GradEnabled", C.mt_grad_enabled(&r))
	return r != 0
}
