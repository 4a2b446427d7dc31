package config

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"time"

	"gopkg.in/yaml.v3"
)

// Numbers from the configuration are checked in two places, each once for every key: as a value
// is read (finite: YAML's .nan and .inf parse as floats), and in Validate against the one range
// the key's owner declares (internal/setting; products such as tasks × group checked for
// overflow and against the memory they imply). The errors name the key and where it was given.

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

// Integers. Every source (a file, KEY=VALUE, an environment variable, data gen --set) reaches a
// key as a YAML node, and an integer key takes a YAML integer, or a number with no fractional part
// (2.0, 1e3: what float-typed fields of other trainers write, and Python prints for them), read
// as that integer. A fraction is an error naming the key, never truncated as YAML's own decoder
// truncates it (rollout.group 1.9 would be 1, which zeroes every GRPO advantage; train.steps 0.5
// would be 0, "run by epochs").

// integers returns n with every number that stands for an integer of type t (a scalar, or the
// elements of a list or map of integers) written as that integer: the one rule for integer keys.
// A fraction, or a value outside t's range, is an error.
func integers(n *yaml.Node, t reflect.Type) (*yaml.Node, error) {
	n = deref(n)
	switch t.Kind() {
	case reflect.Pointer:
		return integers(n, t.Elem())
	case reflect.Slice, reflect.Array, reflect.Map:
		want := yaml.SequenceNode
		if t.Kind() == reflect.Map {
			want = yaml.MappingNode
		}
		if n.Kind != want {
			return n, nil // the decoder names the wrong shape
		}
		out := *n
		out.Content = slices.Clone(n.Content)
		for i, c := range n.Content {
			if t.Kind() == reflect.Map && i%2 == 0 {
				continue // a key
			}
			conv, err := integers(c, t.Elem())
			if err != nil {
				if t.Kind() == reflect.Map {
					return nil, fmt.Errorf("[%s] %w", n.Content[i-1].Value, err)
				}
				return nil, fmt.Errorf("[%d] %w", i, err)
			}
			out.Content[i] = conv
		}
		return &out, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if t == reflect.TypeOf(time.Duration(0)) || n.Kind != yaml.ScalarNode || n.ShortTag() != "!!float" {
			return n, nil
		}
		i, err := wholeInt(n)
		if err != nil {
			return nil, err
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.FormatInt(i, 10), Line: n.Line, Column: n.Column}, nil
	}
	return n, nil
}

// wholeInt reads an integer by the rule: a YAML integer, or a finite number with no fractional
// part within the int64 range.
func wholeInt(n *yaml.Node) (int64, error) {
	if n.ShortTag() == "!!int" {
		var i int64
		if err := n.Decode(&i); err != nil {
			return 0, fmt.Errorf("want an integer, got %s", shown(n))
		}
		return i, nil
	}
	var f float64
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!float" || n.Decode(&f) != nil {
		return 0, fmt.Errorf("want an integer, got %s", shown(n))
	}
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0):
		return 0, fmt.Errorf("want an integer, got %s", shown(n))
	case f != math.Trunc(f):
		return 0, fmt.Errorf("want an integer, got %s: a fraction is not rounded (write %s or %s)", shown(n),
			strconv.FormatFloat(math.Floor(f), 'f', -1, 64), strconv.FormatFloat(math.Ceil(f), 'f', -1, 64))
	case f < -(1<<63) || f >= 1<<63:
		return 0, fmt.Errorf("%s: out of the integer range", shown(n))
	}
	return int64(f), nil
}
