package torch

import (
	"testing"
)

// The benchmarks behind docs/bench/torch.md. Each runs its loop on the torch thread.

func onTorchB(b *testing.B, fn func()) {
	b.Helper()
	if err := Run(func() error { fn(); return nil }); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkCgoCall is the bare cost of one Go->C crossing (a shim call that does nothing).
func BenchmarkCgoCall(b *testing.B) {
	for i := 0; i < b.N; i++ {
		cgoNoop()
	}
}

// BenchmarkAddSmall is one small op through the binding: a.Add(b) on 4-element tensors, the
// result handle owned by a scope that is closed every 1024 ops (one crossing frees them all).
// The "cpp-ns/op" metric is the same op in a C++ loop inside the shim.
func BenchmarkAddSmall(b *testing.B) {
	onTorchB(b, func() {
		x := dev(FromSlice([]float32{1, 2, 3, 4}))
		y := dev(FromSlice([]float32{4, 3, 2, 1}))
		s := NewScope()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			x.Add(y)
			if i%1024 == 1023 {
				s.Close()
				s = NewScope()
			}
		}
		s.Close()
		b.StopTimer()
		b.ReportMetric(cppAddNs(x, y, 200000), "cpp-ns/op")
	})
}

// BenchmarkAddSmallFreeEach frees every result at once (two crossings per op).
func BenchmarkAddSmallFreeEach(b *testing.B) {
	onTorchB(b, func() {
		x := dev(FromSlice([]float32{1, 2, 3, 4}))
		y := dev(FromSlice([]float32{4, 3, 2, 1}))
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			x.Add(y).Free()
		}
	})
}

func benchMatmul(b *testing.B, n int64, dt DType) {
	onTorchB(b, func() {
		g := NewGenerator(1, testDevice)
		defer g.Close()
		x := Randn([]int64{n, n}, dt, testDevice, g)
		y := Randn([]int64{n, n}, dt, testDevice, g)
		x.Matmul(y)
		Synchronize(testDevice)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			x.Matmul(y).Free()
		}
		Synchronize(testDevice)
		b.StopTimer()
		flops := 2 * float64(n) * float64(n) * float64(n)
		b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e12, "TFLOP/s")
		iters := int64(b.N)
		if iters < 5 {
			iters = 5
		}
		b.ReportMetric(flops/cppMatmulNs(x, y, iters), "cpp-GFLOP/s")
	})
}

// BenchmarkMatmul512 is a 512x512 float32 matmul through the binding; "cpp-GFLOP/s" is the same
// matmul in a C++ loop.
func BenchmarkMatmul512(b *testing.B) { benchMatmul(b, 512, Float32) }

// BenchmarkMatmul4096BF16 is the GPU-sized case (run it with MTGRPO_TEST_DEVICE=cuda;
// scripts/gpu_check.sh compares it with python torch on the same shapes).
func BenchmarkMatmul4096BF16(b *testing.B) {
	if !testDevice.IsCUDA() {
		b.Skip("CUDA only")
	}
	benchMatmul(b, 4096, BFloat16)
}

// rmsNormUnfused is RMSNorm written as separate ops: 8 crossings instead of 1.
func rmsNormUnfused(x, w *Tensor, eps float64) *Tensor {
	xf := x.ToDType(Float32)
	return xf.Mul(xf.Square().Mean(true, -1).AddScalar(eps).Rsqrt()).ToDType(x.DType()).Mul(w)
}

func benchRMSNorm(b *testing.B, rows int64, dt DType, fused bool) {
	onTorchB(b, func() {
		g := NewGenerator(1, testDevice)
		defer g.Close()
		x := Randn([]int64{rows, 512}, dt, testDevice, g)
		w := Randn([]int64{512}, dt, testDevice, g)
		s := NewScope()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if fused {
				RMSNorm(x, w, 1e-6)
			} else {
				rmsNormUnfused(x, w, 1e-6)
			}
			if i%256 == 255 {
				s.Close()
				s = NewScope()
			}
		}
		Synchronize(testDevice)
		s.Close()
	})
}

// RMSNorm on one decode row and on a 64-token prefill block, bf16, fused vs composed from ops.
func BenchmarkRMSNormDecodeFused(b *testing.B)    { benchRMSNorm(b, 1, BFloat16, true) }
func BenchmarkRMSNormDecodeUnfused(b *testing.B)  { benchRMSNorm(b, 1, BFloat16, false) }
func BenchmarkRMSNormPrefillFused(b *testing.B)   { benchRMSNorm(b, 64, BFloat16, true) }
func BenchmarkRMSNormPrefillUnfused(b *testing.B) { benchRMSNorm(b, 64, BFloat16, false) }

// BenchmarkSDPAFlashBF16 is causal attention on flash-kernel shapes: q, k, v [4, 16, 2048, 128]
// bf16, no mask (CUDA only; scripts/gpu_check.sh runs the same in python torch). FLOPs count the
// two matmuls over the causal half: 4·B·H·T²·D / 2.
func BenchmarkSDPAFlashBF16(b *testing.B) {
	if !testDevice.IsCUDA() {
		b.Skip("CUDA only")
	}
	const B, H, T, D = 4, 16, 2048, 128
	onTorchB(b, func() {
		g := NewGenerator(1, testDevice)
		defer g.Close()
		shape := []int64{B, H, T, D}
		q := Randn(shape, BFloat16, testDevice, g)
		k := Randn(shape, BFloat16, testDevice, g)
		v := Randn(shape, BFloat16, testDevice, g)
		ScaledDotProductAttention(q, k, v, AttentionOpts{Causal: true})
		Synchronize(testDevice)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			ScaledDotProductAttention(q, k, v, AttentionOpts{Causal: true}).Free()
		}
		Synchronize(testDevice)
		b.StopTimer()
		flops := 4.0 * B * H * T * T * D / 2
		b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e12, "TFLOP/s")
	})
}

// ropeUnfused is RoPE composed from binding ops: 7 crossings instead of 1.
func ropeUnfused(x, cos, sin *Tensor) *Tensor {
	d := x.Size(-1)
	x1, x2 := x.Narrow(-1, 0, d/2), x.Narrow(-1, d/2, d/2)
	return x.Mul(cos).Add(Cat([]*Tensor{x2.Neg(), x1}, -1).Mul(sin))
}

func benchRoPE(b *testing.B, fused bool) {
	onTorchB(b, func() {
		g := NewGenerator(1, testDevice)
		defer g.Close()
		// One decode step of a 16-head, 64-dim attention layer.
		x := Randn([]int64{1, 16, 1, 64}, BFloat16, testDevice, g)
		cos := Randn([]int64{1, 64}, BFloat16, testDevice, g)
		sin := Randn([]int64{1, 64}, BFloat16, testDevice, g)
		s := NewScope()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if fused {
				RoPE(x, cos, sin)
			} else {
				ropeUnfused(x, cos, sin)
			}
			if i%256 == 255 {
				s.Close()
				s = NewScope()
			}
		}
		Synchronize(testDevice)
		s.Close()
	})
}

// RoPE on one decode step, bf16, fused vs composed from ops.
func BenchmarkRoPEDecodeFused(b *testing.B)   { benchRoPE(b, true) }
func BenchmarkRoPEDecodeUnfused(b *testing.B) { benchRoPE(b, false) }
