package data

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// checkParquet walks a parquet file's structure before the parquet library reads it, so that a
// corrupt or hostile file is an error instead of a crash. The library trusts the lengths and
// counts it reads: a list length in the footer, a page's compressed or uncompressed size, a
// page's value count, a compressed stream's stated size are allocated as stated (a few changed
// bytes cost tens of GiB, which recover() cannot catch), and a corrupt LZ4 block makes it double
// its buffer forever. The walk checks, in order:
//
//   - the frame: PAR1 at both ends, a footer length that fits;
//   - the footer's Thrift encoding (walkThrift: lengths against bytes, nesting, allocation);
//   - the schema tree (children counts add up, nesting at most maxSchemaDepth), the row counts
//     (at most Options.MaxRows), and every column chunk (in this file, a supported codec, its
//     byte range inside the data, at most maxValuesPerRow values per row);
//   - every page header of every chunk (Thrift again, sizes inside the chunk, at most
//     maxPageBytes decompressed and Options.MaxBytes for the file, at most maxPageValues
//     values, the chunk's values at most what its metadata states);
//   - every compressed page's stream, decoded with its stated size as the bound (checkCodec).
//
// Reading a file thus decodes its compressed pages twice; the figures are in docs/bench/env.md.
func checkParquet(r io.ReaderAt, size int64, opt Options) error {
	footer, err := readFooter(r, size)
	if err != nil {
		return fmt.Errorf("not a parquet file: %w", err)
	}
	var md format.FileMetaData
	if err := thrift.Unmarshal(new(thrift.CompactProtocol), footer, &md); err != nil {
		return fmt.Errorf("corrupt footer: %w", err)
	}
	leaves, err := checkSchema(md.Schema)
	if err != nil {
		return fmt.Errorf("corrupt schema: %w", err)
	}
	dataEnd := size - 8 - int64(len(footer))
	if err := checkRowGroups(&md, leaves, dataEnd, opt); err != nil {
		if errors.Is(err, ErrTooLarge) {
			return err
		}
		return fmt.Errorf("corrupt metadata: %w", err)
	}
	pc := newPageChecker(r, opt)
	defer pc.close()
	for g := range md.RowGroups {
		for c := range md.RowGroups[g].Columns {
			meta := &md.RowGroups[g].Columns[c].MetaData
			if err := pc.chunk(meta); err != nil {
				what := "corrupt data"
				if errors.Is(err, ErrTooLarge) {
					what = "data"
				}
				return fmt.Errorf("%s: row group %d, column %s: %w", what, g, strings.Join(meta.PathInSchema, "."), err)
			}
		}
	}
	return nil
}

// Bounds of the structure check (see checkParquet). Options.MaxRows and Options.MaxBytes bound
// the file as a whole.
const (
	maxFooterBytes  = 64 << 20  // footers of datasets are kilobytes
	maxFooterAlloc  = 256 << 20 // what decoding the footer may allocate
	maxSchemaDepth  = 16        // verl's prompt column is 4 deep
	maxValuesPerRow = 256       // values of one column per row: a prompt's messages
	maxPageBytes    = 256 << 20 // one decompressed page (writers default to 1 MiB pages)
	maxPageValues   = 1 << 24   // values in one page
)

// readFooter returns the footer's bytes once the frame (magic bytes, footer length) and the
// footer's Thrift encoding check out.
func readFooter(r io.ReaderAt, size int64) ([]byte, error) {
	const magic = "PAR1"
	if size < 12 {
		return nil, fmt.Errorf("%d bytes, too short", size)
	}
	head, tail := make([]byte, 4), make([]byte, 8)
	if _, err := r.ReadAt(head, 0); err != nil {
		return nil, err
	}
	if _, err := r.ReadAt(tail, size-8); err != nil {
		return nil, err
	}
	if string(head) != magic || string(tail[4:]) != magic {
		return nil, fmt.Errorf("no PAR1 magic at both ends")
	}
	n := int64(binary.LittleEndian.Uint32(tail))
	if n > size-12 {
		return nil, fmt.Errorf("footer length %d exceeds the file (%d bytes)", n, size)
	}
	if n > maxFooterBytes {
		return nil, fmt.Errorf("footer of %d bytes (the limit is %d)", n, maxFooterBytes)
	}
	footer := make([]byte, n)
	if _, err := r.ReadAt(footer, size-8-n); err != nil {
		return nil, err
	}
	used, err := walkThrift(footer, maxFooterAlloc)
	if errors.Is(err, errShort) {
		return nil, fmt.Errorf("footer: truncated")
	}
	if err != nil {
		return nil, fmt.Errorf("footer: %w", err)
	}
	if used != len(footer) {
		return nil, fmt.Errorf("footer: %d bytes after its end (signed footers are not supported)", len(footer)-used)
	}
	return footer, nil
}

