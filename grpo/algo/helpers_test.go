package algo

import "github.com/mtgrpo/mtgrpo/internal/expect"

// The shared comparisons (package internal/expect), under the names these tests use.
var (
	near         = expect.Near
	expectSlice  = expect.Slice
	expectNested = expect.Nested
	expectErr    = expect.Err
)
