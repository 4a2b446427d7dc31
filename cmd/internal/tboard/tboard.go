// Package tboard writes TensorBoard event files: the TFRecord framing (length, masked CRC-32C of
// the length, data, masked CRC-32C of the data) around Event protocol buffers, encoded by hand
// (the four messages used need a few fields each, not a protobuf dependency):
//
//	Event      { double wall_time = 1; int64 step = 2; string file_version = 3; Summary summary = 5;
//	             SessionLog session_log = 7; }
//	Summary    { repeated Value value = 1; }   Value { string tag = 1; float simple_value = 2; }
//	SessionLog { SessionStatus status = 1; }   (START = 1)
//
// References: tensorflow/core/util/event.proto, tensorflow/core/framework/summary.proto and
// tensorflow/core/lib/io/record_writer.cc (masked CRC: ((crc >> 15) | (crc << 17)) + 0xa282ead8).
// A file starts with an Event holding file_version "brain.Event:2", as TensorBoard expects.
package tboard

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// FileVersion is the header event's file_version.
const FileVersion = "brain.Event:2"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// MaskedCRC is TFRecord's masked CRC-32C of b.
func MaskedCRC(b []byte) uint32 {
	c := crc32.Checksum(b, castagnoli)
	return ((c >> 15) | (c << 17)) + 0xa282ead8
}

// Writer appends events to one events.out.tfevents.<seconds>.<host>.<pid> file.
type Writer struct {
	f    *os.File
	w    *bufio.Writer
	Path string
	now  func() time.Time
}

// Create starts a new event file in dir and writes its header event.
func Create(dir string) (*Writer, error) {
	host, _ := os.Hostname()
	if host == "" {
		host = "localhost"
	}
	now := time.Now()
	base := filepath.Join(dir, fmt.Sprintf("events.out.tfevents.%d.%s.%d", now.Unix(), host, os.Getpid()))
	path := base
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	for i := 1; errors.Is(err, fs.ErrExist) && i < 100; i++ { // a second file in the same second
		path = fmt.Sprintf("%s.%d", base, i)
		f, err = os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	}
	if err != nil {
		return nil, fmt.Errorf("tensorboard: %w", err)
	}
	w := &Writer{f: f, w: bufio.NewWriter(f), Path: path, now: time.Now}
	var ev []byte
	ev = appendDouble(ev, 1, w.wallTime())
	ev = appendBytes(ev, 3, []byte(FileVersion))
	if err := w.record(ev); err != nil {
		f.Close()
		return nil, err
	}
	return w, w.Flush()
}

func (w *Writer) wallTime() float64 { return float64(w.now().UnixMicro()) / 1e6 }

// Scalars writes one event at step holding a simple_value per tag (tags sorted; non-finite values
// are written as they are: TensorBoard shows NaN and Inf), and flushes it to the file.
func (w *Writer) Scalars(step int64, values map[string]float64) error {
	tags := make([]string, 0, len(values))
	for t := range values {
		tags = append(tags, t)
	}
	sort.Strings(tags)
	var summary []byte
	for _, t := range tags {
		var v []byte
		v = appendBytes(v, 1, []byte(t))
		v = appendFloat(v, 2, float32(values[t]))
		summary = appendBytes(summary, 1, v)
	}
	var ev []byte
	ev = appendDouble(ev, 1, w.wallTime())
	ev = appendVarintField(ev, 2, uint64(step))
	ev = appendBytes(ev, 5, summary)
	if err := w.record(ev); err != nil {
		return err
	}
	return w.Flush()
}

// Restart writes a SessionLog START event at step: TensorBoard then drops the events written
// before it with a larger step (what a run resumed from that step's checkpoint writes again).
func (w *Writer) Restart(step int64) error {
	var ev []byte
	ev = appendDouble(ev, 1, w.wallTime())
	ev = appendVarintField(ev, 2, uint64(step))
	ev = appendBytes(ev, 7, appendVarintField(nil, 1, 1))
	if err := w.record(ev); err != nil {
		return err
	}
	return w.Flush()
}

// record writes one TFRecord: uint64 length, masked CRC of the length bytes, data, masked CRC of
// the data; all little-endian.
func (w *Writer) record(data []byte) error {
	var hdr [12]byte
	binary.LittleEndian.PutUint64(hdr[:8], uint64(len(data)))
	binary.LittleEndian.PutUint32(hdr[8:], MaskedCRC(hdr[:8]))
	var tail [4]byte
	binary.LittleEndian.PutUint32(tail[:], MaskedCRC(data))
	for _, b := range [][]byte{hdr[:], data, tail[:]} {
		if _, err := w.w.Write(b); err != nil {
			return fmt.Errorf("tensorboard: %s: %w", w.Path, err)
		}
	}
	return nil
}

// Flush pushes buffered events to the file (TensorBoard reads it while the run goes on).
func (w *Writer) Flush() error {
	if err := w.w.Flush(); err != nil {
		return fmt.Errorf("tensorboard: %s: %w", w.Path, err)
	}
	return nil
}

// Close flushes, syncs and closes the file.
func (w *Writer) Close() error {
	err := w.Flush()
	if serr := w.f.Sync(); err == nil && serr != nil {
		err = serr
	}
	if cerr := w.f.Close(); err == nil && cerr != nil {
		err = cerr
	}
	return err
}

// Protocol buffer wire format: a key is (field << 3 | wire type); 0 varint, 1 fixed64,
// 2 length-delimited, 5 fixed32.

func appendVarint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

func appendVarintField(b []byte, field int, v uint64) []byte {
	return appendVarint(appendVarint(b, uint64(field)<<3|0), v)
}

func appendDouble(b []byte, field int, v float64) []byte {
	b = appendVarint(b, uint64(field)<<3|1)
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
}

func appendFloat(b []byte, field int, v float32) []byte {
	b = appendVarint(b, uint64(field)<<3|5)
	return binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
}

func appendBytes(b []byte, field int, v []byte) []byte {
	b = appendVarint(b, uint64(field)<<3|2)
	b = appendVarint(b, uint64(len(v)))
	return append(b, v...)
}
