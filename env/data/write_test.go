package data

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// A write that fails part way (a row that cannot be encoded: NaN has no JSON) leaves the file
// that was there as it was, and no temporary beside it, for both formats.
func TestWriteFailureKeepsOldFile(t *testing.T) {
	for _, ext := range []string{"jsonl", "parquet"} {
		dir := t.TempDir()
		path := filepath.Join(dir, "rows."+ext)
		if err := Write(path, sampleRows()); err != nil {
			t.Fatal(err)
		}
		old, _ := os.ReadFile(path)
		bad := append(sampleRows(), Row{DataSource: "x", ExtraInfo: map[string]any{"score": []any{math.NaN()}}})
		if err := Write(path, bad); err == nil || !strings.Contains(err.Error(), "NaN") {
			t.Errorf("%s: %v, want the NaN refused", ext, err)
		}
		if now, _ := os.ReadFile(path); string(now) != string(old) {
			t.Errorf("%s: the old file changed", ext)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 1 {
			t.Errorf("%s: the directory holds %v", ext, ents)
		}
	}
}

// Parquet is written a row group at a time: with groups of 1,000 rows, 12,000 rows of 1 KB (some
// 12 MB of pages, more as Go values) leave the live heap, sampled after a collection every 2,000
// rows, less than 4 MB above where it started, and the file holds 12 groups of all the rows.
func TestParquetWriteBounded(t *testing.T) {
	defer func(n int64) { rowGroupRows = n }(rowGroupRows)
	rowGroupRows = 1000
	text := strings.Repeat("x", 1000)
	live := func() uint64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	var peak uint64
	rows := func(yield func(Row) bool) {
		for i := range 12_000 {
			if i%2000 == 0 {
				peak = max(peak, live())
			}
			r := Row{DataSource: "x", Prompt: []Message{{Role: "user", Content: fmt.Sprint(i, text)}}, ExtraInfo: map[string]any{"index": int64(i)}}
			if !yield(r) {
				return
			}
		}
	}
	path := filepath.Join(t.TempDir(), "rows.parquet")
	base := live()
	if err := WriteSeq(path, rows); err != nil {
		t.Fatal(err)
	}
	if grew := int64(peak) - int64(base); grew > 4<<20 {
		t.Errorf("the live heap grew by %d MB while writing", grew>>20)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	pf, err := parquet.OpenFile(f, fi.Size())
	if err != nil {
		t.Fatal(err)
	}
	if n, rows := len(pf.RowGroups()), pf.NumRows(); n != 12 || rows != 12_000 {
		t.Errorf("%d row groups of %d rows, want 12 of 12,000", n, rows)
	}
}

// A parquet file given through a FIFO (bash's <(...)) reads: parquet needs random access, so a
// file that is no regular file is read whole first (under Options.MaxBytes).
func TestParquetFromFIFO(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rows.parquet")
	if err := Write(path, sampleRows()); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	fifo := filepath.Join(dir, "fifo.parquet")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	go func() {
		if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			f.Write(b)
			f.Close()
		}
	}()
	rows, _, err := Read(fifo, Options{})
	if err != nil || len(rows) != 2 || rows[1].DataSource != "countdown" {
		t.Errorf("%d rows, %v", len(rows), err)
	}
}
