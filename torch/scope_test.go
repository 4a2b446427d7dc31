package torch

import (
	"errors"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestScopeFreesAndKeeps(t *testing.T) {
	onTorch(t, func() {
		base := LiveTensors()
		var kept *Tensor
		func() {
			s := NewScope()
			defer s.Close()
			a := Ones([]int64{2}, Float32, testDevice)
			b := a.AddScalar(1)
			kept = b.MulScalar(2) // [4, 4]
			if s.Len() != 3 || LiveTensors() != base+3 {
				t.Errorf("scope holds %d, live %d (base %d)", s.Len(), LiveTensors(), base)
			}
			s.Keep(kept)
		}()
		if LiveTensors() != base+1 {
			t.Errorf("after Close: live %d, want %d", LiveTensors(), base+1)
		}
		expectFloats(t, "kept", kept.Float32s(), []float64{4, 4}, 0)
		r := Scoped(func() *Tensor {
			return Ones([]int64{1}, Float32, testDevice).AddScalar(2).Exp().Log()
		})
		expectFloats(t, "scoped", r.Float32s(), []float64{3}, 1e-6)
		if LiveTensors() != base+2 {
			t.Errorf("after Scoped: live %d, want %d", LiveTensors(), base+2)
		}
	})
}

// TestKeepLeavesOtherScopesAlone: Keep (and so Scoped) moves only what the closing scope would
// free. A weight returned from Scoped stays in its long-lived scope instead of moving into the
// caller's short one (where the end of this Run would free it), and a tensor of an enclosing scope
// stays in that scope.
func TestKeepLeavesOtherScopesAlone(t *testing.T) {
	var weights *Scope
	var w *Tensor
	onTorch(t, func() {
		weights = NewLongScope("weights")
		w = FromSlice([]float32{1, 2}).MoveTo(weights)
		outer := FromSlice([]float32{3})
		got := Scoped(func() *Tensor { return w })
		if got != w || weights.Len() != 1 {
			t.Errorf("Scoped(weight): weights scope holds %d tensors, want 1", weights.Len())
		}
		inner := NewScope()
		inner.Keep(outer)
		inner.Close()
		if !outer.Valid() {
			t.Error("Keep of an enclosing scope's tensor let the inner Close free it")
		}
		// A tensor of a scope opened after this one and left open is freed by Close, so it moves.
		mid := NewScope()
		NewScope()
		x := Ones([]int64{1}, Float32, CPU)
		mid.Keep(x)
		mid.Close()
		if !x.Valid() {
			t.Error("Keep did not rescue a tensor of an unclosed inner scope")
		}
	})
	onTorch(t, func() {
		if !w.Valid() {
			t.Error("the weight was freed with the Run that kept it")
			return
		}
		expectFloats(t, "weight", w.Float32s(), []float64{1, 2}, 0)
		weights.Close()
	})
}

// TestLongScopeChurnStaysSmall: a long-lived scope whose tensors are replaced one by one (a
// buffer swapped every step) keeps its bookkeeping proportional to the live tensors, not to all
// the tensors it ever held, and the survivors stay valid and owned.
func TestLongScopeChurnStaysSmall(t *testing.T) {
	onTorch(t, func() {
		long := NewLongScope("churn")
		defer long.Close()
		keep := Full([]int64{1}, 7, Float32, CPU).MoveTo(long)
		cur := Zeros([]int64{1}, Float32, CPU).MoveTo(long)
		for i := 0; i < 5000; i++ {
			next := Full([]int64{1}, float64(i), Float32, CPU).MoveTo(long)
			cur.Free()
			cur = next
		}
		if long.Len() != 2 || len(long.d.ts) > 64 {
			t.Errorf("after 5000 swaps: %d live, %d slots (want 2 live, at most 64 slots)", long.Len(), len(long.d.ts))
		}
		expectFloats(t, "survivors", Cat([]*Tensor{keep, cur}, 0).Float32s(), []float64{7, 4999}, 0)
		n := LiveTensors()
		cur.Free() // its slot index was rewritten by the compaction: freeing must hit the right one
		if LiveTensors() != n-1 || long.Len() != 1 || !keep.Valid() {
			t.Errorf("Free after compaction: live %d -> %d, scope %d, keep valid %v", n, LiveTensors(), long.Len(), keep.Valid())
		}
	})
}

func TestUseAfterClose(t *testing.T) {
	onTorch(t, func() {
		var dead *Tensor
		func() {
			s := NewScope()
			defer s.Close()
			dead = Ones([]int64{1}, Float32, testDevice)
		}()
		err := Do(func() error { dead.AddScalar(1); return nil })
		if err == nil || !strings.Contains(err.Error(), "after its scope was closed") {
			t.Errorf("use after close: %v", err)
		}
		x := Ones([]int64{1}, Float32, testDevice)
		x.Free()
		x.Free() // idempotent
		if Do(func() error { x.Neg(); return nil }) == nil {
			t.Error("use after Free accepted")
		}
	})
}

func TestLongScopeOutlivesRun(t *testing.T) {
	var weights *Scope
	var w *Tensor
	onTorch(t, func() {
		weights = NewLongScope("weights")
		w = FromSlice([]float32{1, 2}).MoveTo(weights)
		weights.With(func() { Zeros([]int64{3}, Float32, CPU) })
	})
	onTorch(t, func() {
		expectFloats(t, "weight after Run", w.Float32s(), []float64{1, 2}, 0)
		if weights.Len() != 2 {
			t.Errorf("long scope holds %d, want 2", weights.Len())
		}
		n := LiveTensors()
		weights.Close()
		weights.Close()
		if LiveTensors() != n-2 || w.Valid() {
			t.Errorf("long scope close: live %d -> %d", n, LiveTensors())
		}
	})
}

func TestCloseUnwindsInnerScopes(t *testing.T) {
	onTorch(t, func() {
		base := LiveTensors()
		outer := NewScope()
		Ones([]int64{1}, Float32, CPU)
		NewScope() // never closed by its opener
		Ones([]int64{1}, Float32, CPU)
		outer.Close()
		if LiveTensors() != base {
			t.Errorf("live %d, want %d", LiveTensors(), base)
		}
	})
}

func TestThreadOwnershipEnforced(t *testing.T) {
	// This goroutine is not the torch thread: the shim refuses and the op panics with *Error.
	err := Do(func() error { Zeros([]int64{1}, Float32, CPU); return nil })
	var te *Error
	if !errors.As(err, &te) || !strings.Contains(te.Msg, "torch thread") {
		t.Errorf("op off the torch thread: %v", err)
	}
	if OnTorchThread() {
		t.Error("test goroutine claims to be the torch thread")
	}
	onTorch(t, func() {
		if !OnTorchThread() {
			t.Error("Run closure not on the torch thread")
		}
		// Nested Run runs inline instead of deadlocking.
		if err := Run(func() error { Ones([]int64{1}, Float32, CPU); return nil }); err != nil {
			t.Error(err)
		}
	})
}

func TestRunSurvivesGoexitAndPanics(t *testing.T) {
	if err := Run(func() error { runtime.Goexit(); return nil }); !errors.Is(err, errGoexit) {
		t.Errorf("Goexit: %v", err)
	}
	if err := Run(func() error { panic("boom") }); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Errorf("panic: %v", err)
	}
	onTorch(t, func() {
		expectFloats(t, "after goexit", Ones([]int64{1}, Float32, CPU).Float32s(), []float64{1}, 0)
	})
}

