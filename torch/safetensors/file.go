package safetensors

import (
	"fmt"
	"os"
)

// Reader is what loaders need from a checkpoint: a single File or a sharded Checkpoint.
type Reader interface {
	Names() []string
	Has(name string) bool
	Info(name string) (TensorInfo, error)
	Data(name string) ([]byte, error) // a new slice the caller owns
	// ReadInto reads the tensor's bytes into dst, which holds exactly their number: memory the
	// caller chose (torch.LoadTensor reads into C memory, so that weights never pass through
	// the Go heap).
	ReadInto(name string, dst []byte) error
}

// File is an open safetensors file. Its methods must not be called after Close.
//
// The header is read and validated by Open; tensor bytes are read with pread (ReadAt) by each
// Data or ReadInto call, not mapped: a mapped file that another process truncates kills the reader with
// SIGBUS the moment it touches a lost page (in the shim's copy, where Go cannot turn the fault
// into an error), while a read past the new end is a short read that Data reports.
type File struct {
	path      string
	fd        *os.File // nil once closed
	h         *header
	dataStart int64 // offset of the data buffer: 8 + the header length
}

// Open opens path and validates its header.
func Open(path string) (*File, error) {
	fd, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	st, err := fd.Stat()
	if err != nil {
		fd.Close()
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	if !st.Mode().IsRegular() {
		fd.Close()
		return nil, fmt.Errorf("safetensors: %s: not a regular file", path)
	}
	h, dataStart, err := readHeader(path, fd, st.Size())
	if err != nil {
		fd.Close()
		return nil, err
	}
	return &File{path: path, fd: fd, h: h, dataStart: dataStart}, nil
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

// Data reads a tensor's raw little-endian bytes into a new slice, which the caller owns (see
// ReadInto).
func (f *File) Data(name string) ([]byte, error) {
	t, ok := f.h.tensors[name]
	if !ok || f.fd == nil {
		return nil, f.ReadInto(name, nil) // the error ReadInto gives
	}
	buf := make([]byte, t.End-t.Begin)
	if err := f.ReadInto(name, buf); err != nil {
		return nil, err
	}
	return buf, nil
}

// ReadInto reads a tensor's raw little-endian bytes into dst, which must hold exactly their
// number. A file that changed size since Open (truncated or rewritten by another process) gives
// an error naming the file and the tensor.
func (f *File) ReadInto(name string, dst []byte) error {
	if f.fd == nil {
		return fmt.Errorf("safetensors: %s: file is closed", f.path)
	}
	t, ok := f.h.tensors[name]
	if !ok {
		return fmt.Errorf("safetensors: %s: no tensor %q", f.path, name)
	}
	if int64(len(dst)) != t.End-t.Begin {
		return fmt.Errorf("safetensors: %s: tensor %q holds %d bytes, not %d", f.path, name, t.End-t.Begin, len(dst))
	}
	n, err := f.fd.ReadAt(dst, f.dataStart+t.Begin)
	if n == len(dst) {
		return nil
	}
	want := f.dataStart + f.h.dataLen
	if st, serr := f.fd.Stat(); serr == nil && st.Size() < want {
		return fmt.Errorf("safetensors: %s: tensor %q: the file is now %d bytes, shorter than the %d its header "+
			"describes (truncated while open?)", f.path, name, st.Size(), want)
	}
	return fmt.Errorf("safetensors: %s: tensor %q: read %d of %d bytes: %w", f.path, name, n, len(dst), err)
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

// Close closes the file. It is safe to call more than once.
func (f *File) Close() error {
	if f.fd == nil {
		return nil
	}
	err := f.fd.Close()
	f.fd = nil
	if err != nil {
		return fmt.Errorf("safetensors: %s: %w", f.path, err)
	}
	return nil
}
