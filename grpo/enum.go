package grpo

import "github.com/mtgrpo/mtgrpo/grpo/algo"

// KeyError is a bad setting named by its key in the configuration (loss.clip_high,
// advantage.gamma); every Validate of grpo and grpo/algo returns one.
type KeyError = algo.KeyError
