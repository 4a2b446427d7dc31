package torch

import (
	"math"
	"testing"
)

// TestSDPAHandWorked: one head, D = 1, q = 0 so every allowed key gets the same weight.
// v = [2, 4]: causal row 0 sees key 0 only (2), row 1 averages both (3).
func TestSDPAHandWorked(t *testing.T) {
	onTorch(t, func() {
		q := dev(Zeros([]int64{1, 1, 2, 1}, Float32, CPU))
		k := dev(FromSlice([]float32{1, -1}, 1, 1, 2, 1))
		v := dev(FromSlice([]float32{2, 4}, 1, 1, 2, 1))
		want := []float64{2, 3}
		expectFloats(t, "causal", ScaledDotProductAttention(q, k, v, AttentionOpts{Causal: true}).Float32s(), want, 1e-6)
		boolMask := dev(FromSlice([]bool{true, false, true, true}, 2, 2))
		expectFloats(t, "bool mask", ScaledDotProductAttention(q, k, v, AttentionOpts{Mask: boolMask}).Float32s(), want, 1e-6)
		add := dev(FromSlice([]float32{0, float32(math.Inf(-1)), 0, 0}, 2, 2))
		expectFloats(t, "additive mask", ScaledDotProductAttention(q, k, v, AttentionOpts{Mask: add}).Float32s(), want, 1e-6)
		// No mask: q·k = 0 for both keys -> both rows average to 3.
		expectFloats(t, "no mask", ScaledDotProductAttention(q, k, v, AttentionOpts{}).Float32s(), []float64{3, 3}, 1e-6)
		// Scale 1 with q = 1: scores [1, -1] -> weights [e/(e+1/e), ...] = [0.8807971, 0.1192029],
		// out = 2·0.8807971 + 4·0.1192029 = 2.2384058.
		q1 := dev(Ones([]int64{1, 1, 1, 1}, Float32, CPU))
		expectFloats(t, "scale", ScaledDotProductAttention(q1, k, v, AttentionOpts{Scale: 1}).Float32s(), []float64{2.2384058}, 1e-6)
		expectFloats(t, "scale 2", ScaledDotProductAttention(q1, k, v, AttentionOpts{Scale: 2}).Float32s(),
			[]float64{2 + 2/(1+math.Exp(4))}, 1e-6)
	})
}

// referenceAttention is softmax(q kᵀ·scale + mask) v written out with basic ops.
func referenceAttention(q, k, v, mask *Tensor, scale float64) *Tensor {
	s := q.Matmul(k.Transpose(-2, -1)).MulScalar(scale)
	if mask != nil {
		s = s.MaskedFill(mask.Not(), math.Inf(-1))
	}
	return s.Softmax(-1).Matmul(v)
}

func TestSDPAGroupedQueryAttention(t *testing.T) {
	onTorch(t, func() {
		g := NewGenerator(11, testDevice)
		defer g.Close()
		const b, h, hkv, tq, d = 2, 4, 2, 5, 8
		q := Randn([]int64{b, h, tq, d}, Float32, testDevice, g)
		k := Randn([]int64{b, hkv, tq, d}, Float32, testDevice, g)
		v := Randn([]int64{b, hkv, tq, d}, Float32, testDevice, g)
		// Query heads 0,1 use kv head 0; heads 2,3 use kv head 1.
		rep := dev(FromSlice([]int64{0, 0, 1, 1}))
		kk, vv := k.IndexSelect(1, rep), v.IndexSelect(1, rep)
		causal := dev(Ones([]int64{tq, tq}, Bool, CPU)).Tril(0)
		want := referenceAttention(q, kk, vv, causal, 1/math.Sqrt(d))
		got := ScaledDotProductAttention(q, k, v, AttentionOpts{Causal: true})
		expectShape(t, "gqa out", got, b, h, tq, d)
		// 1e-4: CUDA's attention kernels sum in another order than the reference.
		if !AllClose(got, want, 1e-4, 1e-4) {
			t.Errorf("GQA causal attention differs from the reference: max |diff| %v", got.Sub(want).Abs().Max(false).Float())
		}
		// With a KV cache the query block is the last rows: an explicit mask, Tq < Tk.
		qLast := q.Narrow(2, tq-2, 2)
		mask := causal.Narrow(0, tq-2, 2)
		want = referenceAttention(qLast, kk, vv, mask, 0.5)
		got = ScaledDotProductAttention(qLast, k, v, AttentionOpts{Mask: mask, Scale: 0.5})
		if !AllClose(got, want, 1e-4, 1e-4) {
			t.Error("masked GQA attention with Tq < Tk differs from the reference")
		}
		// bf16 without a mask: on CUDA with libtorch 2.5+ the path that reads grouped heads in
		// place (enable_gqa); elsewhere the expanded heads. Against the float32 reference, to bf16
		// precision (8 bits of mantissa: 2^-8 relative, summed over a few terms).
		qb, kb, vb := q.ToDType(BFloat16), k.ToDType(BFloat16), v.ToDType(BFloat16)
		ref := referenceAttention(qb.ToDType(Float32), kb.ToDType(Float32).IndexSelect(1, rep),
			vb.ToDType(Float32).IndexSelect(1, rep), causal, 1/math.Sqrt(d))
		gotb := ScaledDotProductAttention(qb, kb, vb, AttentionOpts{Causal: true})
		if gotb.DType() != BFloat16 || !AllClose(gotb.ToDType(Float32), ref, 2e-2, 2e-2) {
			t.Errorf("bf16 GQA causal attention differs from the reference: max |diff| %v",
				gotb.ToDType(Float32).Sub(ref).Abs().Max(false).Float())
		}
		if Do(func() error {
			ScaledDotProductAttention(q, k.Narrow(1, 0, 1).Expand(b, 3, tq, d), v, AttentionOpts{})
			return nil
		}) == nil {
			t.Error("4 query heads over 3 kv heads accepted")
		}
	})
}

