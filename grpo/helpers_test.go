package grpo

import (
	"github.com/mtgrpo/mtgrpo/internal/expect"
	"github.com/mtgrpo/mtgrpo/internal/ranks"
)

// The shared comparisons (package internal/expect) and the multi-process tests' ranks (package
// internal/ranks), under the names these tests use.
var (
	near        = expect.Near
	expectSlice = expect.Slice
	expectErr   = expect.Err
	runRanks    = ranks.Run
	requireGloo = ranks.RequireGloo
)
