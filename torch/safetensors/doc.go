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
// Reading (Open) reads and validates the whole header when the file is opened, because the most
// important check (the tensors tile the data buffer exactly, with no gap, overlap or missing tail)
// needs every entry at once. Tensor bytes are read only when Data is called, with pread into a new
// slice that the caller owns (the torch package copies it into a tensor). Files are not
// memory-mapped: a mapped file that another process truncates kills the reader with SIGBUS when a
// lost page is touched, inside the shim's copy where Go cannot recover; a read past the new end is
// an error naming the file and the tensor instead. A file rewritten in place (same size) while
// open yields the new bytes under the old header; the shapes were checked at Open, the values
// cannot be. The cost is one extra copy per tensor through Go memory, freed after the load.
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
