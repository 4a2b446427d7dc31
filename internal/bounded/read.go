package bounded

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// ErrTooLarge is wrapped by the error of a read past its cap.
var ErrTooLarge = errors.New("too large")

// Caps of ReadFile by the kind of file.
const (
	// Small bounds the program's own and the users' small files: a configuration file, a saved
	// config.yaml, a checkpoint's manifest and state, a model's config.json and
	// generation_config.json, tokenizer_config.json, a safetensors index.
	Small = 16 << 20
	// Tokenizer bounds tokenizer.json (the largest published ones hold some 30 MB).
	Tokenizer = 1 << 30
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
	return Read(f, path, max)
}

// Read is ReadFile for a file already open (or any reader), named path in errors.
func Read(r io.Reader, path string, max int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	if int64(len(b)) > max {
		return nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w: over %d bytes", ErrTooLarge, max)}
	}
	return b, nil
}
