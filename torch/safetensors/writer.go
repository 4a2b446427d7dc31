package safetensors

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"unicode/utf8"
)

// Writer collects tensors and writes them as one safetensors file (WriteFile, WriteTo) or as a
// sharded checkpoint directory (WriteDir). Tensor bytes are either given up front (Add) or
// produced while the file is written (AddStream), so a large model can be saved without holding a
// second copy of every weight in memory.
type Writer struct {
	entries  map[string]*entry
	metadata map[string]string
}

type entry struct {
	name  string
	dtype DType
	shape []int64
	size  int64
	data  []byte
	src   func(io.Writer) error
}

// NewWriter returns an empty Writer.
func NewWriter() *Writer {
	return &Writer{entries: map[string]*entry{}, metadata: map[string]string{}}
}

// SetMetadata records a __metadata__ entry. "format" is always "pt" unless set here.
func (w *Writer) SetMetadata(key, value string) { w.metadata[key] = value }

// Add records a tensor whose little-endian bytes are data (not copied: keep it unchanged until
// the write is done).
func (w *Writer) Add(name string, dtype DType, shape []int64, data []byte) error {
	e, err := w.newEntry(name, dtype, shape)
	if err != nil {
		return err
	}
	if int64(len(data)) != e.size {
		return fmt.Errorf("safetensors: tensor %q: %s %v needs %d bytes, got %d", name, dtype, shape, e.size, len(data))
	}
	e.data = data
	w.entries[name] = e
	return nil
}

// AddStream records a tensor whose bytes src writes when the file is written; src must write
// exactly numel*itemsize bytes. It is called once per write, in data order (see writeSubset).
func (w *Writer) AddStream(name string, dtype DType, shape []int64, src func(io.Writer) error) error {
	e, err := w.newEntry(name, dtype, shape)
	if err != nil {
		return err
	}
	if src == nil {
		return fmt.Errorf("safetensors: tensor %q: nil source", name)
	}
	e.src = src
	w.entries[name] = e
	return nil
}

func (w *Writer) newEntry(name string, dtype DType, shape []int64) (*entry, error) {
	if name == metadataKey {
		return nil, fmt.Errorf("safetensors: %q is reserved and cannot name a tensor", name)
	}
	if _, dup := w.entries[name]; dup {
		return nil, fmt.Errorf("safetensors: tensor %q added twice", name)
	}
	if !utf8.ValidString(name) {
		// encoding/json would silently replace the bad bytes, saving the tensor under another name.
		return nil, fmt.Errorf("safetensors: tensor name %q is not valid UTF-8", name)
	}
	size, err := byteSize(dtype, shape)
	if err != nil {
		return nil, fmt.Errorf("safetensors: tensor %q: %w", name, err)
	}
	// A scalar's shape must be written as [], not null: keep a non-nil slice.
	return &entry{name: name, dtype: dtype, shape: append(make([]int64, 0, len(shape)), shape...), size: size}, nil
}

// Names lists the recorded tensors in sorted order.
func (w *Writer) Names() []string {
	names := make([]string, 0, len(w.entries))
	for n := range w.entries {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// WriteFile writes all tensors to path atomically: into a temporary file in the same directory,
// synced, then renamed over path.
func (w *Writer) WriteFile(path string) error {
	return writeAtomic(path, func(out io.Writer) error {
		_, err := w.writeSubset(out, w.Names())
		return err
	})
}

// WriteTo writes the file image to out (io.WriterTo).
func (w *Writer) WriteTo(out io.Writer) (int64, error) {
	return w.writeSubset(out, w.Names())
}

// writeSubset writes a file holding the named tensors and returns the bytes written. The data
// buffer holds them by element size, largest first, then by name, as the reference writer orders
// them: every tensor then starts at a multiple of its element size (the buffer itself starts at a
// multiple of 8), so readers that view the mapping in place get aligned tensors.
func (w *Writer) writeSubset(out io.Writer, names []string) (int64, error) {
	names = append([]string(nil), names...)
	sort.Slice(names, func(i, j int) bool {
		a, b := w.entries[names[i]], w.entries[names[j]]
		if sa, sb := a.dtype.Size(), b.dtype.Size(); sa != sb {
			return sa > sb
		}
		return names[i] < names[j]
	})
	hdr, err := w.header(names)
	if err != nil {
		return 0, err
	}
	cw := &countWriter{w: out}
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(hdr)))
	cw.Write(n[:])
	cw.Write(hdr)
	for _, name := range names {
		if err := w.entries[name].writeData(cw); err != nil {
			return cw.n, err
		}
	}
	return cw.n, cw.err
}

