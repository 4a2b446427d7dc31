package data

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
)

// FuzzDecodeJSONL: any input either loads at least one row, every one valid, or fails with an
// error naming the file and the row (or ErrNoRows); it never panics. A file that loads also
// loads with SkipInvalid.
func FuzzDecodeJSONL(f *testing.F) {
	f.Add([]byte(`{"data_source": "d", "prompt": [{"role": "user", "content": "hi"}], "reward_model": {"ground_truth": "1", "style": "rule"}, "extra_info": {"index": 0}}`))
	f.Add([]byte("{\"prompt\": \"x\"}\n\n{\"prompt\": 5}\n"))
	f.Add([]byte(`{"prompt": [{"role": "user", "content": "a"}], "extra_info": {"n": 1e400, "m": [1, {"x": null}]}}`))
	f.Add([]byte("\xff\xfe{"))
	f.Add([]byte(`{"prompt": "` + strings.Repeat("a", 1<<10) + `"}`))
	f.Add([]byte(strings.Repeat("{\"prompt\": \"x\"}\n", 65)))
	f.Fuzz(func(t *testing.T, b []byte) {
		rows, _, err := DecodeJSONL(bytes.NewReader(b), "fuzz.jsonl", Options{MaxLineBytes: 1 << 10, MaxRows: 64})
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.jsonl") {
				t.Fatalf("error without file name: %v", err)
			}
			var re *RowError
			if !errors.As(err, &re) && !errors.Is(err, ErrNoRows) {
				t.Fatalf("error names no row: %v", err)
			}
			return
		}
		if len(rows) == 0 {
			t.Fatal("no rows and no error")
		}
		for i := range rows {
			if err := rows[i].Validate(); err != nil {
				t.Fatalf("row %d loaded but invalid: %v", i, err)
			}
		}
		var out bytes.Buffer
		if err := EncodeJSONL(&out, rows); err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		if _, _, err := DecodeJSONL(bytes.NewReader(b), "fuzz.jsonl", Options{SkipInvalid: true}); err != nil {
			t.Fatalf("SkipInvalid failed on a file with valid rows: %v", err)
		}
	})
}

// FuzzDecodeParquet: any bytes either load rows that validate or fail with an error naming the
// file; a corrupt file never panics (the parquet library's panics become errors), never costs
// more than 64 MB of allocation (no stated length or count is trusted: the bounds are 100 rows
// and 1 MiB of decompressed pages) and never loops. Seeds cover every codec the library reads
// and the files of the three outside writers (outsideWriterFiles).
// Run it with -fuzzminimizetime 200x: minimizing a kilobytes-long input at a millisecond per
// execution otherwise takes the default full minute per new input (docs/bench/env.md).
func FuzzDecodeParquet(f *testing.F) {
	for _, file := range outsideWriterFiles {
		seed, err := os.ReadFile(filepath.Join("testdata", file))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(seed)
	}
	rows := []Row{{DataSource: "d", Prompt: []Message{{Role: "user", Content: "hi"}, {Role: "user", Content: strings.Repeat("ab", 40)}},
		RewardModel: RewardModel{Style: "rule", GroundTruth: "1"}, ExtraInfo: map[string]any{"index": int64(0), "s": "x"}}}
	for _, codec := range []compress.Codec{&parquet.Uncompressed, &parquet.Snappy, &parquet.Gzip, &parquet.Zstd, &parquet.Lz4Raw, &parquet.Brotli} {
		var buf bytes.Buffer
		if err := encodeParquet(&buf, slices.Values(rows), parquet.Compression(codec)); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes())
	}
	f.Add([]byte("PAR1\x00\x00\x00\x00PAR1"))
	opt := Options{MaxRows: 100, MaxBytes: 1 << 20}
	f.Fuzz(func(t *testing.T, b []byte) {
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		defer func() {
			runtime.ReadMemStats(&m1)
			if m1.TotalAlloc-m0.TotalAlloc > 64<<20 {
				t.Fatalf("allocated %d MB", (m1.TotalAlloc-m0.TotalAlloc)>>20)
			}
		}()
		rows, _, err := DecodeParquet(bytes.NewReader(b), int64(len(b)), "fuzz.parquet", opt)
		if err != nil {
			if !strings.Contains(err.Error(), "fuzz.parquet") {
				t.Fatalf("error without file name: %v", err)
			}
			return
		}
		for i := range rows {
			if err := rows[i].Validate(); err != nil {
				t.Fatalf("row %d loaded but invalid: %v", i, err)
			}
		}
	})
}
