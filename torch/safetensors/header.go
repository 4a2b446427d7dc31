package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"unicode/utf8"
)

// MaxHeaderSize bounds the JSON header, as the reference implementation does: a corrupt or hostile
// length prefix must not make us allocate or parse gigabytes.
const MaxHeaderSize = 100 << 20

const metadataKey = "__metadata__"

// TensorInfo describes one tensor of a file.
type TensorInfo struct {
	DType DType
	Shape []int64
	// Begin and End are the tensor's byte range in the data buffer (End exclusive).
	Begin, End int64
}

// Numel is the number of elements (1 for a scalar, whose shape is empty).
func (t TensorInfo) Numel() int64 {
	n := int64(1)
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// header is a parsed and validated file header.
type header struct {
	tensors  map[string]TensorInfo
	names    []string // sorted
	metadata map[string]string
	dataLen  int64
}

// readHeader reads and validates the header of a file of size bytes, and returns it with the
// offset of the data buffer. name is only used in error messages.
func readHeader(name string, r io.ReaderAt, size int64) (*header, int64, error) {
	if size < 8 {
		return nil, 0, fmt.Errorf("safetensors: %s: file is %d bytes, shorter than the 8-byte header length", name, size)
	}
	var prefix [8]byte
	if _, err := r.ReadAt(prefix[:], 0); err != nil {
		return nil, 0, fmt.Errorf("safetensors: %s: reading the header length: %w", name, err)
	}
	n := binary.LittleEndian.Uint64(prefix[:])
	if n > MaxHeaderSize {
		return nil, 0, fmt.Errorf("safetensors: %s: header length %d exceeds the %d-byte limit", name, n, MaxHeaderSize)
	}
	if n > uint64(size-8) {
		return nil, 0, fmt.Errorf("safetensors: %s: header length %d is larger than the %d bytes after the length prefix (file truncated?)", name, n, size-8)
	}
	js := make([]byte, n)
	if _, err := r.ReadAt(js, 8); err != nil {
		return nil, 0, fmt.Errorf("safetensors: %s: reading the %d-byte header: %w", name, n, err)
	}
	dataStart := 8 + int64(n)
	h, err := parseHeader(js, size-dataStart)
	if err != nil {
		return nil, 0, fmt.Errorf("safetensors: %s: %w", name, err)
	}
	return h, dataStart, nil
}

// parseHeader parses the JSON header and checks it against a data buffer of dataLen bytes.
func parseHeader(js []byte, dataLen int64) (*header, error) {
	if !utf8.Valid(js) {
		return nil, errors.New("header is not valid UTF-8")
	}
	h := &header{tensors: map[string]TensorInfo{}, dataLen: dataLen}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	if err := expectDelim(dec, '{'); err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	seen := map[string]bool{}
	for dec.More() {
		key, err := nextKey(dec)
		if err != nil {
			return nil, fmt.Errorf("header: %w", err)
		}
		if seen[key] {
			return nil, fmt.Errorf("header: duplicate entry %q", key)
		}
		seen[key] = true
		if key == metadataKey {
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return nil, fmt.Errorf("header: entry %q: invalid JSON: %w", key, err)
			}
			if h.metadata, err = parseMetadata(raw); err != nil {
				return nil, fmt.Errorf("header: %s: %w", metadataKey, err)
			}
			continue
		}
		var r rawTensorInfo
		if err := dec.Decode(&r); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				return nil, fmt.Errorf("tensor %q: invalid entry: %w", key, err)
			}
			return nil, fmt.Errorf("header: entry %q: invalid JSON: %w", key, err)
		}
		info, err := r.check()
		if err != nil {
			return nil, fmt.Errorf("tensor %q: %w", key, err)
		}
		h.tensors[key] = info
		h.names = append(h.names, key)
	}
	if err := expectDelim(dec, '}'); err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("header: unexpected data after the JSON object")
	}
	sort.Strings(h.names)
	if err := h.checkTiling(); err != nil {
		return nil, err
	}
	return h, nil
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("invalid JSON: %w", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fmt.Errorf("invalid JSON: want '%s', found %v", want, tok)
	}
	return nil
}

func nextKey(dec *json.Decoder) (string, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", fmt.Errorf("invalid JSON: %w", err)
	}
	key, ok := tok.(string)
	if !ok {
		return "", fmt.Errorf("invalid JSON: want an object key, found %v", tok)
	}
	return key, nil
}

