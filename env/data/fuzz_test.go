package data

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzDecodeJSONL: any input either loads rows that validate, or fails with a RowError-style
// message naming the file; it never panics. With SkipInvalid it never fails on content.
func FuzzDecodeJSONL(f *testing.F) {
	f.Add([]byte(`{"data_source": "d", "prompt": [{"role": "user", "content": "hi"}], "reward_model": {"ground_truth": "1", "style": "rule"}, "extra_info": {"index": 0}}`))
	f.Add([]byte("{\"prompt\": \"x\"}\n\n{\"prompt\": 5}\n"))
	f.Add([]byte(`{"prompt": [{"role": "user", "content": "a"}], "extra_info": {"n": 1e400, "m": [1, {"x": null}]}}`))
	f.Add([]byte("\xff\xfe{"))
	f.Fuzz(func(t *testing.T, b []byte) {
		rows, _, err := DecodeJSONL(bytes.NewReader(b), "fuzz.jsonl", Options{})
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.jsonl") {
				t.Fatalf("error without file name: %v", err)
			}
			return
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
			t.Fatalf("SkipInvalid failed: %v", err)
		}
	})
}