// TestSDPAAdditiveMaskDType: an additive mask in another float dtype than q is cast to q's dtype,
// so a float32 (or float16) mask with bf16 q, k, v gives exactly what the bool mask gives. (The
// CUDA kernels of PyTorch 2.x refuse such a mask; the CPU kernels do not, so only the cast makes
// both devices agree.)
func TestSDPAAdditiveMaskDType(t *testing.T) {
	onTorch(t, func() {
		g := NewGenerator(13, testDevice)
		defer g.Close()
		q := Randn([]int64{1, 4, 3, 8}, BFloat16, testDevice, g)
		k := Randn([]int64{1, 2, 3, 8}, BFloat16, testDevice, g)
		v := Randn([]int64{1, 2, 3, 8}, BFloat16, testDevice, g)
		allow := dev(Ones([]int64{3, 3}, Bool, CPU)).Tril(0)
		want := ScaledDotProductAttention(q, k, v, AttentionOpts{Mask: allow})
		// 0 where allowed, -inf elsewhere.
		for _, dt := range []DType{Float32, Float16} {
			add := Zeros([]int64{3, 3}, dt, testDevice).MaskedFill(allow.Not(), math.Inf(-1))
			got := ScaledDotProductAttention(q, k, v, AttentionOpts{Mask: add})
			if got.DType() != BFloat16 || !Equal(got, want) {
				t.Errorf("%s additive mask with bf16 q differs from the bool mask", dt)
			}
		}
	})
}

func TestRMSNorm(t *testing.T) {
	onTorch(t, func() {
		// x = [3, 4]: mean(x²) = 12.5, 1/√12.5 = 0.28284271; × w = [1, 2] -> [0.8485281, 2.2627417].
		x := dev(FromSlice([]float32{3, 4}, 1, 2))
		w := dev(FromSlice([]float32{1, 2}))
		expectFloats(t, "rmsnorm", RMSNorm(x, w, 0).Float32s(), []float64{0.8485281, 2.2627417}, 1e-6)
		// bf16 input: the result is bf16 and equals the unfused float32 computation cast back.
		g := NewGenerator(5, testDevice)
		defer g.Close()
		xb := Randn([]int64{3, 16}, BFloat16, testDevice, g)
		wb := Randn([]int64{16}, BFloat16, testDevice, g)
		got := RMSNorm(xb, wb, 1e-6)
		xf := xb.ToDType(Float32)
		ref := xf.Mul(xf.Square().Mean(true, -1).AddScalar(1e-6).Rsqrt()).ToDType(BFloat16).Mul(wb)
		if got.DType() != BFloat16 || !Equal(got, ref) {
			t.Error("bf16 RMSNorm differs from the unfused computation")
		}
	})
}

