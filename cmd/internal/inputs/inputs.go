// Package inputs reads a command's dataset files once. The checks before any work (cmd's
// preflight) and the run itself read the same files; a file that can be read only once (a FIFO,
// a pipe, bash's <(...)) would give the second reader nothing, or keep it waiting for a writer
// that is gone. So the first reading is kept, and every later one gets what it gave, errors
// included, until Release.
package inputs

import (
	"slices"
	"sync"

	"github.com/mtgrpo/mtgrpo/env/data"
)

// key is one reading: the same file read under other options is another.
type key struct {
	path string
	opt  data.Options
}

type reading struct {
	rows []data.Row
	st   data.Stats
	err  error
}

var (
	mu    sync.Mutex
	reads = map[key]reading{}
)

// Rows is data.Read(path, opt), read the first time it is asked for. Each call gets its own
// slice (the caller may set its rows' fields, as data.ApplyGroundTruth does).
func Rows(path string, opt data.Options) ([]data.Row, data.Stats, error) {
	mu.Lock()
	defer mu.Unlock()
	k := key{path, opt}
	r, ok := reads[k]
	if !ok {
		r.rows, r.st, r.err = data.Read(path, opt)
		reads[k] = r
	}
	return slices.Clone(r.rows), r.st, r.err
}

// Release drops what was read, once the command has built what it needs from it.
func Release() {
	mu.Lock()
	defer mu.Unlock()
	clear(reads)
}
