package data

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// repeat is an endless stream of one pattern.
type repeat struct {
	b   []byte
	off int
}

func (r *repeat) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = r.b[r.off]
		r.off = (r.off + 1) % len(r.b)
	}
	return len(p), nil
}

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	f()
	runtime.ReadMemStats(&m1)
	return m1.TotalAlloc - m0.TotalAlloc
}

// A JSONL "file" that is an endless stream ends in an error naming the row, at a bound, with
// memory bounded by the line limit: /dev/zero (no newline), endless valid rows, endless bytes.
func TestJSONLEndlessStreams(t *testing.T) {
	var err error
	a := allocated(func() { _, _, err = ReadJSONL("/dev/zero", Options{}) })
	if !errors.Is(err, ErrLineTooLong) || err.Error() != "/dev/zero: row 1: line too long: over 67108864 bytes" {
		t.Errorf("/dev/zero: %v", err)
	}
	if a > 4*DefaultMaxLineBytes { // the line buffer grows by doubling up to the limit
		t.Errorf("/dev/zero: allocated %d MB", a>>20)
	}
	row := `{"prompt": "2+2?", "reward_model": {"ground_truth": "4"}}` + "\n"
	_, st, err := DecodeJSONL(&repeat{b: []byte(row)}, "yes.jsonl", Options{MaxRows: 1000})
	if !errors.Is(err, ErrTooLarge) || err.Error() != "yes.jsonl: row 1001: too large: more than 1000 rows" {
		t.Errorf("endless rows: %v %+v", err, st)
	}
	_, _, err = DecodeJSONL(&repeat{b: []byte(row)}, "yes.jsonl", Options{MaxBytes: 10 * int64(len(row))})
	if !errors.Is(err, ErrTooLarge) || err.Error() != "yes.jsonl: row 11: too large: the data passes 580 bytes" {
		t.Errorf("endless bytes: %v", err)
	}
	// The bounds hold whatever SkipInvalid says: a too-long line is not a row to skip.
	_, _, err = DecodeJSONL(io.MultiReader(strings.NewReader(row), &repeat{b: []byte("x")}), "x.jsonl", Options{SkipInvalid: true, MaxLineBytes: 1000})
	if !errors.Is(err, ErrLineTooLong) || !strings.HasPrefix(err.Error(), "x.jsonl: row 2: ") {
		t.Errorf("skip-invalid: %v", err)
	}
	// A line at the limit is read; one byte more is refused.
	line := `{"prompt": "` + strings.Repeat("a", 100) + `"}`
	if rows, _, err := DecodeJSONL(strings.NewReader(line+"\n"), "f", Options{MaxLineBytes: len(line)}); err != nil || len(rows) != 1 {
		t.Errorf("line at the limit: %v", err)
	}
	if _, _, err := DecodeJSONL(strings.NewReader(line+"\n"), "f", Options{MaxLineBytes: len(line) - 1}); !errors.Is(err, ErrLineTooLong) {
		t.Errorf("line over the limit: %v", err)
	}
}

// A file with no usable row is an error wrapping ErrNoRows that says why, in both formats.
func TestEmptyDatasets(t *testing.T) {
	for in, want := range map[string]string{
		"":                        "f.jsonl: no rows: the file holds no data",
		"\n  \n\r\n":              "f.jsonl: no rows: the file holds no data",
		"{\"prompt\": 5}\nnope\n": "f.jsonl: no rows: all 2 rows are malformed (the first: f.jsonl: row 1: prompt: want a list of {role, content} or a string, got 5)",
	} {
		rows, st, err := DecodeJSONL(strings.NewReader(in), "f.jsonl", Options{SkipInvalid: true})
		if !errors.Is(err, ErrNoRows) || err.Error() != want || rows != nil {
			t.Errorf("%q: %v\nwant %s", in, err, want)
		}
		if in != "" && st.Skipped != strings.Count(in, "{")+strings.Count(in, "nope") {
			t.Errorf("%q: stats %+v", in, st)
		}
	}
	dir := t.TempDir()
	for _, name := range []string{"empty.parquet", "empty.jsonl"} {
		path := filepath.Join(dir, name)
		if err := Write(path, nil); err != nil {
			t.Fatal(err)
		}
		if _, _, err := Read(path, Options{}); !errors.Is(err, ErrNoRows) || err.Error() != path+": no rows: the file holds no data" {
			t.Errorf("%s: %v", name, err)
		}
	}
	var buf bytes.Buffer
	if err := EncodeParquet(&buf, []Row{{DataSource: "x"}}); err != nil {
		t.Fatal(err)
	}
	_, _, err := DecodeParquet(bytes.NewReader(buf.Bytes()), int64(buf.Len()), "bad.parquet", Options{SkipInvalid: true})
	if !errors.Is(err, ErrNoRows) || err.Error() != "bad.parquet: no rows: all 1 rows are malformed (the first: bad.parquet: row 0: prompt: empty (want a list of {role, content}))" {
		t.Errorf("all skipped: %v", err)
	}
}

// A ground-truth file that never ends is refused at the line bound, as is one with more answers
// than rows.
func TestGroundTruthFileBounds(t *testing.T) {
	rows := sampleRows()
	if err := ApplyGroundTruth(rows, "/dev/zero"); !errors.Is(err, ErrLineTooLong) || !strings.HasPrefix(err.Error(), "/dev/zero line 1: ") {
		t.Errorf("/dev/zero: %v", err)
	}
	path := filepath.Join(t.TempDir(), "gt.txt")
	os.WriteFile(path, []byte("1\n2\n3\n"), 0o644)
	if err := ApplyGroundTruth(rows, path); err == nil || err.Error() != path+": more answers than the 2 rows" {
		t.Errorf("3 answers for 2 rows: %v", err)
	}
}
