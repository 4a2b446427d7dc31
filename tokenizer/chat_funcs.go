package tokenizer

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/nikolalohinski/gonja/v2/exec"
)

func stringReader(s string) io.Reader { return strings.NewReader(s) }

// toJSON is transformers' tojson filter: json.dumps(x, ensure_ascii=False, indent=indent,
// separators=separators, sort_keys=sort_keys); it fails rather than write more than limit bytes.
func toJSON(in *exec.Value, params *exec.VarArgs, limit int) *exec.Value {
	if in.IsError() {
		return in
	}
	o := jsonOptions{indent: -1, limit: limit}
	kw := func(name string, pos int) *exec.Value {
		if v, ok := params.KwArgs[name]; ok {
			return v
		}
		if pos < len(params.Args) {
			return params.Args[pos]
		}
		return nil
	}
	if v := kw("ensure_ascii", 0); v != nil {
		o.ensureASCII = v.IsTrue()
	}
	if v := kw("indent", 1); v != nil && !v.IsNil() {
		if !v.IsInteger() {
			return exec.AsValue(fmt.Errorf("tojson: indent must be an integer, got %s", v.String()))
		}
		o.indent = v.Integer()
	}
	if v := kw("sort_keys", 3); v != nil {
		o.sortKeys = v.IsTrue()
	}
	o.itemSep, o.keySep = ", ", ": "
	if o.indent >= 0 {
		o.itemSep = ","
	}
	if v := kw("separators", 2); v != nil && !v.IsNil() {
		if v.Len() != 2 {
			return exec.AsValue(fmt.Errorf("tojson: separators must be a pair of strings"))
		}
		o.itemSep, o.keySep = v.Index(0).String(), v.Index(1).String()
	}
	s, err := pyJSON(in, o)
	if err != nil {
		return exec.AsValue(err)
	}
	return exec.AsSafeValue(s)
}

// filterItems is dict.items() in insertion order, as [key, value] pairs.
func filterItems(_ *exec.Evaluator, in *exec.Value, _ *exec.VarArgs) *exec.Value {
	if in.IsError() {
		return in
	}
	if in.IsNil() {
		return exec.AsValue([]any{})
	}
	if !in.IsDict() {
		return exec.AsValue(fmt.Errorf("items: %s is not a mapping", in.String()))
	}
	var out []any
	in.Iterate(func(_, _ int, k, v *exec.Value) bool {
		out = append(out, []any{k.Interface(), v.Interface()})
		return true
	}, func() {})
	if out == nil {
		out = []any{}
	}
	return exec.AsValue(out)
}

// strftime implements the C strftime directives chat templates use for dates.
func strftime(t time.Time, format string) string {
	repl := map[byte]string{
		'd': t.Format("02"), 'm': t.Format("01"), 'Y': t.Format("2006"), 'y': t.Format("06"),
		'b': t.Format("Jan"), 'B': t.Format("January"), 'a': t.Format("Mon"), 'A': t.Format("Monday"),
		'H': t.Format("15"), 'M': t.Format("04"), 'S': t.Format("05"), 'I': t.Format("03"),
		'p': t.Format("PM"), 'j': fmt.Sprintf("%03d", t.YearDay()), '%': "%",
		'e': fmt.Sprintf("%2d", t.Day()),
	}
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		if format[i] == '%' && i+1 < len(format) {
			if r, ok := repl[format[i+1]]; ok {
				b.WriteString(r)
				i++
				continue
			}
		}
		b.WriteByte(format[i])
	}
	return b.String()
}

func dictString(v any, key string) string {
	d, ok := v.(exec.Dict)
	if !ok {
		return ""
	}
	for _, p := range d.Pairs {
		if p.Key.String() == key {
			if p.Value.IsNil() {
				return ""
			}
			return p.Value.String()
		}
	}
	return ""
}

// fallbackChat renders plain ChatML, or the Llama 3 header format when the vocabulary has
// Llama's markers. Used only when a tokenizer ships no chat template.
func fallbackChat(t *Tokenizer, messages []any, addGenerationPrompt bool) string {
	var b strings.Builder
	if _, ok := t.TokenID("<|start_header_id|>"); ok {
		b.WriteString(t.config.BOSToken)
		for _, m := range messages {
			fmt.Fprintf(&b, "<|start_header_id|>%s<|end_header_id|>\n\n%s<|eot_id|>",
				dictString(m, "role"), strings.TrimSpace(dictString(m, "content")))
		}
		if addGenerationPrompt {
			b.WriteString("<|start_header_id|>assistant<|end_header_id|>\n\n")
		}
		return b.String()
	}
	for _, m := range messages {
		fmt.Fprintf(&b, "<|im_start|>%s\n%s<|im_end|>\n", dictString(m, "role"), dictString(m, "content"))
	}
	if addGenerationPrompt {
		b.WriteString("<|im_start|>assistant\n")
	}
	return b.String()
}

// orderedDictMethods keeps gonja's dict methods but makes keys(), values() and items()
// follow insertion order, as Python's dict does (gonja sorts the keys).
func orderedDictMethods(base *exec.MethodSet[map[string]any]) *exec.MethodSet[map[string]any] {
	set := map[string]exec.Method[map[string]any]{}
	for _, name := range []string{"get", "pop", "setdefault", "update", "copy", "clear"} {
		if m, ok := base.Get(name); ok {
			set[name] = m
		}
	}
	ordered := func(pick func(k, v *exec.Value) any) exec.Method[map[string]any] {
		return func(_ map[string]any, self *exec.Value, args *exec.VarArgs) (any, error) {
			if err := args.Take(); err != nil {
				return nil, exec.ErrInvalidCall(err)
			}
			out := []any{}
			self.Iterate(func(_, _ int, k, v *exec.Value) bool {
				out = append(out, pick(k, v))
				return true
			}, func() {})
			return out, nil
		}
	}
	set["keys"] = ordered(func(k, _ *exec.Value) any { return k.Interface() })
	set["values"] = ordered(func(_, v *exec.Value) any { return v.Interface() })
	set["items"] = ordered(func(k, v *exec.Value) any { return []any{k.Interface(), v.Interface()} })
	return exec.NewMethodSet(set)
}
