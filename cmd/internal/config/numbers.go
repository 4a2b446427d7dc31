package config

import (
	"fmt"
	"math"
	"reflect"
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
