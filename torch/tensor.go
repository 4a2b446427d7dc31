package torch

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"strings"
	"unsafe"
)

// Tensor is a handle to a libtorch tensor owned by a Scope. It is valid until its scope closes (or
// Free); using it afterwards panics with *Error instead of touching freed memory.
type Tensor struct {
	h     C.mt_tensor
	scope *scopeData
	slot  int
	meta  *Info // shape, dtype, device: fixed for a handle, fetched once
}

// wrap registers a new handle in the innermost scope.
func wrap(op string, h C.mt_tensor) *Tensor {
	t := &Tensor{h: h}
	if len(stack) == 0 {
		// Nowhere to own it: free at once rather than leak.
		C.mt_free(&h, 1)
		errorf(op, "no open scope: run torch work inside torch.Run")
	}
	d := current(op)
	if d.closed.Load() {
		C.mt_free(&h, 1)
		errorf(op, "the innermost scope %q is closed (closed inside its own With?)", d.name)
	}
	d.add(t)
	return t
}

func (t *Tensor) handle(op string) C.mt_tensor {
	if t == nil {
		errorf(op, "nil tensor")
	}
	if t.h == nil {
		errorf(op, "tensor used after its scope was closed or it was freed")
	}
	return t.h
}

// Free releases the tensor now instead of when its scope closes.
func (t *Tensor) Free() {
	if t == nil || t.h == nil {
		return
	}
	h := t.h
	t.scope.remove(t)
	t.h = nil
	check("Free", C.mt_free(&h, 1))
}

// Swap exchanges the tensors t and u hold: afterwards t is what u was and the other way round,
// each still owned by its own scope. Code that keeps *Tensor fields (a model's weights) can so be
// pointed at another tensor, e.g. a weight gathered from shards and then an empty placeholder.
func (t *Tensor) Swap(u *Tensor) {
	t.handle("Swap")
	u.handle("Swap")
	t.h, u.h = u.h, t.h
	t.meta, u.meta = u.meta, t.meta
}

// MoveTo transfers ownership to s (e.g. a long-lived scope) and returns t.
func (t *Tensor) MoveTo(s *Scope) *Tensor {
	t.handle("MoveTo")
	if s.d.closed.Load() {
		errorf("MoveTo", "scope %q is closed", s.d.name)
	}
	t.moveTo(s.d)
	return t
}

func (t *Tensor) moveTo(d *scopeData) {
	t.handle("MoveTo")
	if t.scope == d {
		return
	}
	t.scope.remove(t)
	d.add(t)
}

// Valid reports whether the tensor is still alive.
func (t *Tensor) Valid() bool { return t != nil && t.h != nil }

// Info is a tensor's metadata, fetched in one crossing.
type Info struct {
	Shape        []int64
	DType        DType
	Device       Device
	Numel        int64
	RequiresGrad bool
	Contiguous   bool
}

// Info returns shape, dtype, device and flags.
func (t *Tensor) Info() Info {
	var shape [C.MT_MAX_DIMS]C.int64_t
	var ndim, dt, dev, rg, contig C.int
	var numel C.int64_t
	check("Info", C.mt_info(t.handle("Info"), &shape[0], &ndim, &dt, &dev, &numel, &rg, &contig))
	s := make([]int64, int(ndim))
	for i := range s {
		s[i] = int64(shape[i])
	}
	return Info{Shape: s, DType: DType(dt), Device: Device(dev), Numel: int64(numel),
		RequiresGrad: rg != 0, Contiguous: contig != 0}
}

// fixed returns the metadata no op of this package can change for a handle (shape, dtype,
// device, numel), fetching it on first use.
func (t *Tensor) fixed(op string) *Info {
	t.handle(op)
	if t.meta == nil {
		i := t.Info()
		t.meta = &i
	}
	return t.meta
}

// Shape is the size of every dimension (a copy the caller may modify).
func (t *Tensor) Shape() []int64 { return append([]int64(nil), t.fixed("Shape").Shape...) }

// Dim is the number of dimensions.
func (t *Tensor) Dim() int { return len(t.fixed("Dim").Shape) }

