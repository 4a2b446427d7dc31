package data

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
	"github.com/pierrec/lz4/v4"
)

// pageChecker walks the pages of column chunks (see checkParquet), reusing its buffers.
type pageChecker struct {
	r       io.ReaderAt
	budget  int64 // decompressed bytes the file may still hold (Options.MaxBytes)
	pageMax int64 // decompressed bytes of one page
	hdr     []byte
	src     []byte // a compressed page
	out     []byte // a decompressed page
	zstd    *zstd.Decoder
}

// maxHeaderAlloc bounds what decoding one page header may allocate (it has no lists).
const maxHeaderAlloc = 1 << 20

func newPageChecker(r io.ReaderAt, opt Options) *pageChecker {
	return &pageChecker{r: r, budget: opt.MaxBytes, pageMax: min(maxPageBytes, opt.MaxBytes)}
}

func (pc *pageChecker) close() {
	if pc.zstd != nil {
		pc.zstd.Close()
	}
}

// chunk checks the pages of one column chunk.
func (pc *pageChecker) chunk(m *format.ColumnMetaData) error {
	pos := chunkStart(m)
	end := pos + m.TotalCompressedSize
	var values int64
	for pos < end {
		h, n, err := pc.header(pos, end)
		if err != nil {
			return fmt.Errorf("page at byte %d: header: %w", pos, err)
		}
		body := pos + int64(n)
		nv, err := pc.page(m.Codec, h, body, end)
		if err != nil {
			return fmt.Errorf("page at byte %d: %w", pos, err)
		}
		if values += nv; values > m.NumValues {
			return fmt.Errorf("the pages hold more values than the %d the metadata states", m.NumValues)
		}
		pos = body + int64(h.CompressedPageSize)
	}
	return nil
}

// header reads and checks the page header at pos, reading more of the chunk while the header
// is longer than what was read.
func (pc *pageChecker) header(pos, end int64) (*format.PageHeader, int, error) {
	for win := int64(256); ; win *= 8 {
		win = min(win, end-pos)
		pc.hdr = grow(pc.hdr, win)
		if _, err := pc.r.ReadAt(pc.hdr, pos); err != nil {
			return nil, 0, err
		}
		n, err := walkThrift(pc.hdr, maxHeaderAlloc)
		if errors.Is(err, errShort) {
			if win < end-pos {
				continue
			}
			return nil, 0, fmt.Errorf("runs past the end of the column chunk")
		}
		if err != nil {
			return nil, 0, err
		}
		h := new(format.PageHeader)
		if err := thrift.Unmarshal(new(thrift.CompactProtocol), pc.hdr[:n], h); err != nil {
			return nil, 0, err
		}
		return h, n, nil
	}
}

// page checks one page's sizes and counts, and its compressed stream, and returns the number of
// values it adds to the chunk (0 for a dictionary page).
func (pc *pageChecker) page(codec format.CompressionCodec, h *format.PageHeader, body, end int64) (int64, error) {
	comp, unc := int64(h.CompressedPageSize), int64(h.UncompressedPageSize)
	switch {
	case comp < 0 || comp > end-body:
		return 0, fmt.Errorf("compressed size %d, with %d bytes left in the column chunk", comp, end-body)
	case unc < 0 || unc > pc.pageMax:
		return 0, fmt.Errorf("decompressed size %d (the limit is %d)", unc, pc.pageMax)
	}
	if pc.budget -= unc; pc.budget < 0 {
		return 0, fmt.Errorf("%w: the pages decompress to more than the limit", ErrTooLarge)
	}
	var values, levels int64 // levels: bytes stored uncompressed ahead of the values (v2)
	compressed := codec != format.Uncompressed
	switch h.Type {
	case format.DataPage:
		if !h.DataPageHeader.Valid {
			return 0, fmt.Errorf("data page without its header")
		}
		values = int64(h.DataPageHeader.V.NumValues)
	case format.DataPageV2:
		v := &h.DataPageHeaderV2.V
		if !h.DataPageHeaderV2.Valid || v.NumNulls < 0 || v.NumNulls > v.NumValues || v.NumRows < 0 || v.NumRows > v.NumValues ||
			v.RepetitionLevelsByteLength < 0 || v.DefinitionLevelsByteLength < 0 {
			return 0, fmt.Errorf("data page v2 with a bad header %+v", *v)
		}
		values = int64(v.NumValues)
		levels = int64(v.RepetitionLevelsByteLength) + int64(v.DefinitionLevelsByteLength)
		if levels > comp || levels > unc {
			return 0, fmt.Errorf("levels of %d bytes in a page of %d", levels, min(comp, unc))
		}
		compressed = compressed && (!v.IsCompressed.Valid || v.IsCompressed.V)
	case format.DictionaryPage:
		n := int64(h.DictionaryPageHeader.V.NumValues)
		if !h.DictionaryPageHeader.Valid || n < 0 || n > maxPageValues || n > 8*unc+8 { // a value takes a bit at least
			return 0, fmt.Errorf("dictionary page of %d values in %d bytes", n, unc)
		}
	}
	if values < 0 || values > maxPageValues {
		return 0, fmt.Errorf("%d values (the limit is %d)", values, maxPageValues)
	}
	if compressed && comp > levels {
		if err := pc.stream(codec, body+levels, comp-levels, unc-levels); err != nil {
			return 0, fmt.Errorf("%v stream: %w", codec, err)
		}
	}
	return values, nil
}

