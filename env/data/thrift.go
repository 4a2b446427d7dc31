package data

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// A bounded walk over Thrift's compact protocol (the encoding of a parquet file's footer and page
// headers), run before the parquet library decodes the same bytes. The library allocates every
// list at the length the input states (up to 2^31 elements) before reading one: five changed
// bytes in a footer made it allocate 24 GiB. The walk checks every length against the bytes
// left (an element takes at least one byte), bounds the nesting, and estimates what decoding
// would allocate, so the library only ever sees input whose decoding is bounded by its size.
//
// Compact protocol (thrift/doc/specs/thrift-compact-protocol.md): a struct is a sequence of
// field headers (type in the low nibble, field-id delta in the high nibble, or 0 and a zigzag
// varint id) ended by a 0 byte; integers are zigzag varints, doubles 8 bytes, binaries a varint
// length and the bytes; a list's header holds its size (15 = a varint follows) and element
// type; a map's is a varint size then a key/value type byte; booleans live in the field header
// (in lists, one byte each).

// Compact protocol types.
const (
	tStop   = 0
	tTrue   = 1
	tFalse  = 2
	tI8     = 3
	tI16    = 4
	tI32    = 5
	tI64    = 6
	tDouble = 7
	tBinary = 8
	tList   = 9
	tSet    = 10
	tMap    = 11
	tStruct = 12
	tUUID   = 13
)

const (
	// maxThriftDepth bounds struct nesting; parquet's deepest path (FileMetaData, RowGroup,
	// ColumnChunk, ColumnMetaData, GeospatialStatistics, BoundingBox) is 6.
	maxThriftDepth = 32
	// structBytes is what the decoder allocates per list element of struct type, an upper
	// bound on the parquet format structs' Go sizes (format.ColumnChunk, the largest, is 560
	// bytes in parquet-go v0.32); scalarBytes per other element (a string header is 16).
	structBytes = 1024
	scalarBytes = 24
)

// errShort reports input that ends inside the structure: the caller may retry with more bytes.
var errShort = errors.New("ends early")

type thriftWalker struct {
	b     []byte
	off   int
	alloc int64 // estimated bytes a decoder allocates for the lists and maps seen
	limit int64
}

// walkThrift checks the struct at the start of b and returns its length in bytes. The decoded
// lists and maps may cost at most limit bytes.
func walkThrift(b []byte, limit int64) (int, error) {
	w := &thriftWalker{b: b, limit: limit}
	if err := w.structure(1); err != nil {
		return 0, err
	}
	return w.off, nil
}

func (w *thriftWalker) byte() (byte, error) {
	if w.off >= len(w.b) {
		return 0, errShort
	}
	w.off++
	return w.b[w.off-1], nil
}

func (w *thriftWalker) uvarint() (uint64, error) {
	v, n := binary.Uvarint(w.b[w.off:])
	switch {
	case n == 0:
		return 0, errShort
	case n < 0:
		return 0, fmt.Errorf("varint at byte %d overflows 64 bits", w.off)
	}
	w.off += n
	return v, nil
}

func (w *thriftWalker) skip(n uint64) error {
	if n > uint64(len(w.b)-w.off) {
		return errShort
	}
	w.off += int(n)
	return nil
}

// count checks a list or map of n elements of at least minBytes each and adds what decoding
// it allocates.
func (w *thriftWalker) count(n uint64, minBytes int, elemBytes int64, what string) error {
	if left := uint64(len(w.b) - w.off); n > left/uint64(minBytes) {
		return fmt.Errorf("%s of %d elements at byte %d, with %d bytes left", what, n, w.off, left)
	}
	if w.alloc += int64(n) * elemBytes; w.alloc > w.limit {
		return fmt.Errorf("decoding would allocate over %d bytes (at byte %d)", w.limit, w.off)
	}
	return nil
}

func (w *thriftWalker) structure(depth int) error {
	if depth > maxThriftDepth {
		return fmt.Errorf("structs nested over %d deep at byte %d", maxThriftDepth, w.off)
	}
	for {
		h, err := w.byte()
		if err != nil {
			return err
		}
		if h == tStop {
			return nil
		}
		typ := h & 0x0f
		if h>>4 == 0 { // long form: the field id follows as a zigzag varint
			typ = h
			if _, err := w.uvarint(); err != nil {
				return err
			}
		}
		if typ == tTrue || typ == tFalse { // the value is the type
			continue
		}
		if err := w.value(typ, depth); err != nil {
			return err
		}
	}
}

// minSize is the fewest bytes a value of the type takes inside a list.
func minSize(typ byte) int {
	switch typ {
	case tDouble:
		return 8
	case tUUID:
		return 16
	}
	return 1
}

func (w *thriftWalker) value(typ byte, depth int) error {
	switch typ {
	case tTrue, tFalse, tI8:
		_, err := w.byte()
		return err
	case tI16, tI32, tI64:
		_, err := w.uvarint()
		return err
	case tDouble:
		return w.skip(8)
	case tUUID:
		return w.skip(16)
	case tBinary:
		n, err := w.uvarint()
		if err != nil {
			return err
		}
		return w.skip(n)
	case tList, tSet:
		return w.list(depth)
	case tMap:
		return w.dict(depth)
	case tStruct:
		return w.structure(depth + 1)
	}
	return fmt.Errorf("unknown type %d at byte %d", typ, w.off-1)
}

func (w *thriftWalker) list(depth int) error {
	h, err := w.byte()
	if err != nil {
		return err
	}
	n, elem := uint64(h>>4), h&0x0f
	if n == 15 {
		if n, err = w.uvarint(); err != nil {
			return err
		}
	}
	size := int64(scalarBytes)
	if elem == tStruct {
		size = structBytes
	}
	if err := w.count(n, minSize(elem), size, "list"); err != nil {
		return err
	}
	for range n {
		if err := w.value(elem, depth); err != nil {
			return err
		}
	}
	return nil
}

func (w *thriftWalker) dict(depth int) error {
	n, err := w.uvarint()
	if err != nil || n == 0 {
		return err
	}
	kv, err := w.byte()
	if err != nil {
		return err
	}
	k, v := kv>>4, kv&0x0f
	if err := w.count(n, minSize(k)+minSize(v), 2*structBytes, "map"); err != nil {
		return err
	}
	for range n {
		if err := w.value(k, depth); err != nil {
			return err
		}
		if err := w.value(v, depth); err != nil {
			return err
		}
	}
	return nil
}
