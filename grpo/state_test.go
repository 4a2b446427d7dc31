package grpo

import (
	"context"
	"testing"

	"github.com/mtgrpo/mtgrpo/grpo/algo"
	"github.com/mtgrpo/mtgrpo/torch"
)

// A trainer restored from step k (weights, State, Progress) takes exactly the step k+1 the
// original took: the same rollout, the same update, bit for bit on the CPU.
func TestRestoreContinuesExactly(t *testing.T) {
	dir := tinyDir(t, 14, nil)
	err := torch.Run(func() error {
		cfg := smallConfig()
		cfg.Update.Epochs, cfg.Update.MiniBatches = 2, 2 // moments, step counts and shuffles all matter
		cfg.Optim.Warmup, cfg.Optim.TotalSteps, cfg.Optim.Schedule = 3, 20, algo.Cosine
		a := newRun(t, dir, newByteEnv(2, byteSum), cfg, nil)
		defer a.close()
		src := &sliceSource{tasks: sayTasks(8)}
		if _, _, err := a.tr.Step(context.Background(), src); err != nil {
			return err
		}
		w1 := weights(a.m)
		p1 := a.tr.Progress()
		keep := torch.NewLongScope("snapshot")
		defer keep.Close()
		s1 := map[string]*torch.Tensor{}
		keep.With(func() {
			for k, v := range a.tr.State() {
				s1[k] = v.Clone()
			}
		})
		pos := src.pos
		if _, _, err := a.tr.Step(context.Background(), src); err != nil {
			return err
		}
		w2 := weights(a.m)

		b := newRun(t, dir, newByteEnv(2, byteSum), cfg, nil)
		defer b.close()
		torch.NoGrad(func() {
			for _, p := range b.m.Parameters() {
				p.Tensor.Copy_(torch.FromSlice(w1[p.Name], p.Tensor.Shape()...))
			}
		})
		if err := b.tr.Restore(p1, s1); err != nil {
			return err
		}
		if b.tr.Progress() != p1 {
			t.Errorf("progress %+v, want %+v", b.tr.Progress(), p1)
		}
		if _, _, err := b.tr.Step(context.Background(), &sliceSource{tasks: sayTasks(8), pos: pos}); err != nil {
			return err
		}
		if d, where := maxDiff(w2, weights(b.m)); d != 0 {
			t.Errorf("the restored run's step differs by %g at %s", d, where)
		}
		// A state from another model is refused by name, and leaves the trainer as it was.
		bad := map[string]*torch.Tensor{"optim/model.nothing.weight.exp_avg": torch.Zeros([]int64{1}, torch.Float32, torch.CPU)}
		if err := b.tr.Restore(p1, bad); err == nil {
			t.Error("a foreign state was accepted")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
