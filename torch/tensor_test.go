package torch

import (
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"
)

func TestVersion(t *testing.T) {
	info, err := Version()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%v", info)
	if info.Torch == "" || info.ABI != ShimABI {
		t.Errorf("Version() = %+v", info)
	}
	if testDevice.IsCUDA() && !info.CUDAAvailable {
		t.Errorf("tests asked for %s but CUDA is not available", testDevice)
	}
}

func TestABIMismatchRefused(t *testing.T) {
	if err := abiError(1, 1); err != nil {
		t.Error(err)
	}
	err := abiError(2, 1)
	if err == nil || !strings.Contains(err.Error(), "shim ABI 2") || !strings.Contains(err.Error(), "make shim") {
		t.Errorf("mismatch error = %v", err)
	}
}

func TestSliceRoundTrip(t *testing.T) {
	onTorch(t, func() {
		x := dev(FromSlice([]float32{1, 2, 3, 4, 5, 6}, 2, 3))
		i := x.Info()
		expectInts(t, "shape", i.Shape, []int64{2, 3})
		if i.DType != Float32 || i.Device != testDevice || i.Numel != 6 || x.Dim() != 2 {
			t.Errorf("info = %+v", i)
		}
		expectFloats(t, "values", ToSlice[float32](x), []float64{1, 2, 3, 4, 5, 6}, 0)
		expectInts(t, "int64", ToSlice[int64](FromSlice([]int64{-3, 1 << 40})), []int64{-3, 1 << 40})
		b := ToSlice[bool](FromSlice([]bool{true, false, true}))
		if !b[0] || b[1] || !b[2] {
			t.Errorf("bools = %v", b)
		}
		u := ToSlice[uint8](FromSlice([]uint8{0, 255}))
		i32 := ToSlice[int32](FromSlice([]int32{-7, 9}))
		if u[1] != 255 || i32[0] != -7 {
			t.Errorf("uint8 %v int32 %v", u, i32)
		}
		// Conversions out: int64 -> float32, float -> int64 truncates toward zero.
		expectFloats(t, "Float32s", FromSlice([]int64{3, -2}).Float32s(), []float64{3, -2}, 0)
		expectInts(t, "Int64s", FromSlice([]float32{2.7, -1.5}).Int64s(), []int64{2, -1})
	})
}

func TestHalfBits(t *testing.T) {
	onTorch(t, func() {
		// bfloat16 is the top half of float32: 1.0 = 0x3F80, -2.0 = 0xC000, 0.5 = 0x3F00.
		x := FromBits([]uint16{0x3F80, 0xC000, 0x3F00}, BFloat16)
		expectFloats(t, "bf16", x.Float32s(), []float64{1, -2, 0.5}, 0)
		// float16: 1.0 = 0x3C00, -2.0 = 0xC000, 65504 (max) = 0x7BFF.
		h := FromBits([]uint16{0x3C00, 0xC000, 0x7BFF}, Float16)
		expectFloats(t, "f16", h.Float32s(), []float64{1, -2, 65504}, 0)
		// From float32: 3.0 -> bf16 0x4040; 1/3 rounds to nearest even: 0x3EAB.
		y := FromFloats([]float32{3, 1.0 / 3}, BFloat16)
		bits := y.Bits()
		if bits[0] != 0x4040 || bits[1] != 0x3EAB {
			t.Errorf("bf16 bits = %#x", bits)
		}
	})
}

func TestFromBytesCopies(t *testing.T) {
	onTorch(t, func() {
		raw := make([]byte, 8)
		binary.LittleEndian.PutUint32(raw[0:], math.Float32bits(1.5))
		binary.LittleEndian.PutUint32(raw[4:], math.Float32bits(-4))
		x := FromBytes(raw, Float32, 2, 1)
		// Overwrite the Go buffer: the tensor must hold its own copy.
		for i := range raw {
			raw[i] = 0
		}
		expectFloats(t, "values", x.Float32s(), []float64{1.5, -4}, 0)
		expectShape(t, "x", x, 2, 1)
		out := x.Bytes()
		if math.Float32frombits(binary.LittleEndian.Uint32(out[4:])) != -4 || len(out) != 8 {
			t.Errorf("Bytes() = %v", out)
		}
		// Bytes of a non-contiguous view come out in row-major order of the view.
		m := FromSlice([]int32{1, 2, 3, 4}, 2, 2).Transpose(0, 1)
		got := m.Bytes()
		if binary.LittleEndian.Uint32(got[4:]) != 3 {
			t.Errorf("transposed bytes = %v", got)
		}
	})
}

func TestCreation(t *testing.T) {
	onTorch(t, func() {
		expectFloats(t, "zeros", Zeros([]int64{2}, Float32, testDevice).Float32s(), []float64{0, 0}, 0)
		expectFloats(t, "ones", Ones([]int64{3}, BFloat16, testDevice).Float32s(), []float64{1, 1, 1}, 0)
		expectFloats(t, "full", Full([]int64{2}, 2.5, Float32, testDevice).Float32s(), []float64{2.5, 2.5}, 0)
		expectInts(t, "arange", Arange(0, 5, 2, Int64, testDevice).Int64s(), []int64{0, 2, 4})
		expectFloats(t, "arange f", Arange(0, 1, 0.25, Float32, testDevice).Float32s(), []float64{0, .25, .5, .75}, 0)
		if e := Empty([]int64{4, 5}, Int32, testDevice); e.Numel() != 20 || e.DType() != Int32 {
			t.Errorf("empty = %v", e)
		}
		s := Scalar(7, Int64, testDevice)
		if s.Dim() != 0 || s.Int() != 7 || s.Float() != 7 {
			t.Errorf("scalar = %v", s)
		}
		if !Scalar(1, Bool, CPU).Bool() {
			t.Error("Scalar(1, Bool).Bool() = false")
		}
	})
}