// header renders the JSON header for names, whose data follows in that order: keys in byte order,
// as encoding/json sorts map keys, so "__metadata__" lands between upper- and lower-case names;
// padded with spaces so that the data buffer starts at a multiple of 8 bytes.
func (w *Writer) header(names []string) ([]byte, error) {
	meta := map[string]string{"format": "pt"}
	for k, v := range w.metadata {
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return nil, fmt.Errorf("safetensors: metadata %q: %q is not valid UTF-8", k, v)
		}
		meta[k] = v
	}
	type info struct {
		DType       DType    `json:"dtype"`
		Shape       []int64  `json:"shape"`
		DataOffsets [2]int64 `json:"data_offsets"`
	}
	all := map[string]any{metadataKey: meta}
	var off int64
	for _, name := range names {
		e := w.entries[name]
		all[name] = info{e.dtype, e.shape, [2]int64{off, off + e.size}}
		off += e.size
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(all); err != nil {
		return nil, fmt.Errorf("safetensors: encoding the header: %w", err)
	}
	hdr := bytes.TrimRight(buf.Bytes(), "\n")
	for len(hdr)%8 != 0 {
		hdr = append(hdr, ' ')
	}
	return hdr, nil
}

func (e *entry) writeData(out io.Writer) error {
	if e.src == nil {
		_, err := out.Write(e.data)
		return err
	}
	lw := &limitWriter{w: out, left: e.size}
	if err := e.src(lw); err != nil {
		return fmt.Errorf("safetensors: tensor %q: %w", e.name, err)
	}
	if lw.over || lw.left != 0 {
		return fmt.Errorf("safetensors: tensor %q: source wrote %d bytes, want %d", e.name, e.size-lw.left+lw.extra, e.size)
	}
	return lw.err
}

// writeAtomic runs write into a temporary file next to path and renames it into place.
func writeAtomic(path string, write func(io.Writer) error) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("safetensors: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	bw := bufio.NewWriterSize(tmp, 1<<20)
	if err = write(bw); err != nil {
		return fmt.Errorf("safetensors: writing %s: %w", path, err)
	}
	if err = bw.Flush(); err != nil {
		return fmt.Errorf("safetensors: writing %s: %w", path, err)
	}
	if err = tmp.Chmod(0o644); err != nil {
		return fmt.Errorf("safetensors: %w", err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("safetensors: writing %s: %w", path, err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("safetensors: writing %s: %w", path, err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("safetensors: %w", err)
	}
	// Make the rename itself durable; a failure here does not undo a complete, renamed file.
	if d, derr := os.Open(dir); derr == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// countWriter counts bytes and keeps the first error, so a sequence of writes checks once.
type countWriter struct {
	w   io.Writer
	n   int64
	err error
}

func (c *countWriter) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(p)
	c.n += int64(n)
	c.err = err
	return n, err
}

// limitWriter passes at most left bytes through and records any excess, so a stream source that
// writes the wrong amount is an error instead of a corrupt file.
type limitWriter struct {
	w     io.Writer
	left  int64
	extra int64
	over  bool
	err   error
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if int64(len(p)) > l.left {
		l.over = true
		l.extra += int64(len(p)) - l.left
		p = p[:l.left]
	}
	n, err := l.w.Write(p)
	l.left -= int64(n)
	if err != nil {
		l.err = err
		return n, err
	}
	if l.over {
		return n, fmt.Errorf("source wrote more than the tensor's size")
	}
	return n, nil
}
