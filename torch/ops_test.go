package torch

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

func f32(t *testing.T, x *Tensor) []float32 { return x.Float32s() }

func TestElementwise(t *testing.T) {
	onTorch(t, func() {
		a := dev(FromSlice([]float32{1, 4, 9}))
		b := dev(FromSlice([]float32{2, 2, 3}))
		expectFloats(t, "add", f32(t, a.Add(b)), []float64{3, 6, 12}, 0)
		expectFloats(t, "sub", f32(t, a.Sub(b)), []float64{-1, 2, 6}, 0)
		expectFloats(t, "mul", f32(t, a.Mul(b)), []float64{2, 8, 27}, 0)
		expectFloats(t, "div", f32(t, a.Div(b)), []float64{0.5, 2, 3}, 0)
		expectFloats(t, "pow", f32(t, a.Pow(b)), []float64{1, 16, 729}, 1e-3) // CUDA's powf may be 1 ulp off
		expectFloats(t, "addS", f32(t, a.AddScalar(1)), []float64{2, 5, 10}, 0)
		expectFloats(t, "rsub", f32(t, a.RSubScalar(1)), []float64{0, -3, -8}, 0)
		expectFloats(t, "powS", f32(t, a.PowScalar(0.5)), []float64{1, 2, 3}, 1e-6)
		expectFloats(t, "neg", f32(t, a.Neg()), []float64{-1, -4, -9}, 0)
		expectFloats(t, "sqrt", f32(t, a.Sqrt()), []float64{1, 2, 3}, 1e-6)
		expectFloats(t, "rsqrt", f32(t, a.Rsqrt()), []float64{1, 0.5, 1.0 / 3}, 1e-6)
		expectFloats(t, "log", f32(t, a.Log()), []float64{0, math.Log(4), math.Log(9)}, 1e-6)
		z := dev(FromSlice([]float32{0, 1, -1}))
		expectFloats(t, "exp", f32(t, z.Exp()), []float64{1, math.E, 1 / math.E}, 1e-6)
		expectFloats(t, "tanh", f32(t, z.Tanh()), []float64{0, math.Tanh(1), -math.Tanh(1)}, 1e-6)
		// sigmoid(1) = 1/(1+e^-1) = 0.7310586; silu(x) = x*sigmoid(x): silu(-1) = -0.2689414.
		expectFloats(t, "sigmoid", f32(t, z.Sigmoid()), []float64{0.5, 0.7310586, 0.2689414}, 1e-6)
		expectFloats(t, "silu", f32(t, z.Silu()), []float64{0, 0.7310586, -0.2689414}, 1e-6)
		expectFloats(t, "clamp", f32(t, a.Clamp(2, 5)), []float64{2, 4, 5}, 0)
		expectFloats(t, "clampmin", f32(t, z.ClampMin(0)), []float64{0, 1, 0}, 0)
		// In place: a += b; a *= 2 -> [6, 12, 24].
		c := a.Clone()
		c.Add_(b).MulScalar_(2)
		expectFloats(t, "inplace", f32(t, c), []float64{6, 12, 24}, 0)
		expectFloats(t, "a unchanged", f32(t, a), []float64{1, 4, 9}, 0)
		// Integer tensors stay integral with integral scalars.
		i := dev(FromSlice([]int64{1, 2})).AddScalar(3)
		if i.DType() != Int64 {
			t.Errorf("int64 + 3 gave %v", i.DType())
		}
	})
}

func TestComparisonsAndMasks(t *testing.T) {
	onTorch(t, func() {
		a := dev(FromSlice([]float32{1, 2, 3}))
		b := dev(FromSlice([]float32{3, 2, 1}))
		check := func(name string, x *Tensor, want ...bool) {
			got := x.Bools()
			for k := range want {
				if got[k] != want[k] {
					t.Errorf("%s = %v, want %v", name, got, want)
					return
				}
			}
		}
		check("eq", a.Eq(b), false, true, false)
		check("ne", a.Ne(b), true, false, true)
		check("lt", a.Lt(b), true, false, false)
		check("le", a.Le(b), true, true, false)
		check("gt", a.Gt(b), false, false, true)
		check("ge", a.Ge(b), false, true, true)
		check("gtS", a.GtScalar(1.5), false, true, true)
		m := a.Lt(b)
		expectFloats(t, "where", f32(t, Where(m, a, b)), []float64{1, 2, 1}, 0)
		expectFloats(t, "masked_fill", f32(t, a.MaskedFill(m, -1)), []float64{-1, 2, 3}, 0)
		a.MaskedFill_(a.GeScalar(3), 0)
		expectFloats(t, "masked_fill_", f32(t, a), []float64{1, 2, 0}, 0)
	})
}

