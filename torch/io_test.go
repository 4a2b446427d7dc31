package torch

import (
	"bytes"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/mtgrpo/mtgrpo/torch/safetensors"
)

// specialF32 covers the values a bit-exact round trip can get wrong: signed zeros, infinities,
// NaNs with payloads, subnormals, extremes.
var specialF32 = []float32{
	0, float32(math.Copysign(0, -1)), 1, -2.5, float32(math.Inf(1)), float32(math.Inf(-1)),
	math.Float32frombits(0x7FC00001), math.Float32frombits(0xFF800123), math.Float32frombits(1),
	math.MaxFloat32, -math.SmallestNonzeroFloat32, 3.14159,
}

func TestSafetensorsRoundTripBitExact(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rt.safetensors")
	bf16Bits := []uint16{0x0000, 0x8000, 0x3F80, 0x7F80, 0xFF80, 0x7FC1, 0xFFFF, 0x0001, 0x7F7F}
	f16Bits := []uint16{0x0000, 0x8000, 0x3C00, 0x7BFF, 0x7C00, 0xFC00, 0x7E01, 0x0001, 0x03FF}
	i64s := []int64{math.MinInt64, -1, 0, 1, math.MaxInt64, 1 << 40}
	onTorch(t, func() {
		ts := map[string]*Tensor{
			"f32":  dev(FromSlice(specialF32, 3, 4)),
			"bf16": dev(FromBits(bf16Bits, BFloat16, 9)),
			"f16":  dev(FromBits(f16Bits, Float16, 3, 3)),
			"i64":  dev(FromSlice(i64s, 2, 3)),
		}
		if err := SaveSafetensors(path, ts, map[string]string{"note": "rt"}); err != nil {
			t.Error(err)
			return
		}
		f, err := safetensors.Open(path)
		if err != nil {
			t.Error(err)
			return
		}
		defer f.Close()
		// The file holds exactly the little-endian encodings a Go writer would produce.
		want := map[string][]byte{
			"f32": safetensors.EncodeF32(specialF32), "bf16": le16(bf16Bits), "f16": le16(f16Bits), "i64": le64(i64s),
		}
		for name, b := range want {
			if got, _ := f.Data(name); !bytes.Equal(got, b) {
				t.Errorf("%s: file bytes %x, want %x", name, got, b)
			}
		}
		if f.Metadata()["note"] != "rt" || f.Metadata()["format"] != "pt" {
			t.Errorf("metadata %v", f.Metadata())
		}
		for name, orig := range ts {
			got, err := LoadTensor(f, name, testDevice, orig.DType())
			if err != nil {
				t.Error(err)
				continue
			}
			if got.Device() != testDevice || !reflect.DeepEqual(got.Shape(), orig.Shape()) {
				t.Errorf("%s: loaded %v, saved %v", name, got, orig)
			}
			if !bytes.Equal(got.Bytes(), orig.Bytes()) {
				t.Errorf("%s: loaded bytes %x, saved %x", name, got.Bytes(), orig.Bytes())
			}
		}
	})
}

// Converting while loading must round exactly as the pure-Go helpers do (and the reverse holds:
// this checks F32ToBF16 / F32ToF16 against libtorch), including halfway cases.
func TestLoadTensorConvertsLikeGoHelpers(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	xs := append([]float32{}, specialF32...)
	for i := 0; i < 4000; i++ {
		xs = append(xs, float32(math.Ldexp(rng.NormFloat64(), rng.Intn(40)-28)))
		// Exact bf16 / f16 halfway points: low bits 0x8000 (bf16) and 0x1000 (f16 normal range).
		b := rng.Uint32()&0xFFFF0000 | 0x8000
		xs = append(xs, math.Float32frombits(b&0xBFFFFFFF))
		xs = append(xs, math.Float32frombits((rng.Uint32()&0x07FFE000|0x38000000|0x1000)^(rng.Uint32()&0x80000000)))
	}
	path := filepath.Join(t.TempDir(), "conv.safetensors")
	w := safetensors.NewWriter()
	if err := w.Add("x", safetensors.F32, []int64{int64(len(xs))}, safetensors.EncodeF32(xs)); err != nil {
		t.Fatal(err)
	}
	bfBits := make([]uint16, len(xs))
	for i, x := range xs {
		bfBits[i] = safetensors.F32ToBF16(x)
	}
	if err := w.Add("b", safetensors.BF16, []int64{int64(len(xs))}, le16(bfBits)); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	f, err := safetensors.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	onTorch(t, func() {
		for _, c := range []struct {
			dt   DType
			conv func(float32) uint16
		}{{BFloat16, safetensors.F32ToBF16}, {Float16, safetensors.F32ToF16}} {
			got, err := LoadTensor(f, "x", testDevice, c.dt)
			if err != nil {
				t.Error(err)
				return
			}
			bits := got.Bits()
			inf := uint16(0x7F80) // bf16 exponent all ones
			if c.dt == Float16 {
				inf = 0x7C00
			}
			bad := 0
			for i, x := range xs {
				want := c.conv(x)
				if x != x { // NaN payloads may differ; NaN must stay NaN
					want, bits[i] = 1, bits[i]&0x7FFF
					if bits[i] > inf {
						bits[i] = 1
					}
				}
				if bits[i] != want {
					if bad++; bad <= 5 {
						t.Errorf("%s(%g [%#08x]) = %#04x in libtorch, %#04x in Go", c.dt, x, math.Float32bits(x), bits[i], want)
					}
				}
			}
		}
		// bf16 → f32 widening is exact.
		wide, err := LoadTensor(f, "b", testDevice, Float32)
		if err != nil {
			t.Error(err)
			return
		}
		for i, v := range wide.Float32s() {
			if want := safetensors.BF16ToF32(bfBits[i]); math.Float32bits(v) != math.Float32bits(want) && want == want {
				t.Errorf("bf16 %#04x widened to %g, want %g", bfBits[i], v, want)
				break
			}
		}
	})
}

