package config

import (
	"fmt"
	"math"
	"math/bits"
	"reflect"
)

// Numbers from the configuration are checked in two places, each once for every key: as a value
// is read (finite: YAML's .nan and .inf parse as floats), and in Validate (in range, with
// products such as tasks × group checked for overflow and against the memory they imply). The
// errors name the key and where it was given.

// finite refuses a NaN or infinite float, alone or in a list or map, as it is read.
func finite(v reflect.Value) error {
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		if f := v.Float(); math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Errorf("%v: want a finite number", f)
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			if err := finite(v.Index(i)); err != nil {
				return fmt.Errorf("[%d] %w", i, err)
			}
		}
	case reflect.Map:
		it := v.MapRange()
		for it.Next() {
			if err := finite(it.Value()); err != nil {
				return fmt.Errorf("[%v] %w", it.Key(), err)
			}
		}
	case reflect.Interface:
		if !v.IsNil() {
			return finite(v.Elem())
		}
	}
	return nil
}

// Bounds on sizes: far above any real run, low enough that what they imply is allocated without
// overflow and refused with its figures rather than by the kernel's OOM killer.
const (
	maxCount         = 1 << 24 // tasks, group, generated rows, batch sizes, counts of steps
	maxTrajectories  = 1 << 20 // rollout.tasks × rollout.group (and eval tasks × samples)
	maxTokens        = 1 << 24 // tokens of one sequence (max_len, max_new_tokens, budgets)
	maxTokensPerStep = 1 << 36 // trajectories × max_len: the token ids alone would take 512 GiB
)

// size is one integer key with its range.
type size struct {
	key            string
	v, least, most int
}

// sizes checks integer keys against their ranges.
func (c *Config) sizes(checks ...size) error {
	for _, k := range checks {
		if k.v < k.least {
			return c.bad(k.key, "%d: must be at least %d", k.v, k.least)
		}
		if k.v > k.most {
			return c.bad(k.key, "%d: must be at most %d", k.v, k.most)
		}
	}
	return nil
}

// product is a×b, or ok false when it overflows or passes most.
func product(a, b, most int) (int, bool) {
	if a < 0 || b < 0 {
		return 0, false
	}
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi != 0 || lo > uint64(most) {
		return 0, false
	}
	return int(lo), true
}

// number is one float key with its range; open ends exclude the bound.
type number struct {
	key            string
	v, lo, hi      float64
	loOpen, hiOpen bool
}

// numbers checks float keys against their ranges (NaN fails every range).
func (c *Config) numbers(checks ...number) error {
	for _, k := range checks {
		okLo := k.v > k.lo || (!k.loOpen && k.v == k.lo)
		okHi := k.v < k.hi || (!k.hiOpen && k.v == k.hi)
		if !okLo || !okHi {
			l, r := "[", "]"
			if k.loOpen {
				l = "("
			}
			if k.hiOpen {
				r = ")"
			}
			return c.bad(k.key, "%v: must be in %s%v, %v%s", k.v, l, k.lo, k.hi, r)
		}
	}
	return nil
}
