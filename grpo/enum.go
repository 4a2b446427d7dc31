package grpo

import (
	"fmt"
	"strings"
)

// parseEnum returns the constant of known spelled s (or an alias of one), or an error that names
// the setting, the value and what it may be.
func parseEnum[T ~string](setting, s string, known []T, aliases map[string]T) (T, error) {
	for _, k := range known {
		if string(k) == s {
			return k, nil
		}
	}
	if v, ok := aliases[s]; ok {
		return v, nil
	}
	return "", fmt.Errorf("grpo: unknown %s %q (want %s)", setting, s, enumList(known))
}

// checkEnum is parseEnum for a value that must already be canonical.
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

// badKey is a KeyError for key.
func badKey(key, format string, a ...any) error {
	return &KeyError{Key: key, Err: fmt.Errorf(format, a...)}
}

// checkKey is checkEnum for a setting, as a KeyError.
func checkKey[T ~string](key string, v T, known []T) error {
	if err := checkEnum(key, v, known); err != nil {
		return &KeyError{Key: key, Err: fmt.Errorf("unknown value %q (want %s)", string(v), enumList(known))}
	}
	return nil
}

func checkEnum[T ~string](setting string, v T, known []T) error {
	for _, k := range known {
		if k == v {
			return nil
		}
	}
	return fmt.Errorf("grpo: unknown %s %q (want %s)", setting, string(v), enumList(known))
}

func enumList[T ~string](known []T) string {
	s := make([]string, len(known))
	for i, k := range known {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}
