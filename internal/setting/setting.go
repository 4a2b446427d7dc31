package setting

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"reflect"
	"strings"
)

// KeyError is a bad setting named by its key in a run's configuration: the section's key path
// (update.mini_batches, env.reward_rule), which the caller places where the key was given.
type KeyError struct {
	Key string
	Err error
}

func (e *KeyError) Error() string { return e.Key + ": " + e.Err.Error() }

func (e *KeyError) Unwrap() error { return e.Err }

// Errorf is a KeyError for key.
func Errorf(key, format string, a ...any) error {
	return &KeyError{Key: key, Err: fmt.Errorf(format, a...)}
}

// Ceilings on sizes (see the package doc).
const (
	MaxCount         = 1 << 24 // generated rows, batch sizes, counts of steps, turns and calls
	MaxTrajectories  = 1 << 20 // trajectories of one step or one evaluation
	MaxTokens        = 1 << 24 // tokens of one sequence (max_len, max_new_tokens, budgets)
	MaxTokensPerStep = 1 << 36 // trajectories × max_len: the token ids alone would take 512 GiB
)

// Number is what a Range bounds: counts, durations (~int64) and reals.
type Number interface{ ~int | ~int64 | ~float64 }

// Range is the one declaration of a key's range: V must lie between Lo and Hi (an open end
// excludes its bound; a real value must also be finite), or be 0 where Zero says what 0 means.
type Range[T Number] struct {
	Key            string
	V, Lo, Hi      T
	LoOpen, HiOpen bool
	// Zero admits 0 outside [Lo, Hi] and says what it means ("3", "off", "the templates' own").
	Zero string
	// Note says why the range is what it is; errors end with it.
	Note string
}

// In is the range [lo, hi].
func In[T Number](key string, v, lo, hi T) Range[T] { return Range[T]{Key: key, V: v, Lo: lo, Hi: hi} }

// AtLeast is the range [lo, ∞) (a real value must be finite).
func AtLeast[T Number](key string, v, lo T) Range[T] {
	return Range[T]{Key: key, V: v, Lo: lo, Hi: top[T](), HiOpen: isReal[T]()}
}

// Finite is any finite real.
func Finite(key string, v float64) Range[float64] {
	return Range[float64]{Key: key, V: v, Lo: math.Inf(-1), Hi: math.Inf(1), LoOpen: true, HiOpen: true}
}

// Above excludes the lower bound.
func (r Range[T]) Above() Range[T] { r.LoOpen = true; return r }

// Below excludes the upper bound.
func (r Range[T]) Below() Range[T] { r.HiOpen = true; return r }

// OrZero admits 0, meaning what means says.
func (r Range[T]) OrZero(means string) Range[T] { r.Zero = means; return r }

// Because adds why the range is what it is to the error.
func (r Range[T]) Because(note string) Range[T] { r.Note = note; return r }

// Check is nil when V is in range, else a KeyError saying what the key takes.
func (r Range[T]) Check() error {
	if r.Zero != "" && r.V == 0 || r.contains(r.V) {
		return nil
	}
	notes := r.Note
	if r.Zero != "" {
		notes = strings.TrimSuffix("0: "+r.Zero+"; "+r.Note, "; ")
	}
	if notes != "" {
		notes = " (" + notes + ")"
	}
	if r.Zero != "" {
		return Errorf(r.Key, "%v: want %s%s", r.V, r.span(), notes)
	}
	return Errorf(r.Key, "%v: must be %s%s", r.V, r.violated(), notes)
}

func (r Range[T]) contains(v T) bool {
	okLo := v > r.Lo || !r.LoOpen && v == r.Lo
	okHi := v < r.Hi || !r.HiOpen && v == r.Hi
	return okLo && okHi // a NaN fails both
}

// span says the whole range: "1 to 6", "a number in [0, 1)", "a finite number > 0".
func (r Range[T]) span() string {
	if !isReal[T]() {
		return fmt.Sprintf("%v to %v", r.Lo, r.Hi)
	}
	lo, hi := float64(r.Lo), float64(r.Hi)
	switch {
	case math.IsInf(lo, -1) && math.IsInf(hi, 1):
		return "a finite number"
	case math.IsInf(hi, 1):
		return fmt.Sprintf("a finite number %s %v", map[bool]string{false: ">=", true: ">"}[r.LoOpen], r.Lo)
	}
	l, h := "[", "]"
	if r.LoOpen {
		l = "("
	}
	if r.HiOpen {
		h = ")"
	}
	return fmt.Sprintf("in %s%v, %v%s", l, r.Lo, r.Hi, h)
}

// violated says the bound V misses: "at least 1", "at most 1048576", or the whole span for reals.
func (r Range[T]) violated() string {
	if isReal[T]() {
		return r.span()
	}
	if r.V < r.Lo {
		return fmt.Sprintf("at least %v", r.Lo)
	}
	return fmt.Sprintf("at most %v", r.Hi)
}

func isReal[T Number]() bool {
	var t T
	k := reflect.TypeOf(t).Kind()
	return k == reflect.Float64
}

// top is the largest T: +Inf for reals.
func top[T Number]() T {
	var t T
	switch reflect.TypeOf(t).Kind() {
	case reflect.Float64:
		return T(math.Inf(1))
	case reflect.Int64:
		return T(math.MaxInt64)
	}
	return T(math.MaxInt)
}

// Checker is a declared range (or any check that names its key).
type Checker interface{ Check() error }

// Check is the first failing check's error, or nil.
func Check(cs ...Checker) error {
	for _, c := range cs {
		if err := c.Check(); err != nil {
			return err
		}
	}
	return nil
}

// Product is a×b, or ok false when either is negative or the product passes most (checked
// without overflow): trajectories × tokens, tasks × group.
func Product(a, b, most int) (int, bool) {
	if a < 0 || b < 0 {
		return 0, false
	}
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi != 0 || lo > uint64(most) {
		return 0, false
	}
	return int(lo), true
}

// Parse is the constant of known spelled s, or one an alias names; the error names the setting
// (what), the value and the known spellings.
func Parse[T ~string](what, s string, known []T, aliases map[string]T) (T, error) {
	for _, k := range known {
		if string(k) == s {
			return k, nil
		}
	}
	if v, ok := aliases[s]; ok {
		return v, nil
	}
	return "", fmt.Errorf("unknown %s %q (want %s)", what, s, List(known))
}

// Decode sets *dst from text through parse: the body of a named value's UnmarshalText, so YAML,
// flags and --set read it with the same spellings and errors.
func Decode[T ~string](dst *T, text []byte, parse func(string) (T, error)) error {
	v, err := parse(string(text))
	if err != nil {
		return err
	}
	*dst = v
	return nil
}

// OneOf is nil when v is one of known, else a KeyError for key listing them.
func OneOf[T ~string](key string, v T, known []T) error {
	for _, k := range known {
		if k == v {
			return nil
		}
	}
	return Errorf(key, "unknown value %q (want %s)", string(v), List(known))
}

// List spells the known values, comma-separated.
func List[T ~string](known []T) string {
	s := make([]string, len(known))
	for i, k := range known {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}

// As is the KeyError inside err, if any.
func As(err error) (*KeyError, bool) {
	var ke *KeyError
	ok := errors.As(err, &ke)
	return ke, ok
}
