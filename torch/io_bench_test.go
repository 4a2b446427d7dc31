package torch

import (
	"path/filepath"
	"testing"

	"github.com/mtgrpo/mtgrpo/torch/safetensors"
)

// benchFile writes one 64 MiB BF16 tensor (32M elements) and opens it.
func benchFile(b *testing.B) *safetensors.File {
	const n = 32 << 20
	data := make([]byte, 2*n)
	for i := 0; i < len(data); i += 2 {
		data[i+1] = 0x3F // 1.0-ish bf16 values
	}
	w := safetensors.NewWriter()
	if err := w.Add("w", safetensors.BF16, []int64{n}, data); err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "big.safetensors")
	if err := w.WriteFile(path); err != nil {
		b.Fatal(err)
	}
	f, err := safetensors.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	return f
}

// BenchmarkLoadTensor measures LoadTensor from a page-cached mapping to a CPU tensor, keeping bf16
// and converting to f32 (bytes/s of file data).
func BenchmarkLoadTensor(b *testing.B) {
	f := benchFile(b)
	for _, c := range []struct {
		name string
		dt   DType
	}{{"bf16", BFloat16}, {"to_f32", Float32}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(64 << 20)
			err := Run(func() error {
				for i := 0; i < b.N; i++ {
					t, err := LoadTensor(f, "w", testDevice, c.dt)
					if err != nil {
						return err
					}
					t.Free()
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		})
	}
}

// BenchmarkSaveSafetensors measures writing one 64 MiB bf16 tensor (bytes/s), fsync included.
func BenchmarkSaveSafetensors(b *testing.B) {
	f := benchFile(b)
	path := filepath.Join(b.TempDir(), "out.safetensors")
	b.SetBytes(64 << 20)
	err := Run(func() error {
		t, err := LoadTensor(f, "w", testDevice, BFloat16)
		if err != nil {
			return err
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if err := SaveSafetensors(path, map[string]*Tensor{"w": t}, nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}
