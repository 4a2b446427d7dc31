package threads

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// EnvVar names the environment variable that chooses the threads when --threads is not given.
const EnvVar = "MTGRPO_THREADS"

// Source says where a Setting came from.
type Source string

const (
	FromDefault Source = "default"
	FromEnv     Source = EnvVar
	FromFlag    Source = "--threads"
)

// Setting is the size of the two CPU pools.
type Setting struct {
	IntraOp int // libtorch's intra-op threads (at::set_num_threads)
	BLAS    int // OpenBLAS threads (openblas_set_num_threads)
	Source  Source
}

func (s Setting) String() string {
	return fmt.Sprintf("%d intra-op, %d BLAS (%s)", s.IntraOp, s.BLAS, s.Source)
}

// Default is the setting used when neither --threads nor MTGRPO_THREADS says: half the cores
// (at least one) for libtorch's intra-op pool and one BLAS thread, so a matmul runs on the thread
// that issues it and never spawns BLAS threads beside busy intra-op threads. On the 2-core machines
// this project develops on, 1 intra-op and 1 BLAS thread decoded and trained 2-5x faster than any
// setting with two threads in a pool (docs/bench/threads.md); the other half of a larger
// machine's cores is left to environments, tools, sandboxes and the Go runtime.
func Default(cores int) Setting {
	return Setting{IntraOp: max(cores/2, 1), BLAS: 1, Source: FromDefault}
}

// Parse reads a thread specification: "N" (N intra-op threads and one BLAS thread) or "I,B" (I
// intra-op threads and B BLAS threads). what names the flag or variable in errors.
func Parse(spec, what string) (Setting, error) {
	bad := func(why string) (Setting, error) {
		return Setting{}, fmt.Errorf("%s %q: %s (want N or INTRA,BLAS with positive integers)", what, spec, why)
	}
	parts := strings.Split(strings.TrimSpace(spec), ",")
	if len(parts) > 2 {
		return bad("too many fields")
	}
	var v [2]int
	for i, p := range parts {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil {
			return bad("not an integer")
		}
		if n < 1 || n > 4096 {
			return bad("out of range 1..4096")
		}
		v[i] = n
	}
	if len(parts) == 1 {
		v[1] = 1
	}
	return Setting{IntraOp: v[0], BLAS: v[1]}, nil
}

// Resolve picks the setting: the flag's value when given (non-empty), else $MTGRPO_THREADS, else
// Default(the usable cores).
func Resolve(flag string) (Setting, error) {
	if flag != "" {
		s, err := Parse(flag, "--threads")
		s.Source = FromFlag
		return s, err
	}
	if env := os.Getenv(EnvVar); env != "" {
		s, err := Parse(env, EnvVar)
		s.Source = FromEnv
		return s, err
	}
	return Default(runtime.NumCPU()), nil
}
