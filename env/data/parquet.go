package data

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/parquet-go/parquet-go"

	"github.com/mtgrpo/mtgrpo/internal/bounded"
)

// Parquet in the layout pandas / pyarrow write for verl's GSM8K preprocess:
//
//	optional binary data_source (STRING);
//	optional group prompt (LIST) { repeated group list { optional group element {
//	    optional binary content (STRING); optional binary role (STRING); } } }
//	optional binary ability (STRING);
//	optional group reward_model { optional binary ground_truth (STRING); optional binary style (STRING); }
//	optional group extra_info { one optional field per key }
//
// i.e. list<struct<content:string, role:string>> with the standard three-level LIST encoding,
// and structs for reward_model and extra_info. Reading goes by column name, so files with other
// field orders, extra columns, a non-string ground_truth (a struct, a number: kept as JSON text)
// or a plain-string prompt also load. extra_info's columns are inferred when writing: a key
// whose values are all strings is a string column, all integers int64, all numbers double, all
// booleans boolean; anything else (mixed, nested) is written as a JSON string.

// WriteParquet writes rows to a parquet file (through a temporary, as WriteSeq).
func WriteParquet(path string, rows []Row) error {
	if ext := strings.ToLower(filepath.Ext(path)); ext != ".parquet" && ext != ".pq" {
		return fmt.Errorf("%s: WriteParquet wants a .parquet file", path)
	}
	return Write(path, rows)
}

// EncodeParquet writes rows as parquet to w.
func EncodeParquet(w io.Writer, rows []Row) error { return encodeParquet(w, slices.Values(rows)) }

// rowGroupRows bounds a row group: the writer holds one row group's pages in memory, so a file of
// any length is written in bounded memory (some 7 MB for GSM8K rows). Hugging Face datasets'
// to_parquet writes groups of 1,000 rows; pyarrow's default is 1Mi.
var rowGroupRows int64 = 10_000

// encodeParquet writes rows with the writer's options (tests vary the compression), ranging over
// rows twice: extra_info's columns first, then the rows.
func encodeParquet(w io.Writer, rows iter.Seq[Row], options ...parquet.WriterOption) (err error) {
	defer recoverTo(&err, "write parquet")
	str := parquet.Optional(parquet.String())
	group := parquet.Group{
		"data_source":  str,
		"prompt":       parquet.Optional(parquet.List(parquet.Optional(parquet.Group{"content": str, "role": str}))),
		"ability":      str,
		"reward_model": parquet.Optional(parquet.Group{"ground_truth": str, "style": str}),
	}
	extra := extraSchema(rows)
	if len(extra) > 0 {
		group["extra_info"] = parquet.Optional(extra)
	}
	options = append([]parquet.WriterOption{parquet.NewSchema("schema", group), parquet.MaxRowsPerRowGroup(rowGroupRows)}, options...)
	pw := parquet.NewGenericWriter[map[string]any](w, options...)
	batch := make([]map[string]any, 0, 256)
	i := 0
	flush := func() error {
		if _, err := pw.Write(batch); err != nil {
			return fmt.Errorf("rows up to %d: %w", i-1, err)
		}
		batch = batch[:0]
		return nil
	}
	for r := range rows {
		m, err := rowMap(&r, extra)
		if err != nil {
			return fmt.Errorf("row %d: %w", i, err)
		}
		batch = append(batch, m)
		i++
		if len(batch) == cap(batch) {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if len(batch) > 0 {
		if err := flush(); err != nil {
			return err
		}
	}
	return pw.Close()
}

// extraSchema infers extra_info's struct from the values.
func extraSchema(rows iter.Seq[Row]) parquet.Group {
	kinds := map[string]string{}
	for r := range rows {
		for k, v := range r.ExtraInfo {
			kinds[k] = joinKind(kinds[k], kindOf(v))
		}
	}
	g := parquet.Group{}
	for k, kind := range kinds {
		switch kind {
		case "int":
			g[k] = parquet.Optional(parquet.Int(64))
		case "float":
			g[k] = parquet.Optional(parquet.Leaf(parquet.DoubleType))
		case "bool":
			g[k] = parquet.Optional(parquet.Leaf(parquet.BooleanType))
		default: // "string", "json", "" (all null)
			g[k] = parquet.Optional(parquet.String())
		}
	}
	return g
}

func kindOf(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return "string"
	case bool:
		return "bool"
	case int, int32, int64:
		return "int"
	case float64:
		if x == float64(int64(x)) {
			return "int"
		}
		return "float"
	case float32:
		return "float"
	}
	return "json"
}

func joinKind(a, b string) string {
	switch {
	case a == "" || a == b:
		return b
	case b == "":
		return a
	case (a == "int" && b == "float") || (a == "float" && b == "int"):
		return "float"
	}
	return "json"
}

// rowMap lays a row out for the writer. Leaf values are pointers: parquet-go writes a zero value
// in an optional column as null, and index 0, false or "" must survive the round trip.
func rowMap(r *Row, extra parquet.Group) (map[string]any, error) {
	prompt := make([]any, len(r.Prompt))
	for i, m := range r.Prompt {
		prompt[i] = map[string]any{"content": ptr(m.Content), "role": ptr(m.Role)}
	}
	m := map[string]any{
		"data_source":  ptr(r.DataSource),
		"prompt":       prompt,
		"ability":      ptr(r.Ability),
		"reward_model": map[string]any{"ground_truth": ptr(r.RewardModel.GroundTruth), "style": ptr(r.RewardModel.Style)},
	}
	if len(extra) > 0 {
		x, err := extraValues(r.ExtraInfo, extra)
		if err != nil {
			return nil, err
		}
		m["extra_info"] = x
	}
	return m, nil
}

func extraValues(in map[string]any, schema parquet.Group) (map[string]any, error) {
	out := map[string]any{}
	for k, node := range schema {
		v, ok := in[k]
		if !ok || v == nil {
			out[k] = nil
			continue
		}
		switch node.Type().Kind() {
		case parquet.Int64:
			out[k] = ptr(toInt64(v))
		case parquet.Double:
			out[k] = ptr(toFloat64(v))
		case parquet.Boolean:
			b, _ := v.(bool)
			out[k] = ptr(b)
		default:
			if s, ok := v.(string); ok {
				out[k] = ptr(s)
			} else {
				b, err := json.Marshal(v)
				if err != nil {
					return nil, fmt.Errorf("extra_info.%s: %w", k, err)
				}
				out[k] = ptr(string(b))
			}
		}
	}
	return out, nil
}

func ptr[T any](v T) *T { return &v }

func toInt64(v any) int64 {
	switch x := v.(type) {
	case int:
		return int64(x)
	case int32:
		return int64(x)
	case int64:
		return x
	case float64:
		return int64(x)
	}
	return 0
}

func toFloat64(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case float32:
		return float64(x)
	}
	return float64(toInt64(v))
}

