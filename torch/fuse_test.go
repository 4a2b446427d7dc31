package torch

import (
	"strings"
	"testing"
)

// FuseRows makes q [2, 3], k [1, 3], v [1, 3] the rows of one [4, 3] tensor and leaves them the
// same parameters: an update in place of k shows in the whole; a second call copies nothing; a
// part replaced by Swap is copied into new storage on the next call, which then shows its values;
// a group whose parts do not stack is refused and changes nothing.
func TestFuseRows(t *testing.T) {
	onTorch(t, func() {
		q := dev(FromSlice([]float32{1, 2, 3, 4, 5, 6}, 2, 3)).SetRequiresGrad(true)
		k := dev(FromSlice([]float32{7, 8, 9}, 1, 3)).SetRequiresGrad(true)
		v := dev(FromSlice([]float32{10, 11, 12}, 1, 3))
		wholes, moved := FuseRows([][]*Tensor{{q, k, v}})
		if moved != 1 || len(wholes) != 1 {
			t.Errorf("first call: %d groups copied, %d wholes; want 1, 1", moved, len(wholes))
			return
		}
		expectFloats(t, "whole", wholes[0].Float32s(), []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, 0)
		if !q.RequiresGrad() || !k.RequiresGrad() || v.RequiresGrad() {
			t.Errorf("requires_grad changed: q %v k %v v %v", q.RequiresGrad(), k.RequiresGrad(), v.RequiresGrad())
		}
		NoGrad(func() { k.AddScalar_(100) })
		expectFloats(t, "whole after k += 100", wholes[0].Float32s(), []float64{1, 2, 3, 4, 5, 6, 107, 108, 109, 10, 11, 12}, 0)
		if _, moved := FuseRows([][]*Tensor{{q, k, v}}); moved != 0 {
			t.Errorf("second call copied %d groups, want 0", moved)
		}
		fresh := dev(FromSlice([]float32{-1, -2, -3}, 1, 3))
		k.Swap(fresh)
		wholes, moved = FuseRows([][]*Tensor{{q, k, v}})
		if moved != 1 {
			t.Errorf("after a swap: %d groups copied, want 1", moved)
		}
		expectFloats(t, "whole after the swap", wholes[0].Float32s(), []float64{1, 2, 3, 4, 5, 6, -1, -2, -3, 10, 11, 12}, 0)
		NoGrad(func() { q.MulScalar_(2) })
		expectFloats(t, "whole after q *= 2", wholes[0].Float32s(), []float64{2, 4, 6, 8, 10, 12, -1, -2, -3, 10, 11, 12}, 0)
		bad := dev(FromSlice([]float32{1, 2}, 1, 2))
		err := Do(func() error { FuseRows([][]*Tensor{{q, k}, {v, bad}}); return nil })
		if err == nil || !strings.Contains(err.Error(), "does not stack") {
			t.Errorf("parts of different widths: %v", err)
		}
		if _, moved := FuseRows([][]*Tensor{{q, k, v}}); moved != 0 {
			t.Errorf("the refused call moved the first group: %d copied after it", moved)
		}
	})
}
