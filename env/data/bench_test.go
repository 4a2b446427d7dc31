package data

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
)

// benchRows are GSM8K-sized rows: a ~350-byte question prompt, a ground truth, four extra_info
// fields.
func benchRows(n int) []Row {
	rows := make([]Row, n)
	for i := range rows {
		q := fmt.Sprintf("Question %d: %s How many apples are left? Let's think step by step and output the final answer after \"####\".", i, strings.Repeat("Natalia sold clips to 48 of her friends in April. ", 4))
		rows[i] = Row{DataSource: "openai/gsm8k", Prompt: []Message{{Role: "user", Content: q}}, Ability: "math",
			RewardModel: RewardModel{Style: "rule", GroundTruth: fmt.Sprint(i % 997)},
			ExtraInfo:   map[string]any{"split": "train", "index": int64(i), "answer": "48 / 2 = 24 #### 72", "question": q}}
	}
	return rows
}

// BenchmarkParquetRead reads 20,000 GSM8K-sized rows (snappy, as pandas writes them) two ways
// in one run: "check" is the structure check alone (checkParquet: footer, page headers, and
// every compressed stream decoded once), "decode" the whole DecodeParquet (check included).
// The check's share is check/decode.
func BenchmarkParquetRead(b *testing.B) {
	for _, codec := range []compress.Codec{&parquet.Snappy, &parquet.Zstd} {
		var buf bytes.Buffer
		if err := encodeParquet(&buf, slices.Values(benchRows(20_000)), parquet.Compression(codec)); err != nil {
			b.Fatal(err)
		}
		file := buf.Bytes()
		opt := Options{}.withDefaults()
		b.Run(codec.String()+"/check", func(b *testing.B) {
			b.SetBytes(int64(len(file)))
			for range b.N {
				if err := checkParquet(bytes.NewReader(file), int64(len(file)), opt); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(codec.String()+"/decode", func(b *testing.B) {
			b.SetBytes(int64(len(file)))
			for range b.N {
				if _, _, err := DecodeParquet(bytes.NewReader(file), int64(len(file)), "bench.parquet", opt); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