// ReadParquet reads rows from a parquet file. Errors name the file, row (0-based) and field.
func ReadParquet(path string, opt Options) (rows []Row, st Stats, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, st, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, st, err
	}
	if !info.Mode().IsRegular() {
		// A pipe, FIFO or <(...) has no size and no random access, which parquet needs (its
		// footer is at the end): it is read whole, under MaxBytes, and decoded from memory.
		b, err := bounded.Read(f, path, opt.withDefaults().MaxBytes)
		if err != nil {
			return nil, st, err
		}
		return DecodeParquet(bytes.NewReader(b), int64(len(b)), path, opt)
	}
	return DecodeParquet(f, info.Size(), path, opt)
}

// DecodeParquet reads rows from r (size bytes); name is used in errors. The file's structure is
// checked before the parquet library reads it (checkParquet): a corrupt or hostile file is an
// error naming what is wrong, and a file over opt.MaxRows rows or opt.MaxBytes decompressed bytes
// is refused before its rows are read.
func DecodeParquet(r io.ReaderAt, size int64, name string, opt Options) (rows []Row, st Stats, err error) {
	defer recoverTo(&err, name)
	opt = opt.withDefaults()
	if err := checkParquet(r, size, opt); err != nil {
		return nil, st, fmt.Errorf("%s: %w", name, err)
	}
	pf, err := parquet.OpenFile(r, size, parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return nil, st, fmt.Errorf("%s: not a parquet file: %w", name, err)
	}
	if _, ok := pf.Schema().Lookup("prompt"); !ok {
		if _, ok := pf.Schema().Lookup("prompt", "list", "element", "content"); !ok {
			return nil, st, fmt.Errorf("%s: no prompt column (columns: %v)", name, columnNames(pf.Schema()))
		}
	}
	pr := parquet.NewGenericReader[map[string]any](pf, pf.Schema()) // pf, not r: r would be opened again, page index included
	defer pr.Close()
	index := 0
	for {
		batch := make([]map[string]any, 128)
		for i := range batch {
			batch[i] = map[string]any{}
		}
		n, rerr := pr.Read(batch)
		for _, m := range batch[:n] {
			row, fe := mapRow(m, opt)
			if fe != nil {
				e := &RowError{File: name, Row: index, Field: fe.field, Err: fe.err}
				if !opt.SkipInvalid {
					return nil, st, e
				}
				st.skip(e)
			} else {
				rows = append(rows, row)
			}
			index++
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return nil, st, fmt.Errorf("%s: row %d: %w", name, index, rerr)
		}
	}
	st.Rows = len(rows)
	if len(rows) == 0 {
		return nil, st, noRows(name, st)
	}
	return rows, st, nil
}

func columnNames(s *parquet.Schema) []string {
	var names []string
	for _, f := range s.Fields() {
		names = append(names, f.Name())
	}
	sort.Strings(names)
	return names
}

// mapRow converts a reconstructed parquet row. It reuses the JSON decoder's field checks by
// round-tripping the columns through JSON, so both formats accept and reject the same rows;
// extra_info is taken as it is, so its value types (a double 2.0 stays a double) survive.
func mapRow(m map[string]any, opt Options) (Row, *fieldErr) {
	extra, hasExtra := m["extra_info"]
	delete(m, "extra_info")
	b, err := json.Marshal(m)
	if err != nil {
		return Row{}, ferr("", "unrepresentable row: %v", err)
	}
	r, fe := decodeRow(b, opt)
	if fe != nil || !hasExtra || extra == nil {
		return r, fe
	}
	em, ok := extra.(map[string]any)
	if !ok {
		return Row{}, ferr("extra_info", "want a struct, got %T", extra)
	}
	r.ExtraInfo = em
	return r, nil
}

// recoverTo turns a panic inside the parquet library (a corrupt file) into an error.
func recoverTo(err *error, what string) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("%s: corrupt or unsupported parquet: %v", what, r)
	}
}
