package torch

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"io"
	"unsafe"

	"github.com/mtgrpo/mtgrpo/torch/safetensors"
)

// Safetensors I/O. Loading reads a tensor's bytes (pread) into a C buffer, copies them into a new
// tensor, then moves it to the device and converts the dtype there, so a bf16 checkpoint bound
// for a GPU crosses the bus at its stored size. No tensor points into the file, so it may be
// closed as soon as loading is done. Saving streams one tensor at a time through
// safetensors.Writer, so it needs only one extra host copy of the largest tensor.

var toSafetensors = map[DType]safetensors.DType{
	Float32: safetensors.F32, Float16: safetensors.F16, BFloat16: safetensors.BF16, Float64: safetensors.F64,
	Int64: safetensors.I64, Int32: safetensors.I32, Uint8: safetensors.U8, Bool: safetensors.Bool,
}

// DTypeOf maps a safetensors dtype to the tensor dtype that holds it unchanged.
func DTypeOf(d safetensors.DType) (DType, error) {
	for dt, sd := range toSafetensors {
		if sd == d {
			return dt, nil
		}
	}
	return 0, fmt.Errorf("torch: safetensors dtype %s is not supported (want one of F32 F16 BF16 F64 I64 I32 U8 BOOL)", d)
}

// SafetensorsDType maps a tensor dtype to its safetensors name.
func SafetensorsDType(dt DType) (safetensors.DType, error) {
	sd, ok := toSafetensors[dt]
	if !ok {
		return "", fmt.Errorf("torch: %s has no safetensors dtype", dt)
	}
	return sd, nil
}

// LoadTensor copies tensor name of src (a *safetensors.File or *safetensors.Checkpoint) into a new
// tensor on dev with dtype dt, owned by the current scope. Run it on the torch thread.
func LoadTensor(src safetensors.Reader, name string, dev Device, dt DType) (t *Tensor, err error) {
	defer Recover(&err)
	info, err := src.Info(name)
	if err != nil {
		return nil, err
	}
	fileDT, err := DTypeOf(info.DType)
	if err != nil {
		return nil, fmt.Errorf("torch: loading %q: %w", name, err)
	}
	if dt.Size() == 0 {
		return nil, fmt.Errorf("torch: loading %q: unknown target dtype %d", name, int(dt))
	}
	// The bytes are read into C memory, freed as soon as the shim has copied them: a model's
	// weights never pass through the Go heap, whose growth under an address-space limit is a
	// fatal error of the runtime, and whose garbage would outlive the copy until a collection.
	size := info.End - info.Begin
	var p unsafe.Pointer
	if size > 0 {
		if p = C.malloc(C.size_t(size)); p == nil {
			return nil, fmt.Errorf("torch: loading %q: cannot allocate %d bytes to read it (an address-space limit, ulimit -v?)", name, size)
		}
		defer C.free(p)
		if err := src.ReadInto(name, unsafe.Slice((*byte)(p), size)); err != nil {
			return nil, err
		}
	}
	var h C.mt_tensor
	e := C.mt_from_data(p, C.size_t(size), C.int(fileDT), i64p(info.Shape), C.int(len(info.Shape)), C.int(dev), &h)
	if err := checkErr("LoadTensor", e); err != nil {
		return nil, fmt.Errorf("torch: loading %q: %w", name, err)
	}
	t = wrap("LoadTensor", h)
	if fileDT != dt {
		c := t.ToDType(dt)
		t.Free()
		t = c
	}
	return t, nil
}

// AddTensor records t under name in w. Its bytes are copied out (contiguous, on the host) only
// when w writes, so t must stay alive until then, and the write must run on the torch thread.
func AddTensor(w *safetensors.Writer, name string, t *Tensor) (err error) {
	defer Recover(&err)
	info := t.Info()
	sd, err := SafetensorsDType(info.DType)
	if err != nil {
		return fmt.Errorf("torch: saving %q: %w", name, err)
	}
	return w.AddStream(name, sd, info.Shape, func(out io.Writer) error {
		// Do turns a torch failure (freed tensor, wrong thread) into an error, so the writer
		// removes its temporary file instead of being unwound by a panic.
		return Do(func() error {
			_, err := out.Write(t.Bytes())
			return err
		})
	})
}

// SaveSafetensors writes tensors to one safetensors file at path, atomically, with metadata added
// to the header's __metadata__ (which always holds "format": "pt"). Run it on the torch thread.
func SaveSafetensors(path string, tensors map[string]*Tensor, metadata map[string]string) error {
	w, err := newWriter(tensors, metadata)
	if err != nil {
		return err
	}
	return w.WriteFile(path)
}

// SaveSafetensorsDir writes tensors into dir as a Hugging Face checkpoint: model.safetensors, or
// shards of at most maxShardBytes plus model.safetensors.index.json (see safetensors.Writer.WriteDir).
// It returns the file names written.
func SaveSafetensorsDir(dir string, tensors map[string]*Tensor, metadata map[string]string, maxShardBytes int64) ([]string, error) {
	w, err := newWriter(tensors, metadata)
	if err != nil {
		return nil, err
	}
	return w.WriteDir(dir, maxShardBytes)
}

func newWriter(tensors map[string]*Tensor, metadata map[string]string) (*safetensors.Writer, error) {
	w := safetensors.NewWriter()
	for k, v := range metadata {
		w.SetMetadata(k, v)
	}
	for name, t := range tensors {
		if err := AddTensor(w, name, t); err != nil {
			return nil, err
		}
	}
	return w, nil
}