func TestFusedHelpers(t *testing.T) {
	onTorch(t, func() {
		gate := dev(FromSlice([]float32{0, 1, -1}))
		up := dev(FromSlice([]float32{5, 2, 2}))
		// silu(1)·2 = 1.4621172, silu(-1)·2 = -0.5378828
		expectFloats(t, "silu_mul", SiluMul(gate, up).Float32s(), []float64{0, 1.4621172, -0.5378828}, 1e-6)
		// logits [0, 0, ln 2]: softmax = [1/4, 1/4, 1/2]; ids [2, 0] over two rows.
		logits := dev(FromSlice([]float32{0, 0, float32(math.Ln2), 0, 0, float32(math.Ln2)}, 2, 3))
		ids := dev(FromSlice([]int64{2, 0}))
		expectFloats(t, "token logprobs", TokenLogprobs(logits, ids).Float32s(), []float64{math.Log(0.5), math.Log(0.25)}, 1e-6)
	})
}

func TestRoPE(t *testing.T) {
	onTorch(t, func() {
		// D = 2 at angle θ: (x1, x2) -> (x1·cosθ − x2·sinθ, x2·cosθ + x1·sinθ), a rotation.
		// Position 0: θ = 0 (unchanged); position 1: θ = π/2, (1, 2) -> (−2, 1).
		x := dev(FromSlice([]float32{1, 2, 1, 2}, 1, 1, 2, 2))
		cos := dev(FromSlice([]float32{1, 1, 0, 0}, 2, 2))
		sin := dev(FromSlice([]float32{0, 0, 1, 1}, 2, 2))
		expectFloats(t, "rope", RoPE(x, cos, sin).Float32s(), []float64{1, 2, -2, 1}, 1e-6)
		// D = 4 pairs element i with i + D/2: at θ = π/2, (a, b, c, d) -> (−c, −d, a, b).
		y := dev(FromSlice([]float32{1, 2, 3, 4}, 1, 4))
		c4 := dev(Zeros([]int64{1, 4}, Float32, CPU))
		s4 := dev(Ones([]int64{1, 4}, Float32, CPU))
		expectFloats(t, "rope d4", RoPE(y, c4, s4).Float32s(), []float64{-3, -4, 1, 2}, 1e-6)
		// The fused op equals the same math composed from binding ops (the benchmark's baseline).
		g := NewGenerator(2, testDevice)
		defer g.Close()
		xr := Randn([]int64{2, 4, 3, 8}, BFloat16, testDevice, g)
		cr, sr := Randn([]int64{3, 8}, BFloat16, testDevice, g), Randn([]int64{3, 8}, BFloat16, testDevice, g)
		if !Equal(RoPE(xr, cr, sr), ropeUnfused(xr, cr, sr)) {
			t.Error("fused RoPE differs from the composed ops")
		}
		if Do(func() error { RoPE(dev(Ones([]int64{3}, Float32, CPU)), c4, s4); return nil }) == nil {
			t.Error("odd head dimension accepted")
		}
	})
}

func TestRandomIsSeeded(t *testing.T) {
	onTorch(t, func() {
		g := NewGenerator(42, testDevice)
		defer g.Close()
		a := Randn([]int64{8}, Float32, testDevice, g).Float32s()
		b := Randn([]int64{8}, Float32, testDevice, g).Float32s()
		g.Seed(42)
		c := Randn([]int64{8}, Float32, testDevice, g).Float32s()
		for i := range a {
			if a[i] != c[i] {
				t.Errorf("same seed, different numbers: %v vs %v", a, c)
				break
			}
		}
		if a[0] == b[0] && a[1] == b[1] {
			t.Error("generator did not advance")
		}
		u := Rand([]int64{1000}, Float32, testDevice, g)
		if u.Min(false).Float() < 0 || u.Max(false).Float() >= 1 || math.Abs(u.Mean(false).Float()-0.5) > 0.05 {
			t.Error("Rand out of [0, 1) or far from uniform")
		}
		r := Randint(3, 6, []int64{500}, Int64, testDevice, g)
		if r.Min(false).Int() != 3 || r.Max(false).Int() != 5 {
			t.Errorf("Randint range [%d, %d], want [3, 5]", r.Min(false).Int(), r.Max(false).Int())
		}
		probs := dev(FromSlice([]float32{0, 1, 0, 0, 0, 1}, 2, 3))
		expectInts(t, "multinomial", Multinomial(probs, 1, false, g).Int64s(), []int64{1, 2})
		// Two generators with the same seed sample the same tokens.
		g2 := NewGenerator(9, testDevice)
		defer g2.Close()
		g.Seed(9)
		p := dev(FromSlice([]float32{0.2, 0.3, 0.5}))
		expectInts(t, "multinomial reproducible", Multinomial(p, 20, true, g).Int64s(), Multinomial(p, 20, true, g2).Int64s())
	})
}
