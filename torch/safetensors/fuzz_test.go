package safetensors

import (
	"bytes"
	"reflect"
	"testing"
)

// FuzzParseHeader feeds arbitrary file images to the parser. It must never panic; whatever it
// accepts must describe tensors inside the data buffer, and writing those tensors back out and
// parsing the result must give the same tensors.
func FuzzParseHeader(f *testing.F) {
	f.Add(fixtureA())
	f.Add(image(`{"z":{"dtype":"I64","shape":[],"data_offsets":[3,11]},"u":{"dtype":"U8","shape":[3],"data_offsets":[0,3]}}`, make([]byte, 11)))
	f.Add(image(`{"e":{"dtype":"F32","shape":[0,2],"data_offsets":[0,0]},"__metadata__":{"k":"v"}}  `, nil))
	f.Add(image(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"a":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}}`, make([]byte, 16)))
	f.Add(image(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}`, make([]byte, 12)))
	f.Add(image(`{"w":{"dtype":"F12","shape":[1],"data_offsets":[0,4]}}`, make([]byte, 4)))
	f.Add(image(`{"w":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,0]}}`, nil))
	f.Add(image(`{"a": `, nil))
	f.Add(lenPrefix(1000, 20))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, file []byte) {
		h, data, err := parseFile("fuzz", file)
		if err != nil {
			return
		}
		w := NewWriter()
		for k, v := range h.metadata {
			w.SetMetadata(k, v)
		}
		for _, name := range h.names {
			info := h.tensors[name]
			if info.Begin < 0 || info.End > int64(len(data)) || info.Begin > info.End {
				t.Fatalf("tensor %q: offsets [%d, %d] outside %d data bytes", name, info.Begin, info.End, len(data))
			}
			if err := w.Add(name, info.DType, info.Shape, data[info.Begin:info.End]); err != nil {
				t.Fatalf("accepted tensor %q cannot be written: %v", name, err)
			}
		}
		var out bytes.Buffer
		if _, err := w.WriteTo(&out); err != nil {
			t.Fatal(err)
		}
		h2, data2, err := parseFile("rewritten", out.Bytes())
		if err != nil {
			t.Fatalf("rewritten file rejected: %v", err)
		}
		if !reflect.DeepEqual(h.names, h2.names) {
			t.Fatalf("names %v became %v", h.names, h2.names)
		}
		for _, name := range h.names {
			a, b := h.tensors[name], h2.tensors[name]
			if a.DType != b.DType || !reflect.DeepEqual(a.Shape, b.Shape) ||
				!bytes.Equal(data[a.Begin:a.End], data2[b.Begin:b.End]) {
				t.Fatalf("tensor %q changed in the rewrite", name)
			}
		}
	})
}
