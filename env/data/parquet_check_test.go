package data

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// footerAt returns where the footer of a parquet file starts.
func footerAt(b []byte) int { return len(b) - 8 - int(binary.LittleEndian.Uint32(b[len(b)-8:])) }

// decodeBounded decodes b and reports the error, and fails the test when decoding allocated
// over maxAlloc bytes or took over 2 s.
func decodeBounded(t *testing.T, b []byte, opt Options, maxAlloc uint64) error {
	t.Helper()
	var err error
	t0 := time.Now()
	if a := allocated(func() { _, _, err = DecodeParquet(bytes.NewReader(b), int64(len(b)), "x.parquet", opt) }); a > maxAlloc {
		t.Errorf("allocated %d bytes", a)
	}
	if d := time.Since(t0); d > 2*time.Second {
		t.Errorf("took %v", d)
	}
	return err
}

// Five changed footer bytes: the schema list's header "fc 11 48 06 73" (17 elements) becomes
// "fc ff ff ff 7f", a list of 2^28−1 elements. The library allocated them before reading one:
// 2^28 × 96 bytes (format.SchemaElement) = 24 GiB, a fatal out-of-memory. Now the footer check
// refuses it: 2^28 elements cannot fit in the footer's bytes.
func TestParquetFooterListLength(t *testing.T) {
	var buf bytes.Buffer
	if err := EncodeParquet(&buf, sampleRows()); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	f := footerAt(b)
	// FileMetaData: field 1 (version, i32: 0x15 and a varint), field 2 (schema, list: 0x19).
	if b[f] != 0x15 || b[f+2] != 0x19 || b[f+3] != 0xfc {
		t.Fatalf("footer starts % x", b[f:f+8])
	}
	copy(b[f+3:], []byte{0xfc, 0xff, 0xff, 0xff, 0x7f})
	err := decodeBounded(t, b, Options{}, 1<<20)
	want := "x.parquet: not a parquet file: footer: list of 268435455 elements at byte 8, with "
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("got %v\nwant %s...", err, want)
	}
}

// A footer of structs nested 1000 deep is refused at the nesting bound (the library's decoder
// recurses once per level).
func TestParquetFooterNesting(t *testing.T) {
	footer := append(bytes.Repeat([]byte{0x1c}, 1000), bytes.Repeat([]byte{0}, 1001)...) // field 1: struct
	b := append([]byte("PAR1"), footer...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(footer)))
	b = append(b, "PAR1"...)
	err := decodeBounded(t, b, Options{}, 1<<20)
	if err == nil || err.Error() != "x.parquet: not a parquet file: footer: structs nested over 32 deep at byte 32" {
		t.Fatalf("%v", err)
	}
}

// Files over the row and byte bounds are refused before their rows are read.
func TestParquetRowAndByteBounds(t *testing.T) {
	var buf bytes.Buffer
	if err := EncodeParquet(&buf, append(sampleRows(), sampleRows()...)); err != nil {
		t.Fatal(err)
	}
	err := decodeBounded(t, buf.Bytes(), Options{MaxRows: 3}, 1<<20)
	if !errors.Is(err, ErrTooLarge) || err.Error() != "x.parquet: too large: the file states 4 rows; the limit is 3" {
		t.Errorf("rows: %v", err)
	}
	err = decodeBounded(t, buf.Bytes(), Options{MaxBytes: 100}, 1<<20)
	if !errors.Is(err, ErrTooLarge) || !strings.HasPrefix(err.Error(), "x.parquet: data: row group 0, column ") {
		t.Errorf("bytes: %v", err)
	}
	if rows, _, err := DecodeParquet(bytes.NewReader(buf.Bytes()), int64(buf.Len()), "x.parquet", Options{MaxRows: 4, MaxBytes: 10_000}); err != nil || len(rows) != 4 {
		t.Errorf("at the bounds: %d rows, %v", len(rows), err)
	}
}

// contentPage encodes one row whose prompt is content (a compressible text) with codec, and
// returns the file, the offset of the prompt content column's first page, and its header.
func contentPage(t *testing.T, codec compress.Codec, content string) ([]byte, int, *format.PageHeader) {
	t.Helper()
	var buf bytes.Buffer
	rows := []Row{{Prompt: []Message{{Role: "user", Content: content}}}}
	if err := encodeParquet(&buf, slices.Values(rows), parquet.Compression(codec)); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	pf, err := parquet.OpenFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range pf.Metadata().RowGroups[0].Columns {
		if strings.Join(c.MetaData.PathInSchema, ".") == "prompt.list.element.content" {
			off := int(chunkStart(&c.MetaData))
			n, err := walkThrift(b[off:], 1<<20)
			h := new(format.PageHeader)
			if err == nil {
				err = thrift.Unmarshal(new(thrift.CompactProtocol), b[off:off+n], h)
			}
			if err != nil {
				t.Fatal(err)
			}
			return b, off, h
		}
	}
	t.Fatal("no content column")
	return nil, 0, nil
}

