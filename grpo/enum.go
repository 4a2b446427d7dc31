package grpo

import "github.com/mtgrpo/mtgrpo/internal/setting"

// KeyError is setting.KeyError, the configuration's one bad-key error, under the name the
// trainer's files use.
type KeyError = setting.KeyError
