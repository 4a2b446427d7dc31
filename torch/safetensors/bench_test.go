package safetensors

import (
	"fmt"
	"path/filepath"
	"testing"
)

// BenchmarkOpen measures Open (header read + parse + full validation) of a file with 1,000 small
// tensors, about the header size of a 7B-parameter checkpoint's largest shard.
func BenchmarkOpen(b *testing.B) {
	w := NewWriter()
	for i := 0; i < 1000; i++ {
		name := fmt.Sprintf("model.layers.%d.self_attn.q_proj.weight", i)
		if err := w.Add(name, BF16, []int64{4, 4}, make([]byte, 32)); err != nil {
			b.Fatal(err)
		}
	}
	path := filepath.Join(b.TempDir(), "many.safetensors")
	if err := w.WriteFile(path); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f, err := Open(path)
		if err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
}

// BenchmarkEncodeBF16 measures the pure-Go float32 → bf16 conversion (bytes/s of float32 input).
func BenchmarkEncodeBF16(b *testing.B) {
	xs := make([]float32, 1<<20)
	for i := range xs {
		xs[i] = float32(i) * 1e-3
	}
	b.SetBytes(int64(4 * len(xs)))
	for i := 0; i < b.N; i++ {
		EncodeBF16(xs)
	}
}
