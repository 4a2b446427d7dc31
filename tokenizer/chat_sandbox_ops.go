package tokenizer

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/nikolalohinski/gonja/v2/builtins"
	"github.com/nikolalohinski/gonja/v2/exec"
)

// The guarded operations of a render (see chat_sandbox.go): the operators, printing, range and
// lipsum, and every filter and method, each charged to the render's budget and, where an
// operation multiplies sizes, checked before it allocates.

// estimator returns how many bytes an operation on in with params may build, before it runs.
type estimator func(in *exec.Value, params *exec.VarArgs) int

// slot is what one list item costs, whatever it holds (its own size was charged when built).
const slot = 16

// renderVars are the guarded functions a render sees besides the template's variables.
func (b *renderBudget) renderVars() map[string]any {
	return map[string]any{
		budgetKey: b, fnMul: b.binary(opMul), fnAdd: b.binary(opAdd), fnConcat: b.binary(opConcat),
		fnWork: b.workOn, "range": b.rangeFn, "lipsum": b.lipsum,
	}
}

// binaryOp is one of the operators that can build large values: its result as gonja's evaluator
// computes it, and the bytes that result takes, known before it is built.
type binaryOp struct {
	symbol string
	apply  func(l, r *exec.Value) *exec.Value
	size   func(l, r *exec.Value) int
}

// The three operators, as gonja's evalBinaryExpression evaluates them (there is no list
// repetition: [1] * 2 is 0; "a" * -1 panics, which execute turns into an error).
var (
	opMul = binaryOp{symbol: "*",
		apply: func(l, r *exec.Value) *exec.Value {
			switch {
			case l.IsFloat() || r.IsFloat():
				return exec.AsValue(l.Float() * r.Float())
			case l.IsString():
				return exec.AsValue(strings.Repeat(l.String(), r.Integer()))
			}
			return exec.AsValue(l.Integer() * r.Integer())
		},
		size: func(l, r *exec.Value) int {
			if l.IsString() && !l.IsFloat() && !r.IsFloat() && r.Integer() > 0 {
				return mulSat(len(l.String()), r.Integer())
			}
			return 0
		}}
	opAdd = binaryOp{symbol: "+",
		apply: func(l, r *exec.Value) *exec.Value {
			switch {
			case l.IsList():
				if !r.IsList() {
					return exec.AsValue(fmt.Errorf("unable to concatenate a list to %s", short(r)))
				}
				out := make([]any, 0, l.Len()+r.Len())
				for _, v := range []*exec.Value{l, r} {
					v.Iterate(func(_, _ int, k, _ *exec.Value) bool {
						out = append(out, k.Interface())
						return true
					}, func() {})
				}
				return exec.AsValue(out)
			case l.IsFloat() || r.IsFloat():
				return exec.AsValue(l.Float() + r.Float())
			case l.IsString() || r.IsString():
				return exec.AsValue(l.String() + r.String())
			}
			return exec.AsValue(l.Integer() + r.Integer())
		},
		size: func(l, r *exec.Value) int {
			switch {
			case l.IsList() && r.IsList():
				return slot * (l.Len() + r.Len())
			case l.IsFloat() || r.IsFloat():
				return 0
			case l.IsString() || r.IsString():
				return len(l.String()) + len(r.String())
			}
			return 0
		}}
	opConcat = binaryOp{symbol: "~",
		apply: func(l, r *exec.Value) *exec.Value { return exec.AsValue(l.String() + r.String()) },
		size:  func(l, r *exec.Value) int { return len(l.String()) + len(r.String()) }}
)

// binary returns the guard of op: it refuses a result larger than the budget before it is built,
// then charges it.
func (b *renderBudget) binary(op binaryOp) func(*exec.VarArgs) *exec.Value {
	return func(args *exec.VarArgs) *exec.Value {
		if len(args.Args) != 2 {
			return exec.AsValue(fmt.Errorf("operator %s needs two operands", op.symbol))
		}
		l, r := args.Args[0], args.Args[1]
		if l.IsList() && r.IsList() {
			if err := b.step(l.Len() + r.Len()); err != nil {
				return exec.AsValue(err)
			}
		}
		n := op.size(l, r)
		if b.err != nil || n > b.bytes { // the message only when it fails: this runs for every +
			return exec.AsValue(b.check(n, fmt.Sprintf("%s %s %s", short(l), op.symbol, short(r))))
		}
		b.bytes -= n
		return op.apply(l, r)
	}
}

