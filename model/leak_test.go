package model

import (
	"testing"

	"github.com/mtgrpo/mtgrpo/torch"
)

// Training steps, scoring and generation steps, each in its own scope, leave the number of live
// tensor handles where it was: nothing in the package leaks a handle into a longer-lived scope.
func TestNoLeakedTensors(t *testing.T) {
	onTorch(t, func() error {
		m := testModel(t, "llama", false, 51)
		defer m.Close()
		m.SetTrainable(true)
		c, err := m.NewKVCache(4, 32)
		if err != nil {
			return err
		}
		defer c.Close()
		b, _ := NewBatch(randomSeqs(52, m.Config.VocabSize, 6, 9, 4), true)
		step := func(i int) error {
			s := torch.NewScope()
			defer s.Close()
			trainStep(t, m, b, i%2 == 0)
			if _, err := m.LogProbs(b, ForwardOptions{Entropy: true, Hidden: true}); err != nil {
				return err
			}
			if _, err := m.Prefill(c, []int{0}, [][]int32{{1, 2, 3}}); err != nil {
				return err
			}
			if err := c.Fork(0, 1, 2); err != nil {
				return err
			}
			_, err := m.Decode(c, []int{0, 1, 2}, []int32{4, 5, 6})
			return err
		}
		if err := step(0); err != nil { // gradients are created on the first step
			return err
		}
		before := torch.LiveTensors()
		for i := 1; i <= 6; i++ {
			if err := step(i); err != nil {
				return err
			}
		}
		if after := torch.LiveTensors(); after != before {
			t.Errorf("live tensors %d after 6 steps, %d before", after, before)
		}
		return nil
	})
}

// Inside one long scope (a rollout loop), each call leaves only its results behind: Decode and
// Extend one tensor (the logits), LogProbs its Output tensors, Batch.Tensor one.
func TestCallsKeepOnlyTheirResults(t *testing.T) {
	onTorch(t, func() error {
		m := testModel(t, "qwen2", true, 53)
		defer m.Close()
		c, err := m.NewKVCache(2, 64)
		if err != nil {
			return err
		}
		defer c.Close()
		s := torch.NewScope()
		defer s.Close()
		b, _ := NewBatch(randomSeqs(54, m.Config.VocabSize, 5, 8), false)
		checks := []struct {
			name string
			want int64
			call func() error
		}{
			{"Prefill", 1, func() error { _, err := m.Prefill(c, []int{0, 1}, [][]int32{{1, 2}, {3, 4, 5}}); return err }},
			{"Decode", 1, func() error { _, err := m.Decode(c, []int{0, 1}, []int32{6, 7}); return err }},
			{"Extend", 1, func() error { _, err := m.Extend(c, []int{1}, [][]int32{{8, 9}}); return err }},
			{"LogProbs", 3, func() error {
				_, err := m.LogProbs(b, ForwardOptions{Entropy: true, Hidden: true})
				return err
			}},
			{"Logits", 1, func() error { _, err := m.Logits(b); return err }},
			{"Hidden", 1, func() error { _, err := m.Hidden(b); return err }},
			{"Batch.Tensor", 1, func() error {
				_, err := b.Tensor([][]float32{make([]float32, 5), make([]float32, 8)}, m.Device)
				return err
			}},
			{"Fork", 0, func() error { return c.Fork(1, 0) }},
		}
		for _, ck := range checks {
			before := torch.LiveTensors()
			if err := ck.call(); err != nil {
				return err
			}
			if got := torch.LiveTensors() - before; got != ck.want {
				t.Errorf("%s left %d tensors, want %d", ck.name, got, ck.want)
			}
		}
		return nil
	})
}