// rewriteHeader writes h over the header at off; the encoding must keep its length.
func rewriteHeader(t *testing.T, b []byte, off int, h *format.PageHeader) {
	t.Helper()
	n, _ := walkThrift(b[off:], 1<<20)
	enc, err := thrift.Marshal(new(thrift.CompactProtocol), h)
	if err != nil || len(enc) != n {
		t.Fatalf("header re-encodes to %d bytes (was %d): %v", len(enc), n, err)
	}
	copy(b[off:], enc)
}

// Page headers that state more than the chunk holds or the bounds allow are refused by name.
func TestParquetPageHeaderBounds(t *testing.T) {
	content := strings.Repeat("the quick brown fox ", 200) // 4000 bytes
	cases := []struct {
		name string
		edit func(h *format.PageHeader)
		opt  Options
		want string
	}{
		{"compressed size past the chunk", func(h *format.PageHeader) { h.CompressedPageSize = 8000 }, Options{},
			"compressed size 8000, with "},
		{"more values than the chunk states", func(h *format.PageHeader) {
			h.DataPageHeaderV2.V.NumValues, h.DataPageHeaderV2.V.NumRows = 60, 60 // zigzag 120: one byte, as 1 was
		}, Options{}, "the pages hold more values than the 1 the metadata states"},
		{"rows over values", func(h *format.PageHeader) { h.DataPageHeaderV2.V.NumRows = 2 }, Options{},
			"data page v2 with a bad header"},
		{"decompressed size over the bound", func(h *format.PageHeader) {}, Options{MaxBytes: 4000},
			"decompressed size 40"},
	}
	for _, c := range cases {
		b, off, h := contentPage(t, &parquet.Uncompressed, content)
		c.edit(h)
		rewriteHeader(t, b, off, h)
		err := decodeBounded(t, b, c.opt, 1<<20)
		prefix := "x.parquet: corrupt data: row group 0, column prompt.list.element.content: page at byte "
		if c.name == "more values than the chunk states" {
			prefix = "x.parquet: corrupt data: row group 0, column prompt.list.element.content: "
		}
		if err == nil || !strings.HasPrefix(err.Error(), prefix) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

// A page whose compressed stream decodes to more than its header states is refused for every
// codec: the library sizes its buffer by the header, then trusts the stream.
func TestParquetStreamLongerThanStated(t *testing.T) {
	content := strings.Repeat("the quick brown fox ", 200)
	for _, codec := range []compress.Codec{&parquet.Snappy, &parquet.Gzip, &parquet.Zstd, &parquet.Lz4Raw, &parquet.Brotli} {
		b, off, h := contentPage(t, codec, content)
		h.UncompressedPageSize -= 100 // still a 2-byte varint: the header keeps its length
		rewriteHeader(t, b, off, h)
		err := decodeBounded(t, b, Options{}, 1<<20)
		if err == nil || !strings.Contains(err.Error(), "prompt.list.element.content: page at byte ") ||
			!strings.Contains(err.Error(), codec.CompressionCodec().String()+" stream: ") {
			t.Errorf("%v: %v", codec, err)
		}
	}
}

// checkStream runs pageChecker.stream over src.
func checkStream(codec format.CompressionCodec, src []byte, bound int64) error {
	pc := newPageChecker(bytes.NewReader(src), Options{}.withDefaults())
	defer pc.close()
	return pc.stream(codec, 0, int64(len(src)), bound)
}

// Streams that state or produce far more than the page allows fail without allocating it: a
// zstd frame stating 32 GiB (the library allocated the stated size), a gzip stream of 64 MiB
// of zeros (read to its end), a corrupt LZ4 block (the library doubled its buffer until memory
// ran out), a snappy stream stating twice the page.
func TestParquetStreamBombs(t *testing.T) {
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(make([]byte, 64<<20))
	zw.Close()
	// zstd frame: magic, descriptor 0xc0 (8-byte content size), window descriptor 0 (1 KiB),
	// the content size, and one empty raw block that is the last.
	frame := binary.LittleEndian.AppendUint32(nil, 0xfd2fb528)
	frame = binary.LittleEndian.AppendUint64(append(frame, 0xc0, 0x00), 32<<30)
	frame = append(frame, 0x01, 0x00, 0x00)
	cases := []struct {
		codec format.CompressionCodec
		src   []byte
		want  string
	}{
		{format.Zstd, frame, "decompressed size exceeds configured limit"},
		{format.Gzip, gz.Bytes(), "decodes to more than the 1000 bytes the page states"},
		{format.Lz4Raw, []byte{0xf0, 0xff, 0xff, 0xff, 0x0f, 1, 2, 3}, "corrupt, or decodes to more than"},
		{format.Snappy, append(binary.AppendUvarint(nil, 2000), 0), "decodes to more than the 1000 bytes the page states"},
	}
	for _, c := range cases {
		var err error
		if a := allocated(func() { err = checkStream(c.codec, c.src, 1000) }); a > 2<<20 {
			t.Errorf("%v: allocated %d bytes", c.codec, a)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v", c.codec, err)
		}
	}
}

// rewriteFooter decodes the footer of b, edits it and returns the file with the new footer.
func rewriteFooter(t *testing.T, b []byte, edit func(md *format.FileMetaData)) []byte {
	t.Helper()
	f := footerAt(b)
	var md format.FileMetaData
	if err := thrift.Unmarshal(new(thrift.CompactProtocol), b[f:len(b)-8], &md); err != nil {
		t.Fatal(err)
	}
	edit(&md)
	footer, err := thrift.Marshal(new(thrift.CompactProtocol), &md)
	if err != nil {
		t.Fatal(err)
	}
	out := append(append([]byte{}, b[:f]...), footer...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(footer)))
	return append(out, "PAR1"...)
}

// Footer metadata that contradicts itself or the file is refused by name, before the library
// reads a page; the page index and bloom filters, which DecodeParquet does not use, are not read
// at all (a column index length of 1 GiB was allocated when the reader opened the file a second
// time with the library's defaults).
func TestParquetFooterMetadata(t *testing.T) {
	var buf bytes.Buffer
	if err := EncodeParquet(&buf, sampleRows()); err != nil {
		t.Fatal(err)
	}
	each := func(f func(c *format.ColumnChunk)) func(md *format.FileMetaData) {
		return func(md *format.FileMetaData) {
			for i := range md.RowGroups[0].Columns {
				f(&md.RowGroups[0].Columns[i])
			}
		}
	}
	// sampleRows' schema has 17 elements: the root; ability; data_source; extra_info and its 5
	// fields; prompt, list, element, content, role; reward_model, ground_truth, style. 11 are
	// leaves (columns); reward_model, element 14, is the root's last child.
	cases := []struct {
		name string
		edit func(md *format.FileMetaData)
		want string // "" = reads
	}{
		{"page index of 1 GiB", each(func(c *format.ColumnChunk) { c.ColumnIndexOffset, c.ColumnIndexLength = 4, 1<<30 }), ""},
		{"bloom filter far away", each(func(c *format.ColumnChunk) { c.MetaData.BloomFilterOffset = 1 << 40 }), ""},
		{"row group rows over the file's", func(md *format.FileMetaData) { md.RowGroups[0].NumRows = 3 },
			"corrupt metadata: row group 0 states 3 rows, beyond the file's 2"},
		{"rows missing", func(md *format.FileMetaData) { md.NumRows = 5 },
			"corrupt metadata: the row groups hold 2 rows; the file states 5"},
		{"a column chunk missing", func(md *format.FileMetaData) { md.RowGroups[0].Columns = md.RowGroups[0].Columns[1:] },
			"corrupt metadata: row group 0 has 10 columns; the schema has 11"},
		{"chunk past the data", each(func(c *format.ColumnChunk) { c.MetaData.TotalCompressedSize = 1 << 20 }),
			"corrupt metadata: row group 0, column 0: bytes "},
		{"values over the bound", each(func(c *format.ColumnChunk) { c.MetaData.NumValues = 1 << 40 }),
			"corrupt metadata: row group 0, column 0: 1099511627776 values for 2 rows (at most 256 per row)"},
		{"unsupported codec", each(func(c *format.ColumnChunk) { c.MetaData.Codec = format.LZO }),
			"corrupt metadata: row group 0, column 0: compression codec LZO is not supported"},
		{"data in another file", each(func(c *format.ColumnChunk) { c.FilePath = "other.parquet" }),
			"corrupt metadata: row group 0, column 0: its data is in another file (\"other.parquet\"), which is not supported"},
		{"children counts over the schema", func(md *format.FileMetaData) { md.Schema[0].NumChildren.V += 1 },
			"corrupt schema: 17 elements, fewer than the children counts state"},
		{"an element outside the root", func(md *format.FileMetaData) { md.Schema[0].NumChildren.V -= 1 },
			"corrupt schema: element 14 (\"reward_model\") is outside the root's children"},
	}
	for _, c := range cases {
		b := rewriteFooter(t, append([]byte{}, buf.Bytes()...), c.edit)
		err := decodeBounded(t, b, Options{}, 4<<20)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.HasPrefix(err.Error(), "x.parquet: "+c.want)):
			t.Errorf("%s: got %v\nwant x.parquet: %s", c.name, err, c.want)
		}
	}
}
