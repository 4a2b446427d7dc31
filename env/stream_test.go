package env

import (
	"iter"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"

	"github.com/mtgrpo/mtgrpo/env/data"
)

// GenerateSeq makes the rows Generate makes, one at a time, again on each range; a count beyond
// MaxGenerate is refused.
func TestGenerateSeq(t *testing.T) {
	for _, task := range GeneratorNames() {
		want, err := Generate(task, Config{}, 5, 7)
		if err != nil {
			t.Fatal(err)
		}
		seq, err := GenerateSeq(task, Config{}, 5, 7)
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			var got []data.Row
			for r := range seq {
				got = append(got, r)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s: the stream's rows differ from Generate's", task)
			}
		}
	}
	if _, err := GenerateSeq("countdown", Config{}, MaxGenerate+1, 1); err == nil {
		t.Errorf("%d tasks accepted", MaxGenerate+1)
	}
}

// Writing generated rows holds none of them: over 20,000 GSM8K rows (some 30 MB as Go values)
// the live heap, sampled after a collection every 2,000 rows, grows by less than 4 MB (parquet's
// bound, a row group at a time, is env/data's TestParquetWriteBounded).
func TestGeneratedRowsStream(t *testing.T) {
	{
		ext := "jsonl"
		var base, peak uint64
		live := func() uint64 {
			var m runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&m)
			return m.HeapAlloc
		}
		base = live()
		seq, err := GenerateSeq("gsm8k", Config{}, 20_000, 1)
		if err != nil {
			t.Fatal(err)
		}
		sampled := func(yield func(data.Row) bool) {
			i := 0
			for r := range seq {
				if i%2000 == 0 {
					peak = max(peak, live())
				}
				i++
				if !yield(r) {
					return
				}
			}
		}
		path := filepath.Join(t.TempDir(), "rows."+ext)
		if err := data.WriteSeq(path, iter.Seq[data.Row](sampled)); err != nil {
			t.Fatal(err)
		}
		if grew := int64(peak) - int64(base); grew > 4<<20 {
			t.Errorf("%s: the live heap grew by %d MB while writing", ext, grew>>20)
		}
		fi, _ := os.Stat(path)
		t.Logf("%s: %d bytes, heap growth at most %d KB", ext, fi.Size(), (int64(peak)-int64(base))>>10)
	}
}
