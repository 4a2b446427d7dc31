package data

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ReadJSONL reads rows from a JSONL file (one verl-layout object per line; blank lines skipped).
// A malformed row is an error naming file, line and field, or, with SkipInvalid, skipped and
// counted in Stats. A file with no valid row is an error wrapping ErrNoRows.
func ReadJSONL(path string, opt Options) ([]Row, Stats, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, Stats{}, err
	}
	defer f.Close()
	return DecodeJSONL(f, path, opt)
}

// DecodeJSONL reads rows from r; name is used in errors. A line longer than opt.MaxLineBytes,
// more than opt.MaxRows rows or more than opt.MaxBytes bytes stop the read with an error naming
// the row (line), whatever SkipInvalid says.
func DecodeJSONL(r io.Reader, name string, opt Options) ([]Row, Stats, error) {
	opt = opt.withDefaults()
	var rows []Row
	var st Stats
	lines := NewLineReader(r, opt.MaxLineBytes, opt.MaxBytes)
	seen := 0 // non-blank lines: rows, valid or not
	for {
		b, line, err := lines.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, st, &RowError{File: name, Row: line, Err: err}
		}
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		if seen++; seen > opt.MaxRows {
			return nil, st, &RowError{File: name, Row: line, Err: fmt.Errorf("%w: more than %d rows", ErrTooLarge, opt.MaxRows)}
		}
		row, rerr := decodeRow(b, opt)
		if rerr == nil {
			rows = append(rows, row)
			continue
		}
		e := &RowError{File: name, Row: line, Field: rerr.field, Err: rerr.err}
		if !opt.SkipInvalid {
			return nil, st, e
		}
		st.skip(e)
	}
	st.Rows = len(rows)
	if len(rows) == 0 {
		return nil, st, noRows(name, st)
	}
	return rows, st, nil
}

type fieldErr struct {
	field string
	err   error
}

func ferr(field string, format string, a ...any) *fieldErr {
	return &fieldErr{field, fmt.Errorf(format, a...)}
}

// decodeRow parses one JSON object into a Row, field by field so errors can name the field.
func decodeRow(b []byte, opt Options) (Row, *fieldErr) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return Row{}, ferr("", "not a JSON object: %v", err)
	}
	var r Row
	var fe *fieldErr
	if r.DataSource, fe = optString(raw, "data_source"); fe != nil {
		return Row{}, fe
	}
	if r.Ability, fe = optString(raw, "ability"); fe != nil {
		return Row{}, fe
	}
	if r.Prompt, fe = decodePrompt(raw["prompt"]); fe != nil {
		return Row{}, fe
	}
	if r.RewardModel, fe = decodeRewardModel(raw["reward_model"]); fe != nil {
		return Row{}, fe
	}
	if r.ExtraInfo, fe = decodeExtra(raw["extra_info"]); fe != nil {
		return Row{}, fe
	}
	return r, check(&r, opt)
}

func check(r *Row, opt Options) *fieldErr {
	if err := r.Validate(); err != nil {
		field, msg, _ := strings.Cut(err.Error(), ": ")
		return ferr(field, "%s", msg)
	}
	if opt.RequireGroundTruth && strings.TrimSpace(r.RewardModel.GroundTruth) == "" {
		return ferr("reward_model.ground_truth", "missing or empty")
	}
	return nil
}

func optString(raw map[string]json.RawMessage, key string) (string, *fieldErr) {
	v, ok := raw[key]
	if !ok || string(v) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", ferr(key, "want a string, got %s", clip(v))
	}
	return s, nil
}

// decodePrompt accepts verl's list of {role, content}, or a plain string (one user message).
func decodePrompt(v json.RawMessage) ([]Message, *fieldErr) {
	if len(v) == 0 || string(v) == "null" {
		return nil, ferr("prompt", "missing")
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		return []Message{{Role: "user", Content: s}}, nil
	}
	var list []json.RawMessage
	if err := json.Unmarshal(v, &list); err != nil {
		return nil, ferr("prompt", "want a list of {role, content} or a string, got %s", clip(v))
	}
	msgs := make([]Message, len(list))
	for i, m := range list {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(m, &obj); err != nil {
			return nil, ferr(fmt.Sprintf("prompt[%d]", i), "want {role, content}, got %s", clip(m))
		}
		var fe *fieldErr
		if msgs[i].Role, fe = optString(obj, "role"); fe != nil {
			return nil, ferr(fmt.Sprintf("prompt[%d].role", i), "%v", fe.err)
		}
		if msgs[i].Content, fe = optString(obj, "content"); fe != nil {
			return nil, ferr(fmt.Sprintf("prompt[%d].content", i), "%v", fe.err)
		}
	}
	return msgs, nil
}

func decodeRewardModel(v json.RawMessage) (RewardModel, *fieldErr) {
	if len(v) == 0 || string(v) == "null" {
		return RewardModel{}, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(v, &obj); err != nil {
		return RewardModel{}, ferr("reward_model", "want an object {style, ground_truth}, got %s", clip(v))
	}
	style, fe := optString(obj, "style")
	if fe != nil {
		return RewardModel{}, ferr("reward_model.style", "%v", fe.err)
	}
	return RewardModel{Style: style, GroundTruth: truthText(obj["ground_truth"])}, nil
}

// truthText turns a ground truth into text: strings as they are, anything else (a number, a
// TinyZero-style {"target", "numbers"} object) as compact JSON.
func truthText(v json.RawMessage) string {
	if len(v) == 0 || string(v) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	var buf bytes.Buffer
	if json.Compact(&buf, v) != nil {
		return string(v)
	}
	return buf.String()
}

func decodeExtra(v json.RawMessage) (map[string]any, *fieldErr) {
	if len(v) == 0 || string(v) == "null" {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, ferr("extra_info", "want an object, got %s", clip(v))
	}
	for k, x := range m {
		m[k] = plainNumbers(x)
	}
	return m, nil
}

// plainNumbers turns json.Numbers into int64 (integers) or float64; a number no float64 can
// hold stays as its text.
func plainNumbers(x any) any {
	switch v := x.(type) {
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i
		}
		f, err := v.Float64()
		if err != nil || math.IsInf(f, 0) {
			return v.String() // out of float64 range (1e400): kept as its literal text
		}
		return f
	case map[string]any:
		for k, e := range v {
			v[k] = plainNumbers(e)
		}
	case []any:
		for i, e := range v {
			v[i] = plainNumbers(e)
		}
	}
	return x
}

func clip(b []byte) string {
	s := string(b)
	if len(s) > 80 {
		s = s[:80] + "..."
	}
	return s
}

// WriteJSONL writes rows, one JSON object per line (through a temporary, as WriteSeq).
func WriteJSONL(path string, rows []Row) error {
	if ext := strings.ToLower(filepath.Ext(path)); ext != ".jsonl" && ext != ".json" && ext != ".ndjson" {
		return fmt.Errorf("%s: WriteJSONL wants a .jsonl file", path)
	}
	return Write(path, rows)
}

// EncodeJSONL writes rows to w.
func EncodeJSONL(w io.Writer, rows []Row) error { return encodeJSONL(w, slices.Values(rows)) }

// encodeJSONL writes rows to w as they come.
func encodeJSONL(w io.Writer, rows iter.Seq[Row]) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	i := 0
	for r := range rows {
		if err := enc.Encode(&r); err != nil {
			return fmt.Errorf("row %d: %w", i, err)
		}
		i++
	}
	return bw.Flush()
}
