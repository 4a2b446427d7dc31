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