func TestReductions(t *testing.T) {
	onTorch(t, func() {
		// x = [[1, 5, 3],
		//      [4, 2, 6]]
		x := dev(FromSlice([]float32{1, 5, 3, 4, 2, 6}, 2, 3))
		expectFloats(t, "sum", f32(t, x.Sum(false)), []float64{21}, 0)
		expectFloats(t, "sum0", f32(t, x.Sum(false, 0)), []float64{5, 7, 9}, 0)
		s1 := x.Sum(true, 1)
		expectShape(t, "sum1 keepdim", s1, 2, 1)
		expectFloats(t, "sum1", f32(t, s1), []float64{9, 12}, 0)
		expectFloats(t, "mean", f32(t, x.Mean(false, -1)), []float64{3, 4}, 1e-6)
		expectFloats(t, "max", f32(t, x.Max(false, 1)), []float64{5, 6}, 0)
		expectFloats(t, "min", f32(t, x.Min(false, 0)), []float64{1, 2, 3}, 0)
		expectInts(t, "argmax", x.Argmax(1, false).Int64s(), []int64{1, 2})
		v, i := x.MaxDim(0, false)
		expectFloats(t, "maxdim", f32(t, v), []float64{4, 5, 6}, 0)
		expectInts(t, "maxdim idx", i.Int64s(), []int64{1, 0, 1})
		expectFloats(t, "cumsum", f32(t, x.Cumsum(1)), []float64{1, 6, 9, 4, 6, 12}, 0)
		// logsumexp([1,5,3]) = 5 + log(1 + e^-4 + e^-2) = 5 + log(1.1536509) = 5.1429317
		expectFloats(t, "lse", f32(t, x.LogSumExp(false, 1)), []float64{5.1429317, 6.1429317}, 1e-5)
		// softmax([1,5,3]) = e^(x-lse): [0.0158762, 0.8668133, 0.1173104]
		expectFloats(t, "softmax", f32(t, x.Softmax(1).Narrow(0, 0, 1)), []float64{0.0158762, 0.8668133, 0.1173104}, 1e-6)
		expectFloats(t, "log_softmax", f32(t, x.LogSoftmax(1).Narrow(0, 0, 1)), []float64{-4.1429317, -0.1429317, -2.1429317}, 1e-5)
		b := dev(FromSlice([]bool{true, false, false, false}, 2, 2))
		if got := b.Any(false, 0, 1).Bool(); !got {
			t.Error("any over both dims = false")
		}
		expectInts(t, "all", b.All(false, 1).Int64s(), []int64{0, 0})
		expectInts(t, "any", b.Any(false, 1).Int64s(), []int64{1, 0})
		tv, ti := x.TopK(2, 1, true)
		expectFloats(t, "topk", f32(t, tv), []float64{5, 3, 6, 4}, 0)
		expectInts(t, "topk idx", ti.Int64s(), []int64{1, 2, 2, 0})
		sv, si := x.Sort(1, false)
		expectFloats(t, "sort", f32(t, sv), []float64{1, 3, 5, 2, 4, 6}, 0)
		expectInts(t, "sort idx", si.Int64s(), []int64{0, 2, 1, 1, 0, 2})
	})
}

