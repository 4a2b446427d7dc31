package tokenizer

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzRoundTrip: for any input, Encode never panics, and without a normalizer
// Decode(Encode(s)) gives back s exactly (after invalid UTF-8 is replaced); with the NFC
// normalizer the result is valid UTF-8; a DecodeStream yields the same text as Decode.
//
//	go test ./tokenizer -run '^$' -fuzz FuzzRoundTrip -fuzztime 60s
func FuzzRoundTrip(f *testing.F) {
	raw, _, err := TinyFiles()
	if err != nil {
		f.Fatal(err)
	}
	nfc, err := FromJSON(raw)
	if err != nil {
		f.Fatal(err)
	}
	var spec map[string]any
	_ = json.Unmarshal(raw, &spec)
	spec["normalizer"] = nil
	plainJSON, _ := json.Marshal(spec)
	plain, err := FromJSON(plainJSON)
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{"", "hello world", "<|im_start|>user\nhi<|im_end|>", "x\u0301\u0301", "\xff\xfe",
		"12345 '' 'S 'll", "👨‍👩‍👧 \r\n\t  ", strings.Repeat("a", 300), "<think>\u0338"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := toValidUTF8(s)
		if got := plain.Decode(plain.Encode(s, true), false); got != want {
			t.Fatalf("round trip of %q gave %q", s, got)
		}
		ids := nfc.Encode(s, true)
		full := nfc.Decode(ids, false)
		if !utf8.ValidString(full) {
			t.Fatalf("decode of %q is not valid UTF-8", s)
		}
		ds := nfc.NewDecodeStream(false)
		var sb strings.Builder
		for _, id := range ids {
			sb.WriteString(ds.Next(id))
		}
		sb.WriteString(ds.Flush())
		if sb.String() != full {
			t.Fatalf("stream %q != decode %q", sb.String(), full)
		}
	})
}
