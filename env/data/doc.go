// Package data reads and writes RL datasets in verl's layout (see Row): parquet as pandas and
// pyarrow write it, and JSONL with the same field names, one object per line.
//
//	rows, st, err := data.Read("train.parquet", data.Options{})  // .parquet, .pq, .jsonl, .json, .ndjson
//	err = data.Write("out.jsonl", rows)
//	err = data.WriteSeq("out.parquet", seq)                      // rows as they come, none held
//	err = data.ApplyGroundTruth(rows, "answers.jsonl")           // answers kept apart from prompts
//
// # Errors
//
// A malformed row is an error naming the file, the row (1-based line for JSONL, 0-based row for
// parquet) and the field (RowError), or, with Options.SkipInvalid, skipped and counted in Stats.
// A file with no usable row (empty, or every row skipped) is an error wrapping ErrNoRows.
//
// # Writing
//
// Write and WriteSeq write through a temporary file renamed into place (package staged): a write
// that fails part way leaves the old file as it was. WriteSeq encodes rows as they come, parquet
// a row group (rowGroupRows) at a time, so a file of any length takes bounded memory.
//
// # Bounds
//
// Reading never trusts the input's size. JSONL lines are read under Options.MaxLineBytes
// (default 64 MiB), files under Options.MaxRows (10M rows) and Options.MaxBytes (8 GiB of JSONL,
// or of decompressed parquet pages); past a bound the read stops with an error naming the row
// and wrapping ErrLineTooLong or ErrTooLarge, so a "file" that is an endless stream (/dev/zero)
// fails instead of exhausting memory. LineReader gives other line readers the same bounds.
//
// A parquet file's structure (footer, schema, column chunks, page headers, compressed streams)
// is checked before the parquet library reads it (checkParquet in parquet_check.go): the library
// allocates the lengths and counts it reads as stated, and a few corrupt bytes cost it tens of
// GiB, a fatal error no recover() catches. What remains of its panics on corrupt data is
// recovered and returned as an error naming the file.
package data