// work is the steps an operation linear in v costs beyond its one: an item of a list or dict is a
// step, and so is a KiB of a string (string operations run natively, far faster per byte).
func work(v *exec.Value) int {
	switch {
	case v == nil:
		return 0
	case v.IsString():
		return len(v.String()) >> 10
	case v.IsList() || v.IsDict():
		return v.Len()
	}
	return 0
}

// workOf is the work of a call's input and arguments.
func workOf(in *exec.Value, args *exec.VarArgs) int {
	n := work(in)
	for _, a := range args.Args {
		n += work(a)
	}
	for _, a := range args.KwArgs {
		n += work(a)
	}
	return n
}

// workOn charges the work of comparing or searching v (in, ==, !=, tests) and returns v.
func (b *renderBudget) workOn(args *exec.VarArgs) *exec.Value {
	if len(args.Args) != 1 {
		return exec.AsValue(fmt.Errorf("work needs one value"))
	}
	if err := b.step(work(args.Args[0])); err != nil {
		return exec.AsValue(err)
	}
	return args.Args[0]
}

// rangeFn is Python's range as a list, refused past maxRange items as Jinja's sandbox refuses
// it (gonja's own yields items from a goroutine, without bound).
func (b *renderBudget) rangeFn(args *exec.VarArgs) *exec.Value {
	start, stop, step := 0, 0, 1
	ints := make([]int, len(args.Args))
	for i, a := range args.Args {
		if !a.IsInteger() {
			return exec.AsValue(fmt.Errorf("range: argument %d is %s, not an integer", i+1, short(a)))
		}
		ints[i] = a.Integer()
	}
	switch len(ints) {
	case 1:
		stop = ints[0]
	case 2:
		start, stop = ints[0], ints[1]
	case 3:
		start, stop, step = ints[0], ints[1], ints[2]
	default:
		return exec.AsValue(fmt.Errorf("range takes 1 to 3 integers, got %d arguments", len(ints)))
	}
	if step == 0 {
		return exec.AsValue(fmt.Errorf("range: step must not be 0"))
	}
	n := 0.0 // in float64: stop - start can overflow an int
	if step > 0 && stop > start || step < 0 && stop < start {
		n = math.Ceil((float64(stop) - float64(start)) / float64(step))
	}
	if n > float64(b.lim.maxRange) {
		return exec.AsValue(b.fail(fmt.Errorf("range(%d, %d, %d) would yield %.0f items; the sandbox allows %d (Jinja's MAX_RANGE)",
			start, stop, step, n, b.lim.maxRange)))
	}
	if err := b.step(int(n)); err != nil {
		return exec.AsValue(err)
	}
	if err := b.charge(slot*int(n), "range"); err != nil {
		return exec.AsValue(err)
	}
	out := make([]int, int(n))
	for i := range out {
		out[i] = start + i*step
	}
	return exec.AsValue(out)
}

// lipsum is Jinja's lorem ipsum, with its size (up to n paragraphs of max words) checked first.
func (b *renderBudget) lipsum(e *exec.Evaluator, args *exec.VarArgs) *exec.Value {
	n, words := argInt(args, 0, "n", 5), argInt(args, 3, "max", 100)
	if err := b.check(mulSat(mulSat(n, words), 16), "lipsum"); err != nil {
		return exec.AsValue(err)
	}
	return guardedGlobal("lipsum")(e, args)
}

func guardedGlobal(name string) func(*exec.Evaluator, *exec.VarArgs) *exec.Value {
	v, _ := builtins.GlobalFunctions.Get(name)
	fn, ok := v.(func(*exec.Evaluator, *exec.VarArgs) *exec.Value)
	if !ok {
		return func(*exec.Evaluator, *exec.VarArgs) *exec.Value {
			return exec.AsValue(fmt.Errorf("%s is not available", name))
		}
	}
	return fn
}