// Size is the size of dimension d (negative counts from the end).
func (t *Tensor) Size(d int) int64 {
	s := t.fixed("Size").Shape
	if d < 0 {
		d += len(s)
	}
	if d < 0 || d >= len(s) {
		errorf("Size", "dimension %d out of range for shape %v", d, s)
	}
	return s[d]
}

// Numel is the number of elements.
func (t *Tensor) Numel() int64 { return t.fixed("Numel").Numel }

// DType is the element type.
func (t *Tensor) DType() DType { return t.fixed("DType").DType }

// Device is where the tensor lives.
func (t *Tensor) Device() Device { return t.fixed("Device").Device }

// String describes the tensor (not its values), e.g. "Tensor[2 3] float32 cpu".
func (t *Tensor) String() string {
	if !t.Valid() {
		return "Tensor(freed)"
	}
	i := t.Info()
	dims := make([]string, len(i.Shape))
	for k, d := range i.Shape {
		dims[k] = fmt.Sprint(d)
	}
	return fmt.Sprintf("Tensor[%s] %s %s", strings.Join(dims, " "), i.DType, i.Device)
}

// Values renders the tensor's values for debugging (libtorch's printout).
func (t *Tensor) Values() string {
	var p *C.char
	check("Values", C.mt_to_string(t.handle("Values"), &p))
	defer C.free(unsafe.Pointer(p))
	return C.GoString(p)
}

// Float is the value of a one-element tensor as float64.
func (t *Tensor) Float() float64 {
	var f C.double
	var i C.int64_t
	check("Float", C.mt_item(t.handle("Float"), &f, &i))
	return float64(f)
}

// Int is the value of a one-element tensor as int64.
func (t *Tensor) Int() int64 {
	var f C.double
	var i C.int64_t
	check("Int", C.mt_item(t.handle("Int"), &f, &i))
	return int64(i)
}

// Bool is the value of a one-element tensor as bool.
func (t *Tensor) Bool() bool { return t.Int() != 0 }

// To returns the tensor on dev with dtype dt (the same tensor's data when nothing changes).
func (t *Tensor) To(dev Device, dt DType) *Tensor {
	var out C.mt_tensor
	check("To", C.mt_to(t.handle("To"), C.int(dev), C.int(dt), 0, &out))
	return wrap("To", out)
}

// ToDevice moves the tensor to dev, keeping its dtype.
func (t *Tensor) ToDevice(dev Device) *Tensor {
	var out C.mt_tensor
	check("ToDevice", C.mt_to(t.handle("ToDevice"), C.int(dev), -1, 0, &out))
	return wrap("ToDevice", out)
}

// ToDType converts to dt on the same device.
func (t *Tensor) ToDType(dt DType) *Tensor { return t.To(t.Device(), dt) }

// Contiguous returns a tensor with contiguous memory (t itself, re-wrapped, when it already is).
func (t *Tensor) Contiguous() *Tensor {
	var out C.mt_tensor
	check("Contiguous", C.mt_contiguous(t.handle("Contiguous"), &out))
	return wrap("Contiguous", out)
}

// Clone copies the data into a new tensor.
func (t *Tensor) Clone() *Tensor {
	var out C.mt_tensor
	check("Clone", C.mt_clone(t.handle("Clone"), &out))
	return wrap("Clone", out)
}

// Copy_ copies src into t in place (broadcasting, converting dtype and device) and returns t.
func (t *Tensor) Copy_(src *Tensor) *Tensor {
	check("Copy_", C.mt_copy_(t.handle("Copy_"), src.handle("Copy_")))
	return t
}

// Fill_ sets every element to v in place and returns t.
func (t *Tensor) Fill_(v float64) *Tensor {
	check("Fill_", C.mt_fill_(t.handle("Fill_"), C.double(v)))
	return t
}

// Equal reports whether a and b have the same shape and elements.
func Equal(a, b *Tensor) bool {
	var r C.int
	check("Equal", C.mt_equal(a.handle("Equal"), b.handle("Equal"), &r))
	return r != 0
}

// AllClose reports |a-b| <= atol + rtol*|b| everywhere.
func AllClose(a, b *Tensor, rtol, atol float64) bool {
	var r C.int
	check("AllClose", C.mt_allclose(a.handle("AllClose"), b.handle("AllClose"), C.double(rtol), C.double(atol), &r))
	return r != 0
}
