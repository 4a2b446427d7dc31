package model

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mtgrpo/mtgrpo/torch/safetensors"
)

// Fingerprint samples: a whole 14B checkpoint would take minutes to hash, and two different
// weight sets differ in nearly every byte, so 16 windows of 64 KiB per file (the first holds the
// header: the tensor names, dtypes, shapes and offsets) tell them apart.
const (
	fingerprintWindows = 16
	fingerprintWindow  = 64 << 10
)

// Fingerprint identifies the weights of a model directory, wherever it lies: "sha256:" and the
// hex SHA-256 of each weight file's name and size and of 16 windows of 64 KiB spread evenly over
// it (the first holds the safetensors header). The same files give the same fingerprint; other
// weights, another dtype or another sharding give another.
func Fingerprint(dir string) (string, error) {
	ck, err := safetensors.OpenDir(dir)
	if err != nil {
		return "", fmt.Errorf("model: fingerprint: %w", err)
	}
	var paths []string
	for _, n := range ck.Names() {
		f, _ := ck.File(n)
		if !slices.Contains(paths, f.Path()) {
			paths = append(paths, f.Path())
		}
	}
	ck.Close()
	slices.SortFunc(paths, func(a, b string) int { return strings.Compare(filepath.Base(a), filepath.Base(b)) })
	h := sha256.New()
	for _, p := range paths {
		if err := fingerprintFile(h, p); err != nil {
			return "", fmt.Errorf("model: fingerprint: %w", err)
		}
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// fingerprintFile adds one weight file to h: its name, its size and its windows.
func fingerprintFile(h io.Writer, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	size := st.Size()
	io.WriteString(h, filepath.Base(path))
	binary.Write(h, binary.LittleEndian, size)
	buf := make([]byte, min(fingerprintWindow, size))
	for i := range int64(fingerprintWindows) {
		off := i * (size - int64(len(buf))) / (fingerprintWindows - 1)
		if _, err := f.ReadAt(buf, off); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		h.Write(buf)
	}
	return nil
}
