package safetensors

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// fixtureA is a file built by hand from the format description: F32 "a" = [1, -2] and a BF16
// scalar "b" = 1.5, with the default metadata.
//
// Header (139 bytes) + 5 spaces = 144 = 0x90, a multiple of 8.
// 1.0f = 0x3F800000 → LE 00 00 80 3F; -2.0f = 0xC0000000 → 00 00 00 C0; bf16 1.5 = 0x3FC0 → C0 3F.
func fixtureA() []byte {
	var b bytes.Buffer
	b.Write([]byte{0x90, 0, 0, 0, 0, 0, 0, 0})
	b.WriteString(`{"__metadata__":{"format":"pt"},` +
		`"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},` +
		`"b":{"dtype":"BF16","shape":[],"data_offsets":[8,10]}}` + "     ")
	b.Write([]byte{0x00, 0x00, 0x80, 0x3F, 0x00, 0x00, 0x00, 0xC0, 0xC0, 0x3F})
	return b.Bytes()
}

func TestWriterMatchesHandBuiltFixture(t *testing.T) {
	w := NewWriter()
	// Added out of order: the writer sorts.
	must(t, w.Add("b", BF16, []int64{}, EncodeBF16([]float32{1.5})))
	must(t, w.Add("a", F32, []int64{2}, EncodeF32([]float32{1, -2})))
	var got bytes.Buffer
	n, err := w.WriteTo(&got)
	must(t, err)
	if want := fixtureA(); !bytes.Equal(got.Bytes(), want) || n != int64(len(want)) {
		t.Fatalf("writer output differs from the fixture:\n got %q\nwant %q", got.Bytes(), want)
	}
}

func TestReadHandBuiltFixtures(t *testing.T) {
	f := mustOpen(t, writeTemp(t, "a.safetensors", fixtureA()))
	if got := f.Names(); !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Fatalf("names %v", got)
	}
	a, _ := f.Info("a")
	if a.DType != F32 || !reflect.DeepEqual(a.Shape, []int64{2}) || a.Begin != 0 || a.End != 8 {
		t.Errorf("a = %+v", a)
	}
	ad, _ := f.Data("a")
	if xs, _ := DecodeF32(ad); !reflect.DeepEqual(xs, []float32{1, -2}) {
		t.Errorf("a data %v, want [1 -2]", xs)
	}
	bd, _ := f.Data("b")
	if xs, _ := DecodeBF16(bd); !reflect.DeepEqual(xs, []float32{1.5}) {
		t.Errorf("b data %v, want [1.5]", xs)
	}
	if m := f.Metadata(); !reflect.DeepEqual(m, map[string]string{"format": "pt"}) {
		t.Errorf("metadata %v", m)
	}

	// Fixture B, as another writer may lay it out: pretty JSON, no metadata, keys not sorted,
	// data not in name order. z: I64 [1,2] = [5, -1] at [0,16); y: U8 [3] = [7,8,9] at [16,19).
	hdr := `{ "z": {"dtype": "I64", "shape": [1, 2], "data_offsets": [0, 16]},
  "y": {"dtype": "U8", "shape": [3], "data_offsets": [16, 19]} }`
	data := []byte{5, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 7, 8, 9}
	g := mustOpen(t, writeTemp(t, "b.safetensors", image(hdr, data)))
	if got := g.Names(); !reflect.DeepEqual(got, []string{"y", "z"}) {
		t.Fatalf("names %v", got)
	}
	if g.Metadata() != nil {
		t.Errorf("metadata %v, want nil", g.Metadata())
	}
	z, _ := g.Data("z")
	if !bytes.Equal(z, data[:16]) {
		t.Errorf("z bytes %v", z)
	}
	y, _ := g.Data("y")
	if !bytes.Equal(y, []byte{7, 8, 9}) {
		t.Errorf("y bytes %v", y)
	}
	if _, err := g.Data("x"); err == nil || !strings.Contains(err.Error(), `no tensor "x"`) {
		t.Errorf("missing tensor error %v", err)
	}
}

func TestRoundTrip(t *testing.T) {
	want := map[string]struct {
		dtype DType
		shape []int64
		data  []byte
	}{
		"f32":    {F32, []int64{2, 3}, EncodeF32([]float32{1, 2, 3, 4, 5, 6})},
		"bf16":   {BF16, []int64{3}, EncodeBF16([]float32{-1, 0.5, 3})},
		"f16":    {F16, []int64{1, 1, 2}, EncodeF16([]float32{65504, -0.25})},
		"i64":    {I64, []int64{}, []byte{1, 2, 3, 4, 5, 6, 7, 8}},
		"bool":   {Bool, []int64{3}, []byte{1, 0, 1}},
		"empty":  {F32, []int64{4, 0}, nil},
		"Upper":  {U8, []int64{1}, []byte{42}},
		"a.b<c>": {I32, []int64{1}, []byte{1, 0, 0, 0}},
	}
	w := NewWriter()
	w.SetMetadata("step", "7")
	for name, e := range want {
		must(t, w.Add(name, e.dtype, e.shape, e.data))
	}
	path := filepath.Join(t.TempDir(), "rt.safetensors")
	must(t, w.WriteFile(path))

	raw, _ := os.ReadFile(path)
	if n := int(raw[0]) | int(raw[1])<<8; n%8 != 0 {
		t.Errorf("header length %d is not a multiple of 8", n)
	}
	f := mustOpen(t, path)
	if len(f.Names()) != len(want) {
		t.Fatalf("names %v", f.Names())
	}
	// The data is laid out by element size, largest first, then by name (as the reference writer
	// does), so every tensor starts at a multiple of its element size: i64 [0, 8); the 4-byte
	// "a.b<c>" [8, 12), "empty" [12, 12), "f32" [12, 36); the 2-byte "bf16" [36, 42), "f16"
	// [42, 46); the 1-byte "Upper" [46, 47), "bool" [47, 50).
	layout := []string{"i64", "a.b<c>", "empty", "f32", "bf16", "f16", "Upper", "bool"}
	var pos int64
	for _, name := range layout {
		e := want[name]
		info, err := f.Info(name)
		must(t, err)
		if info.DType != e.dtype || !reflect.DeepEqual(info.Shape, e.shape) || info.Begin != pos {
			t.Errorf("%s: info %+v, want %s %v at %d", name, info, e.dtype, e.shape, pos)
		}
		if info.Begin%int64(e.dtype.Size()) != 0 {
			t.Errorf("%s: %s data at byte %d is not aligned", name, e.dtype, info.Begin)
		}
		pos = info.End
		d, _ := f.Data(name)
		if !bytes.Equal(d, e.data) {
			t.Errorf("%s: data %v, want %v", name, d, e.data)
		}
	}
	if m := f.Metadata(); !reflect.DeepEqual(m, map[string]string{"format": "pt", "step": "7"}) {
		t.Errorf("metadata %v", m)
	}
	must(t, f.Close())
	must(t, f.Close()) // idempotent
	if _, err := f.Data("f32"); err == nil {
		t.Error("Data after Close succeeded")
	}
}

