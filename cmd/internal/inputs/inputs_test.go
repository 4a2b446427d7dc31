package inputs

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/mtgrpo/mtgrpo/env/data"
)

// A file is read once until Release: a second reader gets the first reading (its own slice), and
// after Release the file is read again.
func TestRowsReadOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rows.jsonl")
	write := func(src string) {
		if err := data.Write(path, []data.Row{{DataSource: src, Prompt: []data.Message{{Role: "user", Content: "q"}}}}); err != nil {
			t.Fatal(err)
		}
	}
	write("first")
	a, _, err := Rows(path, data.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a[0].DataSource = "changed by the caller"
	write("second")
	b, _, _ := Rows(path, data.Options{})
	if b[0].DataSource != "first" {
		t.Errorf("second reading %q, want the first's", b[0].DataSource)
	}
	Release()
	if c, _, _ := Rows(path, data.Options{}); c[0].DataSource != "second" {
		t.Errorf("after Release %q, want the file's new rows", c[0].DataSource)
	}
	Release()
	os.Remove(path)
}
