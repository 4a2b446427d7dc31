package tokenizer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/nikolalohinski/gonja/v2/exec"
)

// Chat templates see messages and tools as Python dicts, whose key order is the insertion
// order, and serialise them with json.dumps. To render byte-identical output, JSON objects
// become gonja Dicts (ordered pairs) rather than Go maps (which have no order).

// parseOrdered decodes JSON into template values: objects as exec.Dict in source order,
// arrays as []any, integers as int, other numbers as float64.
func parseOrdered(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeValue(dec)
	if err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("unexpected data after the JSON value")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch x := tok.(type) {
	case json.Delim:
		switch x {
		case '{':
			d := exec.Dict{Pairs: []*exec.Pair{}}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				d.Pairs = append(d.Pairs, &exec.Pair{Key: exec.AsValue(kt.(string)), Value: exec.AsValue(v)})
			}
			_, err := dec.Token()
			return d, err
		case '[':
			list := []any{}
			for dec.More() {
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				list = append(list, v)
			}
			_, err := dec.Token()
			return list, err
		}
	case json.Number:
		if i, err := strconv.Atoi(string(x)); err == nil {
			return i, nil
		}
		return x.Float64()
	}
	return tok, nil // string, bool, nil
}

// dictOf builds an ordered dict from alternating keys and values.
func dictOf(kv ...any) exec.Dict {
	d := exec.Dict{Pairs: []*exec.Pair{}}
	for i := 0; i+1 < len(kv); i += 2 {
		d.Pairs = append(d.Pairs, &exec.Pair{Key: exec.AsValue(kv[i]), Value: exec.AsValue(kv[i+1])})
	}
	return d
}

// jsonOptions are the json.dumps arguments transformers' tojson filter passes through.
type jsonOptions struct {
	indent      int // < 0: no indent
	ensureASCII bool
	sortKeys    bool
	itemSep     string
	keySep      string
	limit       int // the most bytes to write (0: no limit); indent and separators multiply sizes
}

// pyJSON writes v as Python's json.dumps would.
func pyJSON(v any, o jsonOptions) (string, error) {
	var b strings.Builder
	err := writeJSON(&b, v, o, 0)
	return b.String(), err
}

func writeJSON(b *strings.Builder, v any, o jsonOptions, depth int) error {
	if depth > 200 {
		return fmt.Errorf("tojson: nesting too deep")
	}
	switch x := v.(type) {
	case *exec.Value:
		if x == nil || x.IsNil() {
			b.WriteString("null")
			return nil
		}
		return writeJSON(b, x.Interface(), o, depth)
	case nil:
		b.WriteString("null")
	case string:
		writeJSONString(b, x, o.ensureASCII)
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case int:
		b.WriteString(strconv.Itoa(x))
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case float64:
		b.WriteString(pyFloat(x))
	case exec.Dict:
		return writeObject(b, dictPairs(x), o, depth)
	case *exec.Dict:
		return writeObject(b, dictPairs(*x), o, depth)
	case error:
		return x
	default:
		return writeReflect(b, reflect.ValueOf(v), o, depth)
	}
	return nil
}

type kv struct {
	key   string
	value any
}

func dictPairs(d exec.Dict) []kv {
	out := make([]kv, len(d.Pairs))
	for i, p := range d.Pairs {
		out[i] = kv{p.Key.String(), p.Value}
	}
	return out
}

