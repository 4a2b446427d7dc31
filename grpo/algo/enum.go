package algo

import "github.com/mtgrpo/mtgrpo/grpo/internal/enum"

// KeyError is a bad setting named by its key in the trainer's configuration (advantage.eps,
// loss.agg): every Validate of this package returns one.
type KeyError = enum.KeyError