func TestMatmulLinear(t *testing.T) {
	onTorch(t, func() {
		// [[1,2],[3,4]] @ [[5,6],[7,8]] = [[19,22],[43,50]]
		a := dev(FromSlice([]float32{1, 2, 3, 4}, 2, 2))
		b := dev(FromSlice([]float32{5, 6, 7, 8}, 2, 2))
		expectFloats(t, "matmul", f32(t, a.Matmul(b)), []float64{19, 22, 43, 50}, 0)
		// linear: x @ w^T + bias = a @ b^T + [1, -1] = [[17,23],[39,53]] + [1,-1]
		bias := dev(FromSlice([]float32{1, -1}))
		expectFloats(t, "linear", f32(t, Linear(a, b, bias)), []float64{18, 22, 40, 52}, 0)
		expectFloats(t, "linear nobias", f32(t, Linear(a, b, nil)), []float64{17, 23, 39, 53}, 0)
		// One row (a matrix-vector product on the CPU), shape kept: [1, 1, 2] -> [1, 1, 2].
		row := dev(FromSlice([]float32{1, 2}, 1, 1, 2))
		one := Linear(row, b, bias)
		expectFloats(t, "linear one row", f32(t, one), []float64{18, 22}, 0)
		if s := one.Shape(); len(s) != 3 || s[0] != 1 || s[1] != 1 || s[2] != 2 {
			t.Errorf("linear of one row: shape %v, want [1 1 2]", s)
		}
		m := dev(Ones([]int64{3, 3}, Float32, CPU))
		expectFloats(t, "triu", f32(t, m.Triu(1)), []float64{0, 1, 1, 0, 0, 1, 0, 0, 0}, 0)
		expectFloats(t, "tril", f32(t, m.Tril(0)), []float64{1, 0, 0, 1, 1, 0, 1, 1, 1}, 0)
	})
}

func TestShapes(t *testing.T) {
	onTorch(t, func() {
		x := dev(Arange(0, 6, 1, Float32, CPU)) // [0 1 2 3 4 5]
		m := x.Reshape(2, 3)
		expectShape(t, "reshape", m, 2, 3)
		expectShape(t, "view -1", x.View(3, -1), 3, 2)
		tr := m.Transpose(0, 1)
		expectFloats(t, "transpose", f32(t, tr), []float64{0, 3, 1, 4, 2, 5}, 0)
		expectShape(t, "permute", m.Unsqueeze(0).Permute(2, 0, 1), 3, 1, 2)
		expectShape(t, "unsqueeze", m.Unsqueeze(1), 2, 1, 3)
		expectShape(t, "squeeze", m.Unsqueeze(1).Squeeze(1), 2, 3)
		expectShape(t, "squeezeall", m.Unsqueeze(0).Unsqueeze(3).SqueezeAll(), 2, 3)
		expectShape(t, "expand", x.Narrow(0, 0, 1).Expand(4), 4)
		expectFloats(t, "repeat", f32(t, x.Narrow(0, 1, 2).Repeat(2)), []float64{1, 2, 1, 2}, 0)
		expectFloats(t, "slice", f32(t, x.Slice(0, 1, 6, 2)), []float64{1, 3, 5}, 0)
		expectFloats(t, "slice neg", f32(t, x.Slice(0, -2, 6, 1)), []float64{4, 5}, 0)
		expectFloats(t, "cat", f32(t, Cat([]*Tensor{m, m}, 0).Sum(false, 1)), []float64{3, 12, 3, 12}, 0)
		expectShape(t, "stack", Stack([]*Tensor{m, m}, 0), 2, 2, 3)
		parts := x.Split(4, 0)
		if len(parts) != 2 {
			t.Errorf("split into %d", len(parts))
			return
		}
		expectFloats(t, "split tail", f32(t, parts[1]), []float64{4, 5}, 0)
		ch := x.Chunk(3, 0)
		expectFloats(t, "chunk", f32(t, ch[2]), []float64{4, 5}, 0)
		qkv := x.SplitSizes([]int64{1, 2, 3}, 0)
		expectFloats(t, "split sizes", f32(t, qkv[2]), []float64{3, 4, 5}, 0)
		if _, err := errOf(func() { m.View(4, 2) }); err == nil {
			t.Error("view to a wrong size accepted")
		}
	})
}

// errOf runs fn on the torch thread (already there) and returns a torch error it panicked with.
func errOf(fn func()) (struct{}, error) {
	return struct{}{}, Do(func() error { fn(); return nil })
}

