package torch

import (
	"os"
	"path/filepath"
	"syscall"
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

// BenchmarkLoadTensor measures LoadTensor from a page-cached file to a CPU tensor, keeping bf16
// and converting to f32 (bytes/s of file data): through safetensors.File (pread into Go memory,
// then the shim's copy) and, side by side, through a reader that maps the file and hands the shim
// a view of the mapping, as safetensors.File did before it stopped mapping files (a file
// truncated while mapped kills the process with SIGBUS).
func BenchmarkLoadTensor(b *testing.B) {
	f := benchFile(b)
	m := mapFile(b, f)
	for _, r := range []struct {
		name string
		src  safetensors.Reader
	}{{"pread", f}, {"mmap", m}} {
		for _, c := range []struct {
			name string
			dt   DType
		}{{"bf16", BFloat16}, {"to_f32", Float32}} {
			b.Run(r.name+"/"+c.name, func(b *testing.B) {
				b.SetBytes(64 << 20)
				err := Run(func() error {
					for i := 0; i < b.N; i++ {
						t, err := LoadTensor(r.src, "w", testDevice, c.dt)
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
}

// mappedFile is the comparison reader of BenchmarkLoadTensor: f's tensors as views of a mapping.
type mappedFile struct {
	*safetensors.File
	data  []byte // the data buffer of the mapping
	start int64  // offset of the data buffer in the file
}

func mapFile(b *testing.B, f *safetensors.File) *mappedFile {
	fd, err := os.Open(f.Path())
	if err != nil {
		b.Fatal(err)
	}
	defer fd.Close()
	st, err := fd.Stat()
	if err != nil {
		b.Fatal(err)
	}
	mm, err := syscall.Mmap(int(fd.Fd()), 0, int(st.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { syscall.Munmap(mm) })
	info, err := f.Info("w")
	if err != nil {
		b.Fatal(err)
	}
	start := st.Size() - info.End // one tensor: the data buffer ends the file
	return &mappedFile{File: f, data: mm[start:], start: start}
}

func (m *mappedFile) ReadInto(name string, dst []byte) error {
	b, err := m.Data(name)
	if err == nil {
		copy(dst, b)
	}
	return err
}

func (m *mappedFile) Data(name string) ([]byte, error) {
	info, err := m.Info(name)
	if err != nil {
		return nil, err
	}
	return m.data[info.Begin:info.End], nil
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
