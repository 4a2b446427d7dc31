package data

import (
	"fmt"
	"io"
	"io/fs"
	"os"
)

// Caps of ReadFile for the program's own small files.
const (
	// MaxConfigBytes bounds a configuration file, a saved config.yaml, a checkpoint's manifest
	// and state.
	MaxConfigBytes = 16 << 20
)

// ReadFile reads a whole file of at most max bytes. A larger one, or a stream without end such
// as /dev/zero, is an error wrapping ErrTooLarge after reading max+1 bytes; like os.ReadFile's,
// errors are *fs.PathError naming the file.
func ReadFile(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	if int64(len(b)) > max {
		return nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w: over %d bytes", ErrTooLarge, max)}
	}
	return b, nil
}