func TestWriterStreamAndAtomicity(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.safetensors")
	w := NewWriter()
	must(t, w.AddStream("s", U8, []int64{5}, func(out io.Writer) error {
		out.Write([]byte{1, 2})
		_, err := out.Write([]byte{3, 4, 5})
		return err
	}))
	must(t, w.WriteFile(path))
	f := mustOpen(t, path)
	if d, _ := f.Data("s"); !bytes.Equal(d, []byte{1, 2, 3, 4, 5}) {
		t.Errorf("streamed data %v", d)
	}
	before, _ := os.ReadFile(path)

	// A source that writes too little, one that writes too much, and one that fails must each
	// leave the existing file untouched and no temporary file behind.
	sources := map[string]func(io.Writer) error{
		"short":  func(out io.Writer) error { _, err := out.Write([]byte{1}); return err },
		"long":   func(out io.Writer) error { _, err := out.Write(make([]byte, 6)); return err },
		"failed": func(io.Writer) error { return errors.New("device lost") },
	}
	for name, src := range sources {
		w := NewWriter()
		must(t, w.AddStream("s", U8, []int64{5}, src))
		err := w.WriteFile(path)
		if err == nil || !strings.Contains(err.Error(), `tensor "s"`) {
			t.Errorf("%s: error %v, want one naming tensor s", name, err)
		}
		after, _ := os.ReadFile(path)
		if !bytes.Equal(before, after) {
			t.Errorf("%s: failed write changed the existing file", name)
		}
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("directory holds %d entries, want only m.safetensors", len(ents))
	}
}

func TestWriterRejectsBadInput(t *testing.T) {
	w := NewWriter()
	must(t, w.Add("a", F32, []int64{1}, make([]byte, 4)))
	for _, c := range []struct {
		err    error
		errHas string
	}{
		{w.Add("a", F32, []int64{1}, make([]byte, 4)), `tensor "a" added twice`},
		{w.Add("b", F32, []int64{2}, make([]byte, 4)), "needs 8 bytes, got 4"},
		{w.Add("c", "F12", []int64{1}, make([]byte, 4)), `unknown dtype "F12"`},
		{w.Add("d", F32, []int64{-1}, nil), "negative"},
		{w.Add("__metadata__", U8, []int64{0}, nil), "reserved"},
		{w.AddStream("e", U8, []int64{1}, nil), "nil source"},
		{w.Add("bad\xff", U8, []int64{0}, nil), "not valid UTF-8"},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), c.errHas) {
			t.Errorf("error %v, want %q", c.err, c.errHas)
		}
	}
	w.SetMetadata("k", "\xfe")
	if _, err := w.WriteTo(io.Discard); err == nil || !strings.Contains(err.Error(), "not valid UTF-8") {
		t.Errorf("invalid metadata: error %v", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A file that another process truncates while it is open gives an error naming the file and the
// tensor, never a SIGBUS: with the file mapped, reading the lost pages killed the process.
func TestTruncatedWhileOpen(t *testing.T) {
	w := NewWriter()
	big := make([]byte, 1<<20) // many pages, so that the lost half lies on pages of its own
	for i := range big {
		big[i] = byte(i)
	}
	must(t, w.Add("a", U8, []int64{16}, big[:16]))
	must(t, w.Add("z", U8, []int64{int64(len(big))}, big))
	path := filepath.Join(t.TempDir(), "t.safetensors")
	must(t, w.WriteFile(path))
	f := mustOpen(t, path)
	st, err := os.Stat(path)
	must(t, err)
	must(t, os.Truncate(path, st.Size()-int64(len(big))/2)) // z (last) loses its second half

	got, err := f.Data("z")
	sum := 0
	for _, b := range got { // touching the lost pages is what crashed
		sum += int(b)
	}
	if err == nil || got != nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), `"z"`) ||
		!strings.Contains(err.Error(), "truncated") {
		t.Fatalf("reading a tensor past the new end: %d bytes (sum %d), err %v", len(got), sum, err)
	}
	// A tensor still inside the file reads as before.
	if a, err := f.Data("a"); err != nil || !bytes.Equal(a, big[:16]) {
		t.Errorf("a: %v %v, want %v", a, err, big[:16])
	}
}