// parseMetadata decodes the string→string metadata map, refusing duplicate keys (encoding/json
// would silently keep the last one).
func parseMetadata(raw json.RawMessage) (map[string]string, error) {
	if string(raw) == "null" {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := expectDelim(dec, '{'); err != nil {
		return nil, errors.New("must be an object of strings")
	}
	m := map[string]string{}
	for dec.More() {
		key, err := nextKey(dec)
		if err != nil {
			return nil, err
		}
		if _, dup := m[key]; dup {
			return nil, fmt.Errorf("duplicate key %q", key)
		}
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("invalid JSON: %w", err)
		}
		s, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("key %q: value must be a string", key)
		}
		m[key] = s
	}
	return m, nil
}

// rawTensorInfo mirrors one header entry; pointers tell a missing field from a zero one.
type rawTensorInfo struct {
	DType       *string        `json:"dtype"`
	Shape       *[]json.Number `json:"shape"`
	DataOffsets *[]json.Number `json:"data_offsets"`
}

// check validates one entry and converts it.
func (r *rawTensorInfo) check() (TensorInfo, error) {
	switch {
	case r.DType == nil:
		return TensorInfo{}, errors.New(`missing "dtype"`)
	case r.Shape == nil:
		return TensorInfo{}, errors.New(`missing "shape"`)
	case r.DataOffsets == nil || len(*r.DataOffsets) != 2:
		return TensorInfo{}, errors.New(`"data_offsets" must be [begin, end]`)
	}
	info := TensorInfo{DType: DType(*r.DType), Shape: make([]int64, len(*r.Shape))}
	if !info.DType.Valid() {
		return TensorInfo{}, fmt.Errorf("unknown dtype %q", *r.DType)
	}
	for i, d := range *r.Shape {
		v, err := strconv.ParseInt(string(d), 10, 64)
		if err != nil || v < 0 {
			return TensorInfo{}, fmt.Errorf("shape %v: dimension %d must be a non-negative integer", *r.Shape, i)
		}
		info.Shape[i] = v
	}
	offs := *r.DataOffsets
	var err error
	if info.Begin, err = strconv.ParseInt(string(offs[0]), 10, 64); err != nil || info.Begin < 0 {
		return TensorInfo{}, fmt.Errorf("data_offsets %v: begin must be a non-negative integer", offs)
	}
	if info.End, err = strconv.ParseInt(string(offs[1]), 10, 64); err != nil || info.End < info.Begin {
		return TensorInfo{}, fmt.Errorf("data_offsets %v: end must be an integer >= begin", offs)
	}
	size, err := byteSize(info.DType, info.Shape)
	if err != nil {
		return TensorInfo{}, err
	}
	if got := info.End - info.Begin; got != size {
		return TensorInfo{}, fmt.Errorf("%s %v needs %d bytes but data_offsets %v span %d", info.DType, info.Shape, size, offs, got)
	}
	return info, nil
}

// checkTiling checks that the tensors, sorted by offset, cover the data buffer exactly: each
// begins where the previous one ended, the first at 0, and the last ends at the buffer's end.
func (h *header) checkTiling() error {
	order := append([]string(nil), h.names...)
	sort.SliceStable(order, func(i, j int) bool {
		a, b := h.tensors[order[i]], h.tensors[order[j]]
		if a.Begin != b.Begin {
			return a.Begin < b.Begin
		}
		return a.End < b.End
	})
	var pos int64
	prev := ""
	for _, name := range order {
		t := h.tensors[name]
		switch {
		case t.Begin > pos:
			return fmt.Errorf("tensor %q: data_offsets [%d, %d] leave a gap at bytes [%d, %d)", name, t.Begin, t.End, pos, t.Begin)
		case t.Begin < pos:
			return fmt.Errorf("tensor %q: data_offsets [%d, %d] overlap tensor %q (ends at %d)", name, t.Begin, t.End, prev, pos)
		}
		pos, prev = t.End, name
	}
	switch {
	case pos > h.dataLen:
		return fmt.Errorf("tensor %q: data ends at byte %d but the data buffer has %d bytes (file truncated?)", prev, pos, h.dataLen)
	case pos < h.dataLen:
		return fmt.Errorf("data buffer has %d bytes but the tensors cover only %d (trailing bytes)", h.dataLen, pos)
	}
	return nil
}
