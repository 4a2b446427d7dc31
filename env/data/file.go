package data

import (
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mtgrpo/mtgrpo/internal/staged"
)

// Read loads rows from a .parquet or .jsonl (.json, .ndjson) file, chosen by extension.
func Read(path string, opt Options) ([]Row, Stats, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".parquet", ".pq":
		return ReadParquet(path, opt)
	case ".jsonl", ".json", ".ndjson":
		return ReadJSONL(path, opt)
	}
	return nil, Stats{}, fmt.Errorf("%s: unknown data format (want .parquet or .jsonl)", path)
}

// Write saves rows as .parquet or .jsonl, chosen by extension (WriteSeq).
func Write(path string, rows []Row) error { return WriteSeq(path, slices.Values(rows)) }

// CanWrite checks, before any work, that rows can be written to path: a known extension and an
// existing directory.
func CanWrite(path string) error {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".parquet", ".pq", ".jsonl", ".json", ".ndjson":
	default:
		return fmt.Errorf("%s: unknown data format (want .parquet or .jsonl)", path)
	}
	dir := filepath.Dir(path)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return fmt.Errorf("%s: no directory %s to write it in", path, dir)
	}
	return nil
}

// WriteSeq saves rows as .parquet or .jsonl, chosen by extension, without holding them: the rows
// are encoded as they come (for parquet, rows is ranged over twice: once for extra_info's
// column types, once to write; it must yield the same rows each time). The file is written
// through a temporary renamed into place (package staged): a write that fails (a full disk, a
// bad row) leaves the old file as it was and no partial one.
func WriteSeq(path string, rows iter.Seq[Row]) error {
	var encode func(io.Writer, iter.Seq[Row]) error
	switch strings.ToLower(filepath.Ext(path)) {
	case ".parquet", ".pq":
		encode = func(w io.Writer, rows iter.Seq[Row]) error { return encodeParquet(w, rows) }
	case ".jsonl", ".json", ".ndjson":
		encode = encodeJSONL
	default:
		return fmt.Errorf("%s: unknown data format (want .parquet or .jsonl)", path)
	}
	f, err := staged.Create(path, 0o644)
	if err != nil {
		return err
	}
	defer f.Discard()
	if err := encode(f, rows); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Commit()
}

// ApplyGroundTruth fills reward_model.ground_truth from a separate file, for datasets that keep
// answers apart from prompts. The file is either JSONL, each line {"index": n, "ground_truth": …}
// (matched to extra_info.index) or {"ground_truth": …} (matched by position), or plain text with
// one answer per line, matched by position. A count mismatch or an unknown index is an error.
//
// The file is read under Options' default bounds on lines and bytes.
func ApplyGroundTruth(rows []Row, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	lim := Options{}.withDefaults()
	lr := NewLineReader(f, lim.MaxLineBytes, lim.MaxBytes)
	var lines []string
	var at []int // line numbers of lines
	for {
		b, n, err := lr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("%s line %d: %w", path, n, err)
		}
		if l := strings.TrimRight(string(b), "\r"); strings.TrimSpace(l) != "" {
			lines, at = append(lines, l), append(at, n)
		}
		if len(lines) > len(rows) {
			return fmt.Errorf("%s: more answers than the %d rows", path, len(rows))
		}
	}
	byIndex := map[int64]int{}
	for i, r := range rows {
		if idx, ok := r.ExtraInfo["index"].(int64); ok {
			byIndex[idx] = i
		}
	}
	positional := 0
	for n, l := range lines {
		truth, idx, hasIdx, err := truthLine(l)
		if err != nil {
			return fmt.Errorf("%s line %d: %w", path, at[n], err)
		}
		target := positional
		if hasIdx {
			i, ok := byIndex[idx]
			if !ok {
				return fmt.Errorf("%s line %d: no row has extra_info.index %d", path, at[n], idx)
			}
			target = i
		} else {
			positional++
		}
		if target >= len(rows) {
			return fmt.Errorf("%s: %d answers for %d rows", path, len(lines), len(rows))
		}
		rows[target].RewardModel.GroundTruth = truth
	}
	if positional > 0 && positional != len(rows) {
		return fmt.Errorf("%s: %d answers for %d rows", path, positional, len(rows))
	}
	return nil
}

func truthLine(l string) (truth string, idx int64, hasIdx bool, err error) {
	if !strings.HasPrefix(strings.TrimSpace(l), "{") {
		return strings.TrimSpace(l), 0, false, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(l), &obj); err != nil {
		return "", 0, false, fmt.Errorf("not JSON: %v", err)
	}
	gt, ok := obj["ground_truth"]
	if !ok {
		return "", 0, false, fmt.Errorf("no ground_truth field")
	}
	if raw, ok := obj["index"]; ok {
		if err := json.Unmarshal(raw, &idx); err != nil {
			return "", 0, false, fmt.Errorf("index: want an integer, got %s", clip(raw))
		}
		hasIdx = true
	}
	return truthText(gt), idx, hasIdx, nil
}