func TestSaveNonContiguousAndSharded(t *testing.T) {
	dir := t.TempDir()
	onTorch(t, func() {
		// [[1 2 3] [4 5 6]] transposed is [[1 4] [2 5] [3 6]]: saved row-major as 1 4 2 5 3 6.
		x := dev(FromSlice([]float32{1, 2, 3, 4, 5, 6}, 2, 3)).Transpose(0, 1)
		y := dev(FromSlice([]int64{7, 8, 9}))
		files, err := SaveSafetensorsDir(dir, map[string]*Tensor{"x": x, "y": y}, nil, 24)
		if err != nil {
			t.Error(err)
			return
		}
		if len(files) != 3 { // x (24 bytes) and y (24 bytes) in two shards, plus the index
			t.Errorf("files %v", files)
		}
		c, err := safetensors.OpenDir(dir)
		if err != nil {
			t.Error(err)
			return
		}
		defer c.Close()
		got, err := LoadTensor(c, "x", testDevice, Float32)
		if err != nil {
			t.Error(err)
			return
		}
		expectShape(t, "x", got, 3, 2)
		expectFloats(t, "x", got.Float32s(), []float64{1, 4, 2, 5, 3, 6}, 0)
		gy, _ := LoadTensor(c, "y", CPU, Float64)
		expectFloats(t, "y as f64", gy.ToDType(Float32).Float32s(), []float64{7, 8, 9}, 0)
	})
}

func TestSafetensorsIOErrors(t *testing.T) {
	dir := t.TempDir()
	w := safetensors.NewWriter()
	if err := w.Add("u16", safetensors.U16, []int64{2}, []byte{1, 0, 2, 0}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "odd.safetensors")
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	f, err := safetensors.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	onTorch(t, func() {
		if _, err := LoadTensor(f, "u16", CPU, Float32); err == nil || !strings.Contains(err.Error(), `"u16"`) ||
			!strings.Contains(err.Error(), "U16 is not supported") {
			t.Errorf("U16 load error %v", err)
		}
		if _, err := LoadTensor(f, "nope", CPU, Float32); err == nil || !strings.Contains(err.Error(), `no tensor "nope"`) {
			t.Errorf("missing tensor error %v", err)
		}
		// A tensor freed before it is added, and one freed after it is added but before the
		// write streams it: errors naming the problem, and no file left behind.
		gone := FromSlice([]float32{1})
		gone.Free()
		out := filepath.Join(dir, "never.safetensors")
		err := SaveSafetensors(out, map[string]*Tensor{"gone": gone}, nil)
		if err == nil || !strings.Contains(err.Error(), "freed") {
			t.Errorf("saving a freed tensor: %v", err)
		}
		w := safetensors.NewWriter()
		late := FromSlice([]float32{2})
		if err := AddTensor(w, "late", late); err != nil {
			t.Error(err)
		}
		late.Free()
		err = w.WriteFile(out)
		if err == nil || !strings.Contains(err.Error(), `tensor "late"`) || !strings.Contains(err.Error(), "freed") {
			t.Errorf("streaming a freed tensor: %v", err)
		}
		if _, statErr := os.Stat(out); !os.IsNotExist(statErr) {
			t.Errorf("failed save left %s behind", out)
		}
	})
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("directory holds %d entries, want only odd.safetensors", len(ents))
	}
}

func le16(xs []uint16) []byte {
	b := make([]byte, 2*len(xs))
	for i, x := range xs {
		b[2*i], b[2*i+1] = byte(x), byte(x>>8)
	}
	return b
}

func le64(xs []int64) []byte {
	b := make([]byte, 8*len(xs))
	for i, x := range xs {
		for k := 0; k < 8; k++ {
			b[8*i+k] = byte(uint64(x) >> (8 * k))
		}
	}
	return b
}

// A tensor's bytes are read into C memory, not the Go heap: loading 32 MiB allocates (almost)
// nothing on the Go heap. (A heap that grows by such buffers and collects them late is what makes
// the Go runtime stop with a fatal error under an address-space limit.)
func TestLoadTensorBypassesGoHeap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.safetensors")
	onTorch(t, func() {
		if err := SaveSafetensors(path, map[string]*Tensor{"w": Zeros([]int64{8 << 20}, Float32, CPU)}, nil); err != nil {
			t.Error(err)
			return
		}
		f, err := safetensors.Open(path)
		if err != nil {
			t.Error(err)
			return
		}
		defer f.Close()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		w, err := LoadTensor(f, "w", CPU, Float32)
		runtime.ReadMemStats(&after)
		if err != nil || w.Numel() != 8<<20 {
			t.Errorf("loaded %v, %v", w, err)
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
			t.Errorf("loading 32 MiB allocated %d bytes on the Go heap", grew)
		}
	})
}
