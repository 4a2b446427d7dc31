package bounded

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// ReadFile stops at its cap: /dev/zero is refused after max+1 bytes, not read without end.
func TestReadFileBounded(t *testing.T) {
	_, err := ReadFile("/dev/zero", 1<<20)
	if want := "read /dev/zero: too large: over 1048576 bytes"; err == nil || err.Error() != want || !errors.Is(err, ErrTooLarge) {
		t.Errorf("/dev/zero: %v, want %s", err, want)
	}
	p := filepath.Join(t.TempDir(), "f")
	os.WriteFile(p, []byte("12345"), 0o644)
	if b, err := ReadFile(p, 5); err != nil || string(b) != "12345" {
		t.Errorf("a file at the cap: %q %v", b, err)
	}
	if _, err := ReadFile(p, 4); !errors.Is(err, ErrTooLarge) {
		t.Errorf("a file over the cap: %v", err)
	}
}
