package safetensors

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

// image builds a file image: the 8-byte little-endian length of header, header, data.
func image(header string, data []byte) []byte {
	b := make([]byte, 8, 8+len(header)+len(data))
	binary.LittleEndian.PutUint64(b, uint64(len(header)))
	b = append(b, header...)
	return append(b, data...)
}

// writeTemp writes b to a fresh file named name in a temporary directory.
func writeTemp(t *testing.T, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func mustOpen(t *testing.T, path string) *File {
	t.Helper()
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// parseFile splits a whole file image into header and data and validates both.
func parseFile(name string, file []byte) (*header, []byte, error) {
	h, dataStart, err := readHeader(name, bytes.NewReader(file), int64(len(file)))
	if err != nil {
		return nil, nil, err
	}
	return h, file[dataStart:], nil
}
