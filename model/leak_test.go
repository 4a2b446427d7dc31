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