// filterEstimates are the filters whose output can be much larger than their input.
var filterEstimates = map[string]estimator{
	"center": func(in *exec.Value, p *exec.VarArgs) int { return max(len(in.String()), argInt(p, 0, "width", 0)) },
	"indent": estimateIndent,
	"format": func(in *exec.Value, p *exec.VarArgs) int { return estimateFormat(in.String(), p) },
	"join":   func(in *exec.Value, p *exec.VarArgs) int { return estimateJoin(in, argString(p, 0, "d", "")) },
	"replace": func(in *exec.Value, p *exec.VarArgs) int {
		return estimateReplace(in.String(), argString(p, 0, "old", ""), argString(p, 1, "new", ""))
	},
	"batch": func(in *exec.Value, p *exec.VarArgs) int {
		return slot * (in.Len() + max(argInt(p, 0, "linecount", 0), 0))
	},
	"slice": func(in *exec.Value, p *exec.VarArgs) int {
		return slot * (in.Len() + 2*max(argInt(p, 0, "slices", 0), 0))
	},
	"list":   func(in *exec.Value, _ *exec.VarArgs) int { return 4 * slot * max(in.Len(), len(in.String())) },
	"escape": func(in *exec.Value, _ *exec.VarArgs) int { return 6 * len(in.String()) },
	"urlize": func(in *exec.Value, _ *exec.VarArgs) int { return 8 * len(in.String()) },
}

func init() {
	filterEstimates["e"], filterEstimates["forceescape"] = filterEstimates["escape"], filterEstimates["escape"]
	filterEstimates["urlencode"] = filterEstimates["escape"]
}

// chatFilters are the filters a chat template may use: gonja's, with transformers' tojson and
// items, and a wordwrap that is linear in its input (gonja's is quadratic). Filters not listed
// do not exist for chat templates, so a new gonja filter is never reachable unguarded.
var chatFilters = []string{"abs", "attr", "batch", "capitalize", "center", "default", "d", "dictsort", "e",
	"escape", "filesizeformat", "first", "float", "forceescape", "format", "groupby", "indent", "int", "items",
	"join", "last", "length", "count", "list", "lower", "map", "max", "min", "pprint", "random", "rejectattr",
	"reject", "replace", "reverse", "round", "safe", "selectattr", "select", "slice", "sort", "string",
	"striptags", "sum", "title", "tojson", "trim", "truncate", "unique", "upper", "urlencode", "urlize",
	"wordcount", "wordwrap", "xmlattr"}

// constantFilters take the same time whatever the size of their input (templates call
// messages|length once per message): they cost one step, the others one plus their work.
var constantFilters = map[string]bool{"length": true, "count": true, "first": true, "last": true, "default": true,
	"d": true, "safe": true, "int": true, "float": true, "abs": true, "round": true, "attr": true, "random": true,
	"filesizeformat": true}

// sandboxFilters is the filter set of every chat template: each filter costs a step (and its
// work), is checked against its estimate when it has one, and its result is charged, all to the
// budget of the render that calls it.
var sandboxFilters = sync.OnceValue(func() *exec.FilterSet {
	set := map[string]exec.FilterFunction{}
	for _, name := range chatFilters {
		if f, ok := baseFilter(name); ok {
			set[name] = guardFilter(name, f)
		}
	}
	return exec.NewFilterSet(set)
})

func guardFilter(name string, f exec.FilterFunction) exec.FilterFunction {
	est, what := filterEstimates[name], "filter "+name
	return func(e *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
		b, err := budgetOf(e.Environment.Context)
		if err != nil {
			return exec.AsValue(err)
		}
		cost := 1
		if !constantFilters[name] {
			cost += workOf(in, params)
		}
		if err := b.step(cost); err != nil {
			return exec.AsValue(err)
		}
		if est != nil {
			if err := b.check(est(in, params), what); err != nil {
				return exec.AsValue(err)
			}
		}
		out := f(e, in, params)
		if err := b.charge(valueSize(out), what); err != nil {
			return exec.AsValue(err)
		}
		return out
	}
}

func baseFilter(name string) (exec.FilterFunction, bool) {
	switch name {
	case "tojson":
		return func(e *exec.Evaluator, in *exec.Value, p *exec.VarArgs) *exec.Value {
			b, err := budgetOf(e.Environment.Context)
			if err != nil {
				return exec.AsValue(err)
			}
			return toJSON(in, p, b.bytes)
		}, true
	case "items":
		return filterItems, true
	case "wordwrap":
		return filterWordwrap, true
	}
	return builtins.Filters.Get(name)
}

// valueSize is what a value built by an operation is charged: its bytes, or a slot per item.
func valueSize(v *exec.Value) int {
	switch {
	case v == nil || v.IsError() || v.IsNil():
		return 0
	case v.IsString():
		return len(v.String())
	case v.IsList() || v.IsDict():
		return slot * v.Len()
	}
	return slot
}

