// Package enum reads and checks the trainer's named settings (estimators, loss modes, schedules)
// and names a bad setting by its configuration key. It is shared by grpo and grpo/algo so that
// both report a bad value the same way.
package enum

import (
	"fmt"
	"strings"
)

// Parse returns the constant of known spelled s (or an alias of one), or an error that names
// the setting, the value and what it may be.
func Parse[T ~string](setting, s string, known []T, aliases map[string]T) (T, error) {
	for _, k := range known {
		if string(k) == s {
			return k, nil
		}
	}
	if v, ok := aliases[s]; ok {
		return v, nil
	}
	return "", fmt.Errorf("grpo: unknown %s %q (want %s)", setting, s, List(known))
}

// Check is Parse for a value that must already be canonical.
func Check[T ~string](setting string, v T, known []T) error {
	for _, k := range known {
		if k == v {
			return nil
		}
	}
	return fmt.Errorf("grpo: unknown %s %q (want %s)", setting, string(v), List(known))
}

// List spells the known values, comma-separated.
func List[T ~string](known []T) string {
	s := make([]string, len(known))
	for i, k := range known {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}

// KeyError is a bad setting named by its key in the configuration, whose sections are the
// trainer's (loss.clip_high, advantage.gamma): the caller knows where the key was given.
type KeyError struct {
	Key string
	Err error
}

func (e *KeyError) Error() string {
	return "grpo: " + e.Key + ": " + strings.TrimPrefix(e.Err.Error(), "grpo: ")
}

func (e *KeyError) Unwrap() error { return e.Err }

// BadKey is a KeyError for key.
func BadKey(key, format string, a ...any) error {
	return &KeyError{Key: key, Err: fmt.Errorf(format, a...)}
}

// CheckKey is Check for a setting, as a KeyError.
func CheckKey[T ~string](key string, v T, known []T) error {
	if err := Check(key, v, known); err != nil {
		return &KeyError{Key: key, Err: fmt.Errorf("unknown value %q (want %s)", string(v), List(known))}
	}
	return nil
}
