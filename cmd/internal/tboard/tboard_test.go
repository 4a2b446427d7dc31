package tboard

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// CRC-32C of "123456789" is 0xE3069283 (the Castagnoli check value, RFC 3720 B.4). Masked:
// rotate right by 15 → 0x2507C60D, plus 0xa282ead8 → 0xC78AB0E5 (mod 2^32).
func TestMaskedCRC(t *testing.T) {
	if c := crc32.Checksum([]byte("123456789"), castagnoli); c != 0xE3069283 {
		t.Fatalf("crc32c %#x", c)
	}
	if m := MaskedCRC([]byte("123456789")); m != 0xC78AB0E5 {
		t.Errorf("masked %#x, want 0xC78AB0E5", m)
	}
}

// A written file reads back, record by record, with an independent reader: every length and data
// CRC checks out, the first event is the file_version header, scalar events carry their step,
// tags and float32 values, and Restart is a SessionLog START.
func TestWriteReadBack(t *testing.T) {
	dir := t.TempDir()
	w, err := Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	w.now = func() time.Time { return time.Unix(1700000000, 250000000) }
	if err := w.Scalars(1, map[string]float64{"critic/score/mean": 0.25, "actor/entropy": 1.5}); err != nil {
		t.Fatal(err)
	}
	if err := w.Scalars(300, map[string]float64{"critic/score/mean": math.NaN()}); err != nil {
		t.Fatal(err)
	}
	if err := w.Restart(1); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	matches, _ := filepath.Glob(filepath.Join(dir, "events.out.tfevents.*"))
	if len(matches) != 1 || matches[0] != w.Path {
		t.Fatalf("event files %v, want %s", matches, w.Path)
	}
	evs := readEvents(t, w.Path)
	if len(evs) != 4 {
		t.Fatalf("%d events, want 4", len(evs))
	}
	if evs[0].fileVersion != "brain.Event:2" || evs[0].wallTime <= 0 {
		t.Errorf("header %+v", evs[0])
	}
	if e := evs[1]; e.step != 1 || e.wallTime != 1700000000.25 || len(e.values) != 2 ||
		e.values["actor/entropy"] != 1.5 || e.values["critic/score/mean"] != 0.25 {
		t.Errorf("step 1 event %+v", e)
	}
	if e := evs[2]; e.step != 300 || !math.IsNaN(float64(e.values["critic/score/mean"])) {
		t.Errorf("step 300 event %+v", e)
	}
	if e := evs[3]; e.step != 1 || e.sessionStatus != 1 {
		t.Errorf("restart event %+v", e)
	}
}

// A flipped bit in a record's data fails its CRC in the reader: the check is real.
func TestCorruptionDetected(t *testing.T) {
	dir := t.TempDir()
	w, err := Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	w.Scalars(5, map[string]float64{"x": 1})
	w.Close()
	b, _ := os.ReadFile(w.Path)
	b[len(b)-8] ^= 0x10 // inside the last record's data
	if _, err := parseRecords(b); err == nil {
		t.Error("a flipped bit passed the CRC check")
	}
}

// event is what the test reader decodes of an Event.
type event struct {
	wallTime      float64
	step          int64
	fileVersion   string
	values        map[string]float32
	sessionStatus int
}

func readEvents(t *testing.T, path string) []event {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := parseRecords(b)
	if err != nil {
		t.Fatal(err)
	}
	var out []event
	for i, r := range recs {
		e, err := decodeEvent(r)
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		out = append(out, e)
	}
	return out
}

// parseRecords splits TFRecord framing, checking both CRCs of every record (the masking written
// out here from the definition, not through MaskedCRC).
func parseRecords(b []byte) ([][]byte, error) {
	mask := func(p []byte) uint32 {
		c := crc32.Checksum(p, crc32.MakeTable(crc32.Castagnoli))
		return (c>>15 | c<<17) + 0xa282ead8
	}
	var out [][]byte
	for len(b) > 0 {
		if len(b) < 12 {
			return nil, fmt.Errorf("truncated header")
		}
		n := binary.LittleEndian.Uint64(b[:8])
		if binary.LittleEndian.Uint32(b[8:12]) != mask(b[:8]) {
			return nil, fmt.Errorf("length CRC")
		}
		if uint64(len(b)) < 16+n {
			return nil, fmt.Errorf("truncated record")
		}
		data := b[12 : 12+n]
		if binary.LittleEndian.Uint32(b[12+n:16+n]) != mask(data) {
			return nil, fmt.Errorf("data CRC")
		}
		out = append(out, data)
		b = b[16+n:]
	}
	return out, nil
}

// fields decodes one protobuf message into (field, wire type, value) triples.
type field struct {
	num, wire int
	varint    uint64
	fixed     uint64
	bytes     []byte
}

func fields(b []byte) ([]field, error) {
	var out []field
	for len(b) > 0 {
		key, n := binary.Uvarint(b)
		if n <= 0 {
			return nil, fmt.Errorf("bad key")
		}
		b = b[n:]
		f := field{num: int(key >> 3), wire: int(key & 7)}
		switch f.wire {
		case 0:
			f.varint, n = binary.Uvarint(b)
			b = b[n:]
		case 1:
			f.fixed, b = binary.LittleEndian.Uint64(b), b[8:]
		case 5:
			f.fixed, b = uint64(binary.LittleEndian.Uint32(b)), b[4:]
		case 2:
			l, n := binary.Uvarint(b)
			f.bytes, b = b[n:n+int(l)], b[n+int(l):]
		default:
			return nil, fmt.Errorf("wire type %d", f.wire)
		}
		out = append(out, f)
	}
	return out, nil
}

func decodeEvent(b []byte) (event, error) {
	e := event{values: map[string]float32{}}
	fs, err := fields(b)
	if err != nil {
		return e, err
	}
	for _, f := range fs {
		switch f.num {
		case 1:
			e.wallTime = math.Float64frombits(f.fixed)
		case 2:
			e.step = int64(f.varint)
		case 3:
			e.fileVersion = string(f.bytes)
		case 5: // Summary: repeated Value(tag = 1, simple_value = 2)
			vals, err := fields(f.bytes)
			if err != nil {
				return e, err
			}
			for _, v := range vals {
				vf, err := fields(v.bytes)
				if err != nil {
					return e, err
				}
				var tag string
				var val float32
				for _, x := range vf {
					switch x.num {
					case 1:
						tag = string(x.bytes)
					case 2:
						val = math.Float32frombits(uint32(x.fixed))
					}
				}
				e.values[tag] = val
			}
		case 7: // SessionLog: status = 1
			sl, err := fields(f.bytes)
			if err != nil {
				return e, err
			}
			for _, x := range sl {
				if x.num == 1 {
					e.sessionStatus = int(x.varint)
				}
			}
		default:
			return e, fmt.Errorf("unexpected field %d", f.num)
		}
	}
	return e, nil
}