func TestToAndCopy(t *testing.T) {
	onTorch(t, func() {
		x := dev(FromSlice([]float32{1.25, -3}))
		y := x.To(testDevice, BFloat16)
		if y.DType() != BFloat16 {
			t.Errorf("dtype = %v", y.DType())
		}
		z := Zeros([]int64{2}, Float32, testDevice)
		z.Copy_(y)
		expectFloats(t, "copied", z.Float32s(), []float64{1.25, -3}, 0)
		z.Fill_(4)
		expectFloats(t, "filled", z.Float32s(), []float64{4, 4}, 0)
		if v := FromSlice([]int64{7, 8}).Values(); !strings.Contains(v, "7") || !strings.Contains(v, "8") {
			t.Errorf("Values() = %q", v)
		}
		tr := FromSlice([]float32{1, 2, 3, 4}, 2, 2).Transpose(0, 1)
		if tr.Info().Contiguous || !tr.Contiguous().Info().Contiguous {
			t.Error("contiguous flags wrong")
		}
	})
}

func TestParse(t *testing.T) {
	for s, want := range map[string]Device{"cpu": CPU, "cuda": CUDA(0), "cuda:1": CUDA(1)} {
		if d, err := ParseDevice(s); err != nil || d != want {
			t.Errorf("ParseDevice(%q) = %v, %v", s, d, err)
		}
	}
	for _, bad := range []string{"gpu", "cuda:", "cuda:-1", "cuda:x"} {
		if _, err := ParseDevice(bad); err == nil {
			t.Errorf("ParseDevice(%q) accepted", bad)
		}
	}
	if CUDA(1).String() != "cuda:1" || CPU.String() != "cpu" {
		t.Error("device names")
	}
	for s, want := range map[string]DType{"bf16": BFloat16, "F32": Float32, "float16": Float16, "BOOL": Bool, "I64": Int64} {
		if d, err := ParseDType(s); err != nil || d != want {
			t.Errorf("ParseDType(%q) = %v, %v", s, d, err)
		}
	}
	if _, err := ParseDType("f8"); err == nil {
		t.Error("ParseDType(f8) accepted")
	}
}

func TestErrorsComeBack(t *testing.T) {
	cases := map[string]func(){
		"shape mismatch": func() {
			Zeros([]int64{2, 3}, Float32, testDevice).Matmul(Zeros([]int64{4, 5}, Float32, testDevice))
		},
		"dtype mismatch": func() {
			Zeros([]int64{2, 2}, Float32, testDevice).Matmul(Zeros([]int64{2, 2}, Int64, testDevice))
		},
		// On CUDA an out-of-range index inside a kernel is a device-side assert that ruins the
		// CUDA context (as in PyTorch): ids must be checked on the host. So this one runs on the CPU.
		"index out of range": func() {
			Zeros([]int64{3}, Float32, CPU).IndexSelect(0, FromSlice([]int64{5}))
		},
		"narrow out of range": func() { Zeros([]int64{3}, Float32, testDevice).Narrow(0, 2, 5) },
		"bad data size":       func() { FromSlice([]float32{1, 2, 3}, 2, 2) },
		"ragged bytes":        func() { FromBytes(make([]byte, 6), Float32) },
		"wrong slice type":    func() { ToSlice[int64](FromSlice([]float32{1})) },
		"bits of a float32":   func() { FromSlice([]float32{1}).Bits() },
		"item of many":        func() { FromSlice([]float32{1, 2}).Float() },
	}
	for name, fn := range cases {
		err := Run(func() error { fn(); return nil })
		var te *Error
		if !errors.As(err, &te) {
			t.Errorf("%s: got %v, want *torch.Error", name, err)
			continue
		}
		if te.Msg == "" || te.Op == "" {
			t.Errorf("%s: empty error %+v", name, te)
		}
		t.Logf("%s: %v", name, err)
	}
	// The process keeps working after the errors.
	onTorch(t, func() {
		expectFloats(t, "after errors", FromSlice([]float32{1, 2}).AddScalar(1).Float32s(), []float64{2, 3}, 0)
	})
}

// Swap exchanges what two tensors hold, shapes included; each scope frees what its tensor holds
// at close (no double free, no leak: the other tensor stays usable).
func TestSwap(t *testing.T) {
	onTorch(t, func() {
		long := NewLongScope("swap test")
		defer long.Close()
		var w *Tensor
		long.With(func() { w = dev(FromSlice([]float32{1, 2, 3, 4}, 2, 2)) })
		expectInts(t, "shape before", w.Shape(), []int64{2, 2})
		s := NewScope()
		g := dev(FromSlice([]float32{7, 8, 9}))
		w.Swap(g)
		expectInts(t, "w's shape", w.Shape(), []int64{3})
		expectFloats(t, "w", w.Float32s(), []float64{7, 8, 9}, 0)
		expectFloats(t, "g", g.Float32s(), []float64{1, 2, 3, 4}, 0)
		w.Swap(g)
		s.Close() // frees g, holding {7, 8, 9} again
		expectFloats(t, "w after the scope", w.Float32s(), []float64{1, 2, 3, 4}, 0)
		if g.Valid() {
			t.Errorf("g outlived its scope")
		}
	})
}
