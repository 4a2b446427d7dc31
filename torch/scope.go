package torch

/*
#include "shim.h"
*/
import "C"

import (
	"log"
	"runtime"
	"sync/atomic"
)

// Scope owns tensors and frees them all, in one crossing, when it closes.
//
// Scopes opened with NewScope form a stack on the torch thread; every op puts its result in the
// innermost one. Long-lived scopes (NewLongScope) are not on the stack: tensors enter them with
// MoveTo or while the scope is entered with With. Closing is idempotent.
type Scope struct {
	d *scopeData
}

// scopeData is what tensors point at. It never points back at the Scope, so a Scope that is
// dropped without Close can be collected and its cleanup can report the leak. live and closed are
// atomic only because that cleanup reads them from the GC's goroutine.
type scopeData struct {
	name    string
	ts      []*Tensor
	live    atomic.Int64
	closed  atomic.Bool
	onStack bool
}

// stack of open scopes, innermost last; touched only on the torch thread. It holds the Scope
// handles, so a scope on the stack is never reported as leaked.
var stack []*Scope

// leakedScopes counts scopes collected by the GC while still owning tensors.
var leakedScopes atomic.Int64

// NewScope opens a scope on top of the stack. Close it (defer s.Close()) on the torch thread.
func NewScope() *Scope {
	mustTorchThread("NewScope")
	s := newScopeHandle(&scopeData{name: "scope", onStack: true})
	stack = append(stack, s)
	return s
}

// NewLongScope makes a scope that is not on the stack, for tensors that outlive any one call:
// weights, optimizer state, KV caches. Close it when they are no longer needed.
func NewLongScope(name string) *Scope {
	return newScopeHandle(&scopeData{name: name})
}

func newScopeHandle(d *scopeData) *Scope {
	s := &Scope{d: d}
	runtime.AddCleanup(s, reportLeak, d)
	return s
}

// reportLeak runs when a Scope was collected; it only reports (freeing here would run libtorch off
// the torch thread).
func reportLeak(d *scopeData) {
	if n := d.live.Load(); !d.closed.Load() && n > 0 {
		leakedScopes.Add(1)
		log.Printf("torch: scope %q was garbage-collected without Close: %d tensors leaked", d.name, n)
	}
}

// LeakedScopes is how many scopes the GC found unclosed while they still owned tensors.
func LeakedScopes() int64 { return leakedScopes.Load() }

// Close frees every tensor the scope still owns. On the stack, it also closes any scopes opened
// after it that are still open (a missing Close in a callee does not leak past its caller).
func (s *Scope) Close() {
	d := s.d
	if d.closed.Load() {
		return
	}
	mustTorchThread("Scope.Close")
	if d.onStack {
		for i := len(stack) - 1; i >= 0; i-- {
			if stack[i] == s {
				for j := len(stack) - 1; j > i; j-- {
					stack[j].d.free()
				}
				stack = stack[:i]
				break
			}
		}
		d.onStack = false
	}
	d.free()
}

func (d *scopeData) free() {
	hs := make([]C.mt_tensor, 0, d.live.Load())
	for _, t := range d.ts {
		if t != nil && t.h != nil {
			hs = append(hs, t.h)
			t.h = nil
			t.scope = nil
		}
	}
	d.ts = nil
	d.live.Store(0)
	d.closed.Store(true)
	d.onStack = false
	if len(hs) > 0 {
		check("Scope.Close", C.mt_free(&hs[0], C.size_t(len(hs))))
	}
}

// Len is the number of live tensors the scope owns.
func (s *Scope) Len() int { return int(s.d.live.Load()) }

// Name is the scope's name (long scopes) or "scope".
func (s *Scope) Name() string { return s.d.name }

// With runs fn with s as the innermost scope, so the tensors fn creates belong to s. s stays open.
func (s *Scope) With(fn func()) {
	mustTorchThread("Scope.With")
	if s.d.closed.Load() {
		errorf("Scope.With", "scope %q is closed", s.d.name)
	}
	stack = append(stack, s)
	defer func() {
		for i := len(stack) - 1; i >= 0; i-- {
			if stack[i] == s {
				stack = append(stack[:i], stack[i+1:]...)
				break
			}
		}
	}()
	fn()
}

// Keep moves ts from this scope to the scope below it on the stack, so they survive Close.
// Tensors that Close would not free anyway (owned by a long-lived scope or by an enclosing scope)
// stay where they are: keeping a weight must not hand it to a short-lived scope. Tensors of scopes
// opened after this one and still open (Close unwinds those too) move as well.
func (s *Scope) Keep(ts ...*Tensor) {
	i := s.stackIndex()
	if i <= 0 {
		errorf("Scope.Keep", "scope %q has no parent scope on the stack", s.d.name)
	}
	parent := stack[i-1].d
	for _, t := range ts {
		t.handle("Scope.Keep")
		if freedWith(t.scope, i) {
			t.moveTo(parent)
		}
	}
}

// stackIndex is s's position on the stack, or -1.
func (s *Scope) stackIndex() int {
	for i := len(stack) - 1; i >= 0; i-- {
		if stack[i] == s {
			return i
		}
	}
	return -1
}

// freedWith reports whether d is a stack scope (NewScope) at position i or above: one that closing
// the scope at i frees.
func freedWith(d *scopeData, i int) bool {
	for j := len(stack) - 1; j >= i; j-- {
		if stack[j].d == d {
			return d.onStack
		}
	}
	return false
}

// Scoped runs fn in a new scope and keeps only its result, which moves to the enclosing scope.
func Scoped(fn func() *Tensor) *Tensor {
	s := NewScope()
	defer s.Close()
	r := fn()
	if r != nil {
		s.Keep(r)
	}
	return r
}

// current is the innermost open scope.
func current(op string) *scopeData {
	if len(stack) == 0 {
		errorf(op, "no open scope: run torch work inside torch.Run")
	}
	return stack[len(stack)-1].d
}

func (d *scopeData) add(t *Tensor) {
	t.scope = d
	t.slot = len(d.ts)
	d.ts = append(d.ts, t)
	d.live.Add(1)
}

func (d *scopeData) remove(t *Tensor) {
	d.ts[t.slot] = nil
	d.live.Add(-1)
	t.scope = nil
	// A long-lived scope whose tensors come and go (Free, MoveTo) would otherwise grow its slot
	// list for ever: compact once more than half of it is empty (amortised O(1) per removal).
	if n := len(d.ts); n >= 64 && d.live.Load()*2 < int64(n) {
		kept := d.ts[:0]
		for _, x := range d.ts {
			if x != nil {
				x.slot = len(kept)
				kept = append(kept, x)
			}
		}
		clear(d.ts[len(kept):])
		d.ts = kept
	}
}

func mustTorchThread(op string) {
	if C.mt_on_torch_thread() != 1 {
		errorf(op, "called off the torch thread: run torch work inside torch.Run")
	}
}

// LiveTensors is the number of tensor handles alive in the shim (created and not yet freed).
func LiveTensors() int64 { return int64(C.mt_live_tensors()) }

// TensorsCreated is the number of tensor handles the shim has created since it was loaded: a
// stretch of work that leaves it unchanged made no tensor at all (the static decode step's test).
func TensorsCreated() int64 { return int64(C.mt_tensors_created()) }
