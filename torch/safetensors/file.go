package safetensors

import (
	"fmt"
	"os"
	"syscall"
)

// Reader is what loaders need from a checkpoint: a single File or a sharded Checkpoint.
type Reader interface {
	Names() []string
	Has(name string) bool
	Info(name string) (TensorInfo, error)
	Data(name string) ([]byte, error)
}

// File is an open, memory-mapped safetensors file. Its methods must not be called after Close;
// byte slices returned by Data are invalid after Close.
type File struct {
	path string
	mmap []byte // the whole file; nil once closed (or for an empty mapping)
	data []byte // the data buffer, a view into mmap
	h    *header
	open bool
}

// Open maps path into memory and validates its header.
func Open(path string) (*File, error) {
	fd, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	defer fd.Close() // the mapping stays valid after the descriptor is closed
	st, err := fd.Stat()
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("safetensors: %s: not a regular file", path)
	}
	size := st.Size()
	if size < 8 {
		return nil, fmt.Errorf("safetensors: %s: file is %d bytes, shorter than the 8-byte header length", path, size)
	}
	if int64(int(size)) != size {
		return nil, fmt.Errorf("safetensors: %s: file of %d bytes is too large to map", path, size)
	}
	m, err := syscall.Mmap(int(fd.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %s: mmap: %w", path, err)
	}
	h, data, err := parseFile(path, m)
	if err != nil {
		syscall.Munmap(m)
		return nil, err
	}
	return &File{path: path, mmap: m, data: data, h: h, open: true}, nil
}

// Path is the file's path as given to Open.
func (f *File) Path() string { return f.path }

// Names lists the tensors in sorted order.
func (f *File) Names() []string { return append([]string(nil), f.h.names...) }

// Len is the number of tensors.
func (f *File) Len() int { return len(f.h.names) }

// Has reports whether the file holds a tensor called name.
func (f *File) Has(name string) bool {
	_, ok := f.h.tensors[name]
	return ok
}

// Info returns a tensor's dtype, shape and offsets.
func (f *File) Info(name string) (TensorInfo, error) {
	t, ok := f.h.tensors[name]
	if !ok {
		return TensorInfo{}, fmt.Errorf("safetensors: %s: no tensor %q", f.path, name)
	}
	t.Shape = append(make([]int64, 0, len(t.Shape)), t.Shape...)
	return t, nil
}

// Data returns a tensor's raw little-endian bytes: a read-only view into the mapping, valid until
// Close. Writing to it faults.
func (f *File) Data(name string) ([]byte, error) {
	if !f.open {
		return nil, fmt.Errorf("safetensors: %s: file is closed", f.path)
	}
	t, ok := f.h.tensors[name]
	if !ok {
		return nil, fmt.Errorf("safetensors: %s: no tensor %q", f.path, name)
	}
	return f.data[t.Begin:t.End:t.End], nil
}

// Metadata returns a copy of the header's __metadata__ map (nil if the file has none).
func (f *File) Metadata() map[string]string {
	if f.h.metadata == nil {
		return nil
	}
	m := make(map[string]string, len(f.h.metadata))
	for k, v := range f.h.metadata {
		m[k] = v
	}
	return m
}

// Close unmaps the file. It is safe to call more than once.
func (f *File) Close() error {
	if !f.open {
		return nil
	}
	f.open = false
	m := f.mmap
	f.mmap, f.data = nil, nil
	if err := syscall.Munmap(m); err != nil {
		return fmt.Errorf("safetensors: %s: munmap: %w", f.path, err)
	}
	return nil
}
