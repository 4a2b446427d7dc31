package run

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/rs/zerolog"

	"github.com/mtgrpo/mtgrpo/env/data"
)

// Metrics are one step's scalars by verl/TRL name.
type Metrics map[string]float64

// Record is one line of metrics.jsonl.
type Record struct {
	Step   int
	Values Metrics // non-finite values are absent (JSON has no NaN)
}

// headline are the metrics a "step:" log line shows, in this order, when present.
var headline = []string{
	"critic/score/mean", "val/score", "val/accuracy", "sft/loss", "actor/pg_loss", "actor/kl_loss", "actor/entropy",
	"actor/grad_norm", "response_length/mean", "num_turns/mean", "timing_s/step", "perf/throughput",
}

// Step records a step's metrics: a line of metrics.jsonl (synced, so a crash loses at most the
// step being written), TensorBoard scalars, and a "step:" log line with the headline metrics.
func (r *Run) Step(step int, m Metrics) error {
	line, bad := encodeRecord(step, m)
	if len(bad) > 0 {
		r.Log.Warn().Int("step", step).Strs("metrics", bad).Msg("non-finite metric values left out of metrics.jsonl")
	}
	if _, err := r.metrics.Write(line); err != nil {
		return fmt.Errorf("run: %s: %w", MetricsFile, err)
	}
	if err := r.metrics.Sync(); err != nil {
		return fmt.Errorf("run: %s: %w", MetricsFile, err)
	}
	if err := r.events.Scalars(int64(step), m); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	ev := r.Log.Info().Int("step", step)
	for _, k := range headline {
		if v, ok := m[k]; ok {
			ev = Field(ev, k, v)
		}
	}
	ev.Msg("step: " + strconv.Itoa(step))
	return nil
}

// Field adds a metric to a log line at 5 significant digits, as a JSON number (0.52912, not
// 0.5291234016418457; 6.25e-06): metrics.jsonl and TensorBoard keep every digit, a log line is
// read by people. Non-finite values are written as zerolog writes them (the strings "NaN", "+Inf").
func Field(ev *zerolog.Event, name string, v float64) *zerolog.Event {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return ev.Float64(name, v)
	}
	return ev.RawJSON(name, strconv.AppendFloat(nil, v, 'g', 5, 64))
}

// encodeRecord makes the JSON line {"step": n, name: value, ...} with names sorted; non-finite
// values are left out and returned.
func encodeRecord(step int, m Metrics) ([]byte, []string) {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	var bad []string
	fmt.Fprintf(&buf, `{"step":%d`, step)
	for _, k := range names {
		v := m[k]
		if math.IsNaN(v) || math.IsInf(v, 0) {
			bad = append(bad, k)
			continue
		}
		key, _ := json.Marshal(k)
		fmt.Fprintf(&buf, ",%s:%s", key, strconv.FormatFloat(v, 'g', -1, 64))
	}
	buf.WriteString("}\n")
	return buf.Bytes(), bad
}

// ReadMetrics reads RUN/metrics.jsonl. A last line without its newline (a crash mid-write) is
// ignored; any other malformed line is an error naming the file and line. The file is read a line
// at a time under the data loader's bounds.
// Only a regular file inside dir is read (OpenFile).
func ReadMetrics(dir string) ([]Record, error) {
	f, err := OpenFile(dir, MetricsFile)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseMetrics(f.Name(), f)
}

func parseMetrics(path string, r io.Reader) ([]Record, error) {
	var out []Record
	lines := data.NewLineReader(r, 64<<20, data.DefaultMaxBytes)
	for {
		b, n, err := lines.Next()
		if err == io.EOF || (err == nil && lines.Partial()) { // a partial last line is dropped
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("run: %s line %d: %w", path, n, err)
		}
		line := bytes.TrimSpace(b)
		if len(line) == 0 {
			continue
		}
		rec, err := parseRecord(line)
		if err != nil {
			return nil, fmt.Errorf("run: %s line %d: %w", path, n, err)
		}
		out = append(out, rec)
	}
}

// parseRecord reads one line of metrics.jsonl.
func parseRecord(line []byte) (Record, error) {
	var raw map[string]any
	if err := json.Unmarshal(line, &raw); err != nil {
		return Record{}, err
	}
	step, ok := raw["step"].(float64)
	if !ok || step != math.Trunc(step) || step < 0 || step > 1<<53 {
		return Record{}, errors.New(`no integer "step"`)
	}
	rec := Record{Step: int(step), Values: Metrics{}}
	for k, v := range raw {
		if k == "step" {
			continue
		}
		f, ok := v.(float64)
		if !ok {
			return Record{}, fmt.Errorf("%q is %v, not a number", k, v)
		}
		rec.Values[k] = f
	}
	return rec, nil
}

// truncateMetrics keeps the records of steps up to step (resuming from that step's checkpoint
// replays the later ones), rewriting the file atomically. A missing file is fine.
func truncateMetrics(root *os.Root, step int) error {
	path := filepath.Join(root.Name(), MetricsFile)
	f, err := OpenFileIn(root, MetricsFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	recs, err := parseMetrics(path, f)
	f.Close()
	if err != nil {
		return err
	}
	var out bytes.Buffer
	for _, r := range recs {
		if r.Step <= step {
			line, _ := encodeRecord(r.Step, r.Values)
			out.Write(line)
		}
	}
	return writeFileAtomic(path, out.Bytes())
}
