package data

import (
	"errors"
	"fmt"
	"strings"
)

// Row is one task in verl's RL dataset layout (examples/data_preprocess/gsm8k.py writes it):
//
//	data_source   string                              where the task comes from; rewards dispatch on it
//	prompt        list<struct<content:string, role:string>>   the opening chat messages
//	ability       string                              "math", "code", "qa", "game", ...
//	reward_model  struct<ground_truth:string, style:string>   style is "rule" for checked answers
//	extra_info    struct<...>                         anything else (split, index, answer, question)
//
// JSONL files use the same field names, one object per line. ground_truth is always a string: a
// structured truth (countdown's numbers and target, a frozen-lake map) is a JSON text.
type Row struct {
	DataSource  string         `json:"data_source"`
	Prompt      []Message      `json:"prompt"`
	Ability     string         `json:"ability"`
	RewardModel RewardModel    `json:"reward_model"`
	ExtraInfo   map[string]any `json:"extra_info,omitempty"`
}

// Message is a prompt message: {"content", "role"} (pyarrow orders struct fields as written by
// the preprocess script; we write content then role like pandas does for verl's GSM8K).
type Message struct {
	Content string `json:"content" parquet:"content"`
	Role    string `json:"role" parquet:"role"`
}

// RewardModel is verl's reward_model column.
type RewardModel struct {
	GroundTruth string `json:"ground_truth" parquet:"ground_truth"`
	Style       string `json:"style" parquet:"style"`
}

var validRoles = map[string]bool{"system": true, "user": true, "assistant": true, "tool": true}

// Validate checks the fields every environment relies on. The error names the field.
func (r *Row) Validate() error {
	if len(r.Prompt) == 0 {
		return fmt.Errorf("prompt: empty (want a list of {role, content})")
	}
	for i, m := range r.Prompt {
		if !validRoles[m.Role] {
			return fmt.Errorf("prompt[%d].role: %q is not one of system, user, assistant, tool", i, m.Role)
		}
		if strings.TrimSpace(m.Content) == "" && m.Role != "assistant" {
			return fmt.Errorf("prompt[%d].content: empty", i)
		}
	}
	return nil
}

// RowError locates a bad row: file, row number (1-based line for JSONL, 0-based row for parquet)
// and field.
type RowError struct {
	File  string
	Row   int
	Field string
	Err   error
}

func (e *RowError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("%s: row %d: %v", e.File, e.Row, e.Err)
	}
	return fmt.Sprintf("%s: row %d: %s: %v", e.File, e.Row, e.Field, e.Err)
}

func (e *RowError) Unwrap() error { return e.Err }

// Options control reading.
type Options struct {
	// SkipInvalid skips malformed rows instead of failing; Stats counts them.
	SkipInvalid bool
	// RequireGroundTruth makes an empty reward_model.ground_truth an error.
	RequireGroundTruth bool
	// MaxRows bounds the rows of a file, valid or not (default DefaultMaxRows).
	MaxRows int
	// MaxBytes bounds the data read from a file: a JSONL file's bytes, a parquet file's
	// decompressed pages (default DefaultMaxBytes).
	MaxBytes int64
	// MaxLineBytes bounds one JSONL line (default DefaultMaxLineBytes).
	MaxLineBytes int
}

// Defaults of Options' bounds. They stop a file that never ends (a JSONL "file" that is
// /dev/zero, a parquet footer that claims billions of rows) with an error naming the row,
// before it exhausts memory, and are far above what RL datasets hold (GSM8K has 7,473 training
// rows; the largest verl-style math sets a few million).
const (
	DefaultMaxRows      = 10_000_000
	DefaultMaxBytes     = 8 << 30  // 8 GiB
	DefaultMaxLineBytes = 64 << 20 // 64 MiB: one row's prompt and extra_info
)

func (o Options) withDefaults() Options {
	if o.MaxRows <= 0 {
		o.MaxRows = DefaultMaxRows
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxLineBytes <= 0 {
		o.MaxLineBytes = DefaultMaxLineBytes
	}
	return o
}

// ErrNoRows is wrapped by the error of a read that found no usable row: an empty file, or one
// whose every row was skipped as malformed. Training on nothing is never what was meant.
var ErrNoRows = errors.New("no rows")

// noRows is the error of a read that returns no row.
func noRows(name string, st Stats) error {
	if st.Skipped > 0 {
		return fmt.Errorf("%s: %w: all %d rows are malformed (the first: %v)", name, ErrNoRows, st.Skipped, &st.Errors[0])
	}
	return fmt.Errorf("%s: %w: the file holds no data", name, ErrNoRows)
}

// Stats reports what a read did.
type Stats struct {
	Rows    int        // rows returned
	Skipped int        // malformed rows skipped (SkipInvalid)
	Errors  []RowError // the first few skipped rows' errors, for the log
}

const keepErrors = 10

func (s *Stats) skip(e *RowError) {
	s.Skipped++
	if len(s.Errors) < keepErrors {
		s.Errors = append(s.Errors, *e)
	}
}