// argument fetches a filter's or method's argument by position or keyword without consuming it
// (VarArgs.Take does).
func argument(p *exec.VarArgs, pos int, name string) *exec.Value {
	if v, ok := p.KwArgs[name]; ok {
		return v
	}
	if pos < len(p.Args) {
		return p.Args[pos]
	}
	return nil
}

func argInt(p *exec.VarArgs, pos int, name string, def int) int {
	if v := argument(p, pos, name); v != nil && v.IsInteger() {
		return v.Integer()
	}
	return def
}

func argString(p *exec.VarArgs, pos int, name, def string) string {
	if v := argument(p, pos, name); v != nil {
		return v.String()
	}
	return def
}

// estimateIndent: every line gets the indent (an int width or a string).
func estimateIndent(in *exec.Value, p *exec.VarArgs) int {
	w := 4
	if v := argument(p, 0, "width"); v != nil {
		if v.IsString() {
			w = len(v.String())
		} else {
			w = v.Integer()
		}
	}
	s := in.String()
	return len(s) + mulSat(strings.Count(s, "\n")+1, max(w, 0))
}

// estimateFormat bounds a %- or {}-format: the format, each argument once per field (fields can
// repeat an argument), and every number written in the format as a width.
func estimateFormat(format string, p *exec.VarArgs) int {
	longest := 0
	for _, a := range p.Args {
		longest = max(longest, len(a.String()))
	}
	for _, a := range p.KwArgs {
		longest = max(longest, len(a.String()))
	}
	fields := strings.Count(format, "%") + strings.Count(format, "{")
	n := len(format) + mulSat(fields, longest+32)
	num := 0
	for i := 0; i <= len(format); i++ {
		if i < len(format) && format[i] >= '0' && format[i] <= '9' {
			num = min(mulSat(num, 10)+int(format[i]-'0'), math.MaxInt/4)
			continue
		}
		n, num = addSat(n, num), 0
	}
	return n
}

func estimateJoin(in *exec.Value, sep string) int {
	n := 0
	in.Iterate(func(_, _ int, k, _ *exec.Value) bool {
		n = addSat(n, len(k.String())+len(sep))
		return true
	}, func() {})
	return n
}

func estimateReplace(s, old, new string) int {
	count := len(s) + 1 // replacing "" inserts new between every two runes
	if old != "" {
		count = strings.Count(s, old)
	}
	return addSat(len(s), mulSat(count, len(new)))
}

// filterWordwrap is gonja's wordwrap (words of each paragraph joined by single spaces, a new
// line before a word that would pass width runes), in linear time: gonja's copies and re-counts
// the whole line for every word.
func filterWordwrap(_ *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
	if in.IsError() {
		return in
	}
	width := 79
	if err := params.Take(exec.PositionalArgument("width", exec.AsValue(79), exec.IntArgument(&width))); err != nil {
		return exec.AsValue(exec.ErrInvalidCall(err))
	}
	if width <= 0 {
		return in
	}
	var out strings.Builder
	for i, paragraph := range strings.Split(in.String(), "\n") {
		if i > 0 {
			out.WriteByte('\n')
		}
		line := -1 // runes on the current line; -1 before its first word
		for _, word := range strings.Fields(paragraph) {
			n := utf8.RuneCountInString(word)
			switch {
			case line < 0:
				line = n
			case line+1+n <= width:
				out.WriteByte(' ')
				line += 1 + n
			default:
				out.WriteByte('\n')
				line = n
			}
			out.WriteString(word)
		}
	}
	return exec.AsValue(out.String())
}

// mulSat and addSat saturate at MaxInt instead of overflowing, so that a size estimate of a
// hostile operation can only be too large.
func mulSat(a, b int) int {
	if a <= 0 || b <= 0 {
		return 0
	}
	if a > math.MaxInt/b {
		return math.MaxInt
	}
	return a * b
}

func addSat(a, b int) int {
	if a > math.MaxInt-b {
		return math.MaxInt
	}
	return a + b
}

// short is a value for an error message: its type and, for strings, length.
func short(v *exec.Value) string {
	switch {
	case v.IsString():
		return fmt.Sprintf("a string of %d bytes", len(v.String()))
	case v.IsList():
		return fmt.Sprintf("a list of %d items", v.Len())
	case v.IsNumber() || v.IsBool() || v.IsNil():
		return v.String()
	}
	return reflect.TypeOf(v.Interface()).String()
}