func TestDroppedScopeIsReported(t *testing.T) {
	before := LeakedScopes()
	onTorch(t, func() {
		s := NewLongScope("dropped")
		Ones([]int64{1}, Float32, CPU).MoveTo(s)
	})
	for i := 0; i < 50 && LeakedScopes() == before; i++ {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if LeakedScopes() != before+1 {
		t.Errorf("leaked scopes %d, want %d", LeakedScopes(), before+1)
	}
}

// rssBytes reads the resident set size from /proc (Linux).
func rssBytes(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Skip("no /proc/self/statm")
	}
	f := strings.Fields(string(b))
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

// TestNoLeakOverManySteps runs a few thousand op-heavy steps (a tiny MLP forward, backward and
// AdamW update) and checks that live tensors return to the same count and RSS stays flat.
func TestNoLeakOverManySteps(t *testing.T) {
	steps := 3000
	if testing.Short() {
		steps = 600
	}
	var params []*Tensor
	var opt *AdamW
	var weights *Scope
	onTorch(t, func() {
		g := NewGenerator(1, testDevice)
		defer g.Close()
		weights = NewLongScope("mlp")
		weights.With(func() {
			params = []*Tensor{
				Randn([]int64{32, 16}, Float32, testDevice, g).MulScalar(0.1).SetRequiresGrad(true),
				Randn([]int64{8, 32}, Float32, testDevice, g).MulScalar(0.1).SetRequiresGrad(true),
			}
		})
		var err error
		if opt, err = NewAdamW(named(params...), DefaultAdamW()); err != nil {
			t.Error(err)
		}
	})
	step := func() {
		s := NewScope()
		defer s.Close()
		x := Ones([]int64{4, 16}, Float32, testDevice)
		h := Linear(x, params[0], nil).Silu()
		loss := Linear(h, params[1], nil).Square().Mean(false)
		loss.Backward()
		ClipGradNorm(params, 1)
		opt.Step()
		opt.ZeroGrad()
	}
	var live0, rss0 int64
	onTorch(t, func() {
		for i := 0; i < 200; i++ { // warm-up: allocator caches, first-call dispatch
			step()
		}
		live0, rss0 = LiveTensors(), rssBytes(t)
		for i := 0; i < steps; i++ {
			step()
		}
		if live := LiveTensors(); live != live0 {
			t.Errorf("live tensors %d -> %d over %d steps", live0, live, steps)
		}
		// Each step makes ~20 tensors; a leak of even one 4x16 float tensor per step would be
		// ~1 MB here, and a leaked autograd graph far more.
		if grow := rssBytes(t) - rss0; grow > 8<<20 && !raceEnabled {
			t.Errorf("RSS grew by %d bytes over %d steps", grow, steps)
		}
		opt.Close()
		weights.Close()
	})
}

// TestRunFromManyGoroutines: Run serialises closures from many goroutines onto the one torch thread.
func TestRunFromManyGoroutines(t *testing.T) {
	const n = 16
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		go func(i int) {
			errs <- Run(func() error {
				x := Full([]int64{3}, float64(i), Int64, CPU).Sum(false).Int()
				if x != int64(3*i) {
					return errors.New("wrong sum " + strconv.FormatInt(x, 10))
				}
				if !OnTorchThread() {
					return errors.New("not on the torch thread")
				}
				return nil
			})
		}(i)
	}
	for i := 0; i < n; i++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// TestOpenStackScopeIsNotALeak: a scope still on the stack is alive even if nobody holds its
// handle; only its enclosing Close frees it, and the GC never reports it.
func TestOpenStackScopeIsNotALeak(t *testing.T) {
	before := LeakedScopes()
	onTorch(t, func() {
		outer := NewScope()
		NewScope() // handle dropped at once
		Ones([]int64{1}, Float32, CPU)
		for i := 0; i < 5; i++ {
			runtime.GC()
			time.Sleep(5 * time.Millisecond)
		}
		outer.Close()
	})
	if LeakedScopes() != before {
		t.Errorf("an open scope on the stack was reported as leaked")
	}
}