// stream checks that the n compressed bytes at off decode to at most bound bytes, so that the
// library, which sizes its output by the page header and then trusts the stream (a snappy
// length, a zstd frame size, gzip and brotli until their end, LZ4 by doubling until the block
// fits), allocates no more than the header states.
func (pc *pageChecker) stream(codec format.CompressionCodec, off, n, bound int64) error {
	if n > pc.pageMax+pc.pageMax/4 { // incompressible data grows a little when compressed
		return fmt.Errorf("%d compressed bytes (the limit is %d)", n, pc.pageMax)
	}
	pc.src = grow(pc.src, n)
	if _, err := pc.r.ReadAt(pc.src, off); err != nil {
		return err
	}
	tooLong := fmt.Errorf("decodes to more than the %d bytes the page states", bound)
	switch codec {
	case format.Snappy:
		d, err := snappy.DecodedLen(pc.src)
		if err != nil {
			return err
		}
		if int64(d) > bound {
			return tooLong
		}
	case format.Lz4Raw:
		pc.out = grow(pc.out, bound)
		if _, err := lz4.UncompressBlock(pc.src, pc.out); err != nil {
			return fmt.Errorf("corrupt, or %w", tooLong)
		}
	case format.Zstd:
		if pc.zstd == nil {
			var err error
			if pc.zstd, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecodeAllCapLimit(true),
				zstd.WithDecoderMaxMemory(uint64(pc.pageMax))); err != nil {
				return err
			}
		}
		pc.out = grow(pc.out, bound)
		if _, err := pc.zstd.DecodeAll(pc.src, pc.out[:0]); err != nil {
			return err
		}
	case format.Gzip:
		zr, err := gzip.NewReader(bytes.NewReader(pc.src))
		if err != nil {
			return err
		}
		return drain(zr, bound, tooLong)
	case format.Brotli:
		return drain(brotli.NewReader(bytes.NewReader(pc.src)), bound, tooLong)
	}
	return nil
}

// drain reads r to its end, failing with tooLong past bound bytes.
func drain(r io.Reader, bound int64, tooLong error) error {
	n, err := io.Copy(io.Discard, io.LimitReader(r, bound+1))
	if err != nil {
		return err
	}
	if n > bound {
		return tooLong
	}
	return nil
}

// supportedCodec reports whether the parquet library decodes the codec (and stream checks it).
func supportedCodec(c format.CompressionCodec) bool {
	switch c {
	case format.Uncompressed, format.Snappy, format.Gzip, format.Brotli, format.Zstd, format.Lz4Raw:
		return true
	}
	return false
}

// grow returns b with length n, reallocating only when its capacity is short.
func grow(b []byte, n int64) []byte {
	if int64(cap(b)) < n {
		return make([]byte, n)
	}
	return b[:n]
}
