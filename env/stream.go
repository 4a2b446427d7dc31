package env

import "github.com/mtgrpo/mtgrpo/env/data"

// stream makes a generator's tasks one at a time, in order: the call for the i-th task is given i
// (0, 1, ...), the row's extra_info.index. A stream holds only its random source, so that `mtgrpo
// data gen` writes any number of rows without holding them.
type stream func(i int) data.Row

// take collects a stream's first n tasks.
func take(n int, s stream) []data.Row {
	rows := make([]data.Row, n)
	for i := range rows {
		rows[i] = s(i)
	}
	return rows
}
