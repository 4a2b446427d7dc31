// Package safetensors reads and writes the safetensors checkpoint format, single-file and sharded,
// in pure Go.
//
// A file is an 8-byte little-endian header length N, N bytes of UTF-8 JSON, then the data buffer:
//
//	{"__metadata__": {"format": "pt"},
//	 "model.norm.weight": {"dtype": "BF16", "shape": [64], "data_offsets": [0, 128]}, ...}
//
// Offsets are relative to the start of the data buffer, end exclusive; data is little-endian,
// row-major, without strides.
//
// Reading maps the file into memory (Open). The whole header is parsed and validated when the
// file is opened, because the most important check (the tensors tile the data buffer exactly,
// with no gap, overlap or missing tail) needs every entry at once; the tensor bytes themselves
// are only touched when Data is called, and the pages are faulted in by the kernel on demand.
// Data returns a view into the mapping that is valid until Close: callers copy out of it (the
// torch package copies it straight into a new tensor) and never keep it.
//
// Writing (Writer) writes the header's keys sorted, lays the data out by element size (largest
// first) and then by name, so that every tensor is aligned to its element size, pads the header
// with spaces to a multiple of 8 bytes, always records {"format": "pt"} in __metadata__ (older
// transformers refuse files without it), and writes to a temporary file that is renamed into place,
// so an interrupted save never leaves a half-written file under the final name.
//
// Sharded checkpoints (model-00001-of-00003.safetensors plus model.safetensors.index.json) are
// written by Writer.WriteDir and read, like single-file ones, by OpenDir.
//
// The bf16 and f16 helpers convert to and from float32 for tests and tools that build or check
// tensors in Go.
package safetensors