func TestIndexing(t *testing.T) {
	onTorch(t, func() {
		// x = [[10, 11, 12], [20, 21, 22]]
		x := dev(FromSlice([]float32{10, 11, 12, 20, 21, 22}, 2, 3))
		idx := dev(FromSlice([]int64{2, 0, 1, 1}, 2, 2))
		expectFloats(t, "gather", f32(t, x.Gather(1, idx)), []float64{12, 10, 21, 21}, 0)
		sel := dev(FromSlice([]int64{1, 1, 0}))
		expectFloats(t, "index_select", f32(t, x.IndexSelect(0, sel).Sum(false, 1)), []float64{63, 63, 33}, 0)
		z := dev(Zeros([]int64{2, 3}, Float32, CPU))
		src := dev(FromSlice([]float32{1, 2, 3, 4}, 2, 2))
		// row 0: z[0][2]=1, z[0][0]=2; row 1: z[1][1]=3 then 4 (scatter) or 3+4 (scatter_add)
		expectFloats(t, "scatter_add", f32(t, z.ScatterAdd(1, idx, src)), []float64{2, 0, 1, 0, 7, 0}, 0)
		expectFloats(t, "scatter", f32(t, z.Scatter(1, dev(FromSlice([]int64{2, 0, 1, 0}, 2, 2)), src)), []float64{2, 0, 1, 4, 3, 0}, 0)
		cache := dev(Zeros([]int64{4, 2}, Float32, CPU))
		cache.IndexCopy_(0, dev(FromSlice([]int64{3, 1})), dev(FromSlice([]float32{1, 2, 3, 4}, 2, 2)))
		expectFloats(t, "index_copy_", f32(t, cache), []float64{0, 0, 3, 4, 0, 0, 1, 2}, 0)
		w := dev(FromSlice([]float32{0, 0, 1, 1, 2, 2}, 3, 2))
		e := Embedding(w, dev(FromSlice([]int64{2, 0, 1, 2}, 2, 2)), NoPadding)
		expectShape(t, "embedding", e, 2, 2, 2)
		expectFloats(t, "embedding", f32(t, e), []float64{2, 2, 0, 0, 1, 1, 2, 2}, 0)
	})
}

// TestEmbeddingPaddingGrad: ids [2, 0, 1, 2] looked up in w [3, 2] and the output weighted by
// [[1, 2], [3, 4], [5, 6], [7, 8]] (summed): row r's gradient is the sum of the weights of the
// positions holding r: row 0 ← [3, 4], row 1 ← [5, 6], row 2 ← [1, 2] + [7, 8] = [8, 10]. With
// padding index 2 (nn.Embedding(padding_idx=2)) row 2 gets exactly 0 and the others are unchanged;
// the forward values are the same either way. An index outside [0, 3) is refused.
func TestEmbeddingPaddingGrad(t *testing.T) {
	onTorch(t, func() {
		up := dev(FromSlice([]float32{1, 2, 3, 4, 5, 6, 7, 8}, 2, 2, 2))
		ids := dev(FromSlice([]int64{2, 0, 1, 2}, 2, 2))
		for _, c := range []struct {
			padding int64
			want    []float64
		}{
			{NoPadding, []float64{3, 4, 5, 6, 8, 10}},
			{2, []float64{3, 4, 5, 6, 0, 0}},
			{0, []float64{0, 0, 5, 6, 8, 10}},
		} {
			w := dev(FromSlice([]float32{0, 0, 1, 1, 2, 2}, 3, 2)).SetRequiresGrad(true)
			e := Embedding(w, ids, c.padding)
			expectFloats(t, "embedding", f32(t, e.Detach()), []float64{2, 2, 0, 0, 1, 1, 2, 2}, 0)
			e.Mul(up).Sum(false).Backward()
			expectFloats(t, "embedding grad, padding "+fmt.Sprint(c.padding), f32(t, w.Grad()), c.want, 0)
		}
		w := dev(FromSlice([]float32{0, 0, 1, 1, 2, 2}, 3, 2))
		for _, bad := range []int64{3, -2} {
			if err := Do(func() error { Embedding(w, ids, bad); return nil }); err == nil || !strings.Contains(err.Error(), "padding index") {
				t.Errorf("padding index %d: %v", bad, err)
			}
		}
	})
}
