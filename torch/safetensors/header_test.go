package safetensors

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
)

// Every check of the reader, each on a hand-built file that breaks exactly that rule.
func TestOpenRejectsMalformed(t *testing.T) {
	entry := func(b, e int) string { return fmt.Sprintf(`{"dtype":"F32","shape":[2],"data_offsets":[%d,%d]}`, b, e) }
	cases := []struct {
		name   string
		file   []byte
		errHas []string
	}{
		{"shorter than length prefix", []byte{1, 2, 3}, []string{"3 bytes, shorter than"}},
		{"N larger than file", lenPrefix(1000, 20), []string{"header length 1000 is larger than the 20 bytes"}},
		{"header too big", lenPrefix(MaxHeaderSize+1, 16), []string{"exceeds the 104857600-byte limit"}},
		{"bad JSON", image(`{"a": `, nil), []string{"invalid JSON"}},
		{"not an object", image(`[1, 2]`, nil), []string{"invalid JSON: want '{'"}},
		{"garbage after object", image(`{} x`, nil), []string{"after the JSON object"}},
		{"invalid UTF-8", image("{\"\xff\": 1}", nil), []string{"not valid UTF-8"}},
		{"duplicate name", image(`{"a":`+entry(0, 8)+`,"a":`+entry(8, 16)+`}`, make([]byte, 16)),
			[]string{`duplicate entry "a"`}},
		{"unknown dtype", image(`{"w":{"dtype":"F12","shape":[1],"data_offsets":[0,4]}}`, make([]byte, 4)),
			[]string{`tensor "w"`, `unknown dtype "F12"`}},
		// F32 [3] is 3*4 = 12 bytes, the offsets span 8.
		{"shape/size mismatch", image(`{"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}`, make([]byte, 8)),
			[]string{`tensor "w"`, "needs 12 bytes", "span 8"}},
		{"negative dimension", image(`{"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,0]}}`, nil),
			[]string{`tensor "w"`, "dimension 0 must be a non-negative integer"}},
		{"fractional dimension", image(`{"w":{"dtype":"U8","shape":[1.5],"data_offsets":[0,1]}}`, []byte{0}),
			[]string{`tensor "w"`, "non-negative integer"}},
		// 2^62 * 4 elements * 4 bytes overflows int64.
		{"size overflow", image(`{"w":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,0]}}`, nil),
			[]string{`tensor "w"`, "overflows"}},
		{"end before begin", image(`{"w":{"dtype":"U8","shape":[0],"data_offsets":[4,0]}}`, nil),
			[]string{`tensor "w"`, "end must be an integer >= begin"}},
		{"missing dtype", image(`{"w":{"shape":[0],"data_offsets":[0,0]}}`, nil), []string{`tensor "w"`, `missing "dtype"`}},
		{"missing shape", image(`{"w":{"dtype":"U8","data_offsets":[0,0]}}`, nil), []string{`missing "shape"`}},
		{"three offsets", image(`{"w":{"dtype":"U8","shape":[0],"data_offsets":[0,0,0]}}`, nil),
			[]string{`"data_offsets" must be [begin, end]`}},
		{"entry not an object", image(`{"w":7}`, nil), []string{`tensor "w"`, "invalid entry"}},
		// a ends at 8, the data buffer holds 6 bytes.
		{"truncated data", image(`{"a":`+entry(0, 8)+`}`, make([]byte, 6)),
			[]string{`tensor "a"`, "ends at byte 8 but the data buffer has 6 bytes"}},
		{"trailing bytes", image(`{"a":`+entry(0, 8)+`}`, make([]byte, 9)), []string{"has 9 bytes but the tensors cover only 8"}},
		// b starts at 4, inside a's [0, 8).
		{"overlap", image(`{"a":`+entry(0, 8)+`,"b":`+entry(4, 12)+`}`, make([]byte, 12)),
			[]string{`tensor "b"`, `overlap tensor "a"`}},
		{"gap", image(`{"a":`+entry(0, 8)+`,"b":`+entry(12, 20)+`}`, make([]byte, 20)),
			[]string{`tensor "b"`, "gap at bytes [8, 12)"}},
		{"gap at start", image(`{"a":`+entry(4, 12)+`}`, make([]byte, 12)), []string{"gap at bytes [0, 4)"}},
		{"metadata value not a string", image(`{"__metadata__":{"format":1}}`, nil), []string{`key "format": value must be a string`}},
		{"metadata duplicate key", image(`{"__metadata__":{"k":"1","k":"2"}}`, nil), []string{`duplicate key "k"`}},
		{"metadata twice", image(`{"__metadata__":{},"__metadata__":{}}`, nil), []string{`duplicate entry "__metadata__"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := writeTemp(t, "bad.safetensors", c.file)
			f, err := Open(path)
			if err == nil {
				f.Close()
				t.Fatalf("Open accepted a malformed file")
			}
			msg := err.Error()
			for _, want := range append(c.errHas, path) {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not mention %q", msg, want)
				}
			}
		})
	}
}

// lenPrefix is a file whose length prefix says n, followed by pad zero bytes.
func lenPrefix(n uint64, pad int) []byte {
	b := make([]byte, 8+pad)
	binary.LittleEndian.PutUint64(b, n)
	return b
}

func TestParseHeaderAcceptsEdgeCases(t *testing.T) {
	// Zero-size tensors may share an offset; a scalar has shape []; whitespace padding after the
	// object and unknown fields inside an entry are allowed; entries need not be in offset order.
	hdr := `{"z":{"dtype":"I64","shape":[],"data_offsets":[3,11],"extra":true},` +
		`"e1":{"dtype":"F32","shape":[0,5],"data_offsets":[3,3]},` +
		`"e2":{"dtype":"BF16","shape":[7,0],"data_offsets":[3,3]},` +
		`"u":{"dtype":"U8","shape":[3],"data_offsets":[0,3]}}      `
	h, err := parseHeader([]byte(hdr), 11)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(h.names, ","); got != "e1,e2,u,z" {
		t.Errorf("names %s, want sorted e1,e2,u,z", got)
	}
	if z := h.tensors["z"]; z.Numel() != 1 || z.Begin != 3 || z.End != 11 {
		t.Errorf("scalar z = %+v", z)
	}
	if h.metadata != nil {
		t.Errorf("metadata %v, want nil", h.metadata)
	}
}