func writeReflect(b *strings.Builder, rv reflect.Value, o jsonOptions, depth int) error {
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		items := make([]any, rv.Len())
		for i := range items {
			items[i] = rv.Index(i).Interface()
		}
		return writeArray(b, items, o, depth)
	case reflect.Map:
		var pairs []kv
		for _, k := range rv.MapKeys() {
			pairs = append(pairs, kv{fmt.Sprint(k.Interface()), rv.MapIndex(k).Interface()})
		}
		// A Go map has no insertion order: sorted keys are the only stable choice.
		sort.Slice(pairs, func(i, j int) bool { return pairs[i].key < pairs[j].key })
		return writeObject(b, pairs, o, depth)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		b.WriteString(strconv.FormatInt(rv.Int(), 10))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		b.WriteString(strconv.FormatUint(rv.Uint(), 10))
	case reflect.Float32:
		b.WriteString(pyFloat(rv.Float()))
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			b.WriteString("null")
			return nil
		}
		return writeJSON(b, rv.Elem().Interface(), o, depth)
	default:
		return fmt.Errorf("tojson: cannot serialise a value of type %s", rv.Type())
	}
	return nil
}

// room checks, before the separator and indented line of an item at depth are written, that
// they fit in the limit: indent and separators multiply the output's size.
func (o jsonOptions) room(b *strings.Builder, depth int) error {
	if o.limit > 0 && addSat(b.Len(), addSat(mulSat(o.indent, depth), len(o.itemSep)+len(o.keySep)+1)) > o.limit {
		return fmt.Errorf("tojson: the output would pass %d bytes", o.limit)
	}
	return nil
}

func newline(b *strings.Builder, o jsonOptions, depth int) {
	if o.indent >= 0 {
		b.WriteByte('\n')
		b.WriteString(strings.Repeat(" ", o.indent*depth))
	}
}

func writeArray(b *strings.Builder, items []any, o jsonOptions, depth int) error {
	if len(items) == 0 {
		b.WriteString("[]")
		return nil
	}
	b.WriteByte('[')
	for i, it := range items {
		if err := o.room(b, depth+1); err != nil {
			return err
		}
		if i > 0 {
			b.WriteString(o.itemSep)
		}
		newline(b, o, depth+1)
		if err := writeJSON(b, it, o, depth+1); err != nil {
			return err
		}
	}
	newline(b, o, depth)
	b.WriteByte(']')
	return nil
}

func writeObject(b *strings.Builder, pairs []kv, o jsonOptions, depth int) error {
	if len(pairs) == 0 {
		b.WriteString("{}")
		return nil
	}
	if o.sortKeys {
		sort.SliceStable(pairs, func(i, j int) bool { return pairs[i].key < pairs[j].key })
	}
	b.WriteByte('{')
	for i, p := range pairs {
		if err := o.room(b, depth+1); err != nil {
			return err
		}
		if i > 0 {
			b.WriteString(o.itemSep)
		}
		newline(b, o, depth+1)
		writeJSONString(b, p.key, o.ensureASCII)
		b.WriteString(o.keySep)
		if err := writeJSON(b, p.value, o, depth+1); err != nil {
			return err
		}
	}
	newline(b, o, depth)
	b.WriteByte('}')
	return nil
}

// writeJSONString escapes like json.dumps: the two-character escapes, \u00XX for other
// control characters, and (only with ensure_ascii) \uXXXX for non-ASCII.
func writeJSONString(b *strings.Builder, s string, ensureASCII bool) {
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			switch {
			case r < 0x20 || ensureASCII && r == 0x7F:
				fmt.Fprintf(b, `\u%04x`, r)
			case ensureASCII && r > 0x7F:
				if r > 0xFFFF {
					r -= 0x10000
					fmt.Fprintf(b, `\u%04x\u%04x`, 0xD800+(r>>10), 0xDC00+(r&0x3FF))
				} else {
					fmt.Fprintf(b, `\u%04x`, r)
				}
			default:
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
}

// pyFloat formats like Python's float.__repr__: shortest round-trip digits, fixed notation
// for exponents in [-4, 16), else d.ddde+XX.
func pyFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // -d.ddde±XX
	mant, expStr, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(expStr)
	if exp < -4 || exp >= 16 {
		sign := "+"
		if exp < 0 {
			sign, exp = "-", -exp
		}
		return fmt.Sprintf("%se%s%02d", mant, sign, exp)
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsAny(s, ".") {
		s += ".0"
	}
	return s
}