// checkSchema checks that the depth-first list of schema elements forms one tree, as its
// children counts say, and returns the number of leaf columns.
func checkSchema(s []format.SchemaElement) (int, error) {
	if len(s) == 0 {
		return 0, fmt.Errorf("no elements")
	}
	leaves := 0
	var open []int32 // children still to come, per open group
	for i := range s {
		if i > 0 && len(open) == 0 {
			return 0, fmt.Errorf("element %d (%q) is outside the root's children", i, s[i].Name)
		}
		if s[i].Type.Valid {
			leaves++
		}
		if n := s[i].NumChildren; n.Valid && n.V > 0 {
			if open = append(open, n.V); len(open) > maxSchemaDepth {
				return 0, fmt.Errorf("element %d (%q) is nested over %d deep", i, s[i].Name, maxSchemaDepth)
			}
			continue
		}
		for len(open) > 0 { // a leaf closes the groups whose last child it is
			if open[len(open)-1]--; open[len(open)-1] > 0 {
				break
			}
			open = open[:len(open)-1]
		}
	}
	if len(open) > 0 {
		return 0, fmt.Errorf("%d elements, fewer than the children counts state", len(s))
	}
	return leaves, nil
}

// checkRowGroups checks row counts against opt.MaxRows and each column chunk's metadata.
func checkRowGroups(md *format.FileMetaData, leaves int, dataEnd int64, opt Options) error {
	if md.NumRows < 0 || md.NumRows > int64(opt.MaxRows) {
		return fmt.Errorf("%w: the file states %d rows; the limit is %d", ErrTooLarge, md.NumRows, opt.MaxRows)
	}
	var rows int64
	for g := range md.RowGroups {
		rg := &md.RowGroups[g]
		if rg.NumRows < 0 || rg.NumRows > md.NumRows-rows {
			return fmt.Errorf("row group %d states %d rows, beyond the file's %d", g, rg.NumRows, md.NumRows)
		}
		rows += rg.NumRows
		if len(rg.Columns) != leaves {
			return fmt.Errorf("row group %d has %d columns; the schema has %d", g, len(rg.Columns), leaves)
		}
		for c := range rg.Columns {
			if err := checkChunk(&rg.Columns[c], rg.NumRows, dataEnd); err != nil {
				return fmt.Errorf("row group %d, column %d: %w", g, c, err)
			}
		}
	}
	if rows != md.NumRows {
		return fmt.Errorf("the row groups hold %d rows; the file states %d", rows, md.NumRows)
	}
	return nil
}

func checkChunk(cc *format.ColumnChunk, rows, dataEnd int64) error {
	m := &cc.MetaData
	switch {
	case cc.FilePath != "":
		return fmt.Errorf("its data is in another file (%q), which is not supported", cc.FilePath)
	case !supportedCodec(m.Codec):
		return fmt.Errorf("compression codec %v is not supported", m.Codec)
	case m.NumValues < 0 || m.NumValues > maxValuesPerRow*rows:
		return fmt.Errorf("%d values for %d rows (at most %d per row)", m.NumValues, rows, maxValuesPerRow)
	}
	start := chunkStart(m)
	if start < 4 || m.TotalCompressedSize < 0 || m.TotalCompressedSize > dataEnd-start {
		return fmt.Errorf("bytes %d to %d are outside the data (bytes 4 to %d)", start, start+m.TotalCompressedSize, dataEnd)
	}
	if m.DataPageOffset < start || m.DataPageOffset >= start+max(m.TotalCompressedSize, 1) {
		return fmt.Errorf("data page offset %d is outside the chunk (bytes %d to %d)", m.DataPageOffset, start, start+m.TotalCompressedSize)
	}
	return nil
}

// chunkStart is where the library starts reading a chunk's pages: the dictionary page when the
// metadata names one, else the first data page.
func chunkStart(m *format.ColumnMetaData) int64 {
	if m.DictionaryPageOffset != 0 {
		return m.DictionaryPageOffset
	}
	return m.DataPageOffset
}
