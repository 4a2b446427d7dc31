package tokenizer

import (
	"fmt"
	"strings"
	"sync"

	"github.com/nikolalohinski/gonja/v2/builtins"
	"github.com/nikolalohinski/gonja/v2/exec"
)

// The methods a chat template may call on values ("x".strip(), d.items()), guarded like the
// filters (chat_sandbox_ops.go). Methods that change a list or a dict are refused, as
// transformers' ImmutableSandboxedEnvironment refuses them; methods gonja has and these lists
// do not name do not exist for chat templates.

var (
	strMethods = []string{"capitalize", "capwords", "casefold", "center", "count", "endswith", "expandtabs",
		"find", "format", "format_map", "isalnum", "isalpha", "isascii", "isdecimal", "isdigit", "islower",
		"isnumeric", "isprintable", "isspace", "istitle", "isupper", "join", "ljust", "lower", "lstrip",
		"partition", "removeprefix", "removesuffix", "replace", "rfind", "rjust", "rpartition", "rsplit",
		"rstrip", "split", "splitlines", "startswith", "strip", "swapcase", "title", "upper", "zfill"}
	dictMethods  = []string{"keys", "values", "items", "get", "copy"}
	listMethods  = []string{"copy"}
	intMethods   = []string{"is_integer", "bit_length", "bit_count", "as_integer_ratio"}
	floatMethods = []string{"is_integer", "as_integer_ratio", "hex"}
	boolMethods  = []string{"string", "int", "bit_length", "bit_count", "as_integer_ratio"}

	// mutating are refused with transformers' reason rather than reported missing.
	mutating = map[string]bool{"append": true, "extend": true, "insert": true, "pop": true, "remove": true,
		"reverse": true, "sort": true, "clear": true, "setdefault": true, "update": true, "popitem": true}
)

// strEstimates are the string methods whose result can be much larger than the string.
var strEstimates = map[string]estimator{
	"center": widthEstimate, "ljust": widthEstimate, "rjust": widthEstimate, "zfill": widthEstimate,
	"expandtabs": func(in *exec.Value, p *exec.VarArgs) int {
		s := in.String()
		return addSat(len(s), mulSat(strings.Count(s, "\t"), max(argInt(p, 1, "tabsize", 8), 8)))
	},
	"replace": func(in *exec.Value, p *exec.VarArgs) int {
		return estimateReplace(in.String(), argString(p, 0, "old", " "), argString(p, 1, "new", " "))
	},
	"join": func(in *exec.Value, p *exec.VarArgs) int {
		if items := argument(p, 0, "iterable"); items != nil {
			return estimateJoin(items, in.String())
		}
		return 0
	},
	"format":     func(in *exec.Value, p *exec.VarArgs) int { return estimateFormat(in.String(), p) },
	"format_map": func(in *exec.Value, p *exec.VarArgs) int { return estimateFormat(in.String(), p) },
}

// widthEstimate: padding to width runes of up to 4 bytes each.
func widthEstimate(in *exec.Value, p *exec.VarArgs) int {
	return max(len(in.String()), mulSat(argInt(p, 0, "width", 0), 4))
}

// guardedMethods is the render's method set: the string, dict and list methods charge b; the
// number methods take constant time and are shared.
func guardedMethods(b *renderBudget) exec.Methods {
	base := builtins.Methods
	n := numberMethods()
	return exec.Methods{
		Str:   guardMethods(b, base.Str, strMethods, strEstimates),
		Dict:  guardMethods(b, orderedDictMethods(base.Dict), dictMethods, nil),
		List:  guardMethods(b, base.List, listMethods, nil),
		Int:   n.Int,
		Float: n.Float,
		Bool:  n.Bool,
	}
}

var numberMethods = sync.OnceValue(func() exec.Methods {
	base := builtins.Methods
	return exec.Methods{Int: pick(base.Int, intMethods), Float: pick(base.Float, floatMethods), Bool: pick(base.Bool, boolMethods)}
})

// pick is the named methods of base.
func pick[T any](base *exec.MethodSet[T], names []string) *exec.MethodSet[T] {
	set := map[string]exec.Method[T]{}
	for _, name := range names {
		if m, ok := base.Get(name); ok {
			set[name] = m
		}
	}
	return exec.NewMethodSet(set)
}

func guardMethods[T any](b *renderBudget, base *exec.MethodSet[T], names []string, est map[string]estimator) *exec.MethodSet[T] {
	set := map[string]exec.Method[T]{}
	for _, name := range names {
		m, ok := base.Get(name)
		if !ok {
			continue
		}
		e := est[name]
		set[name] = func(self T, selfValue *exec.Value, args *exec.VarArgs) (any, error) {
			what := "method " + name
			if err := b.step(1 + workOf(selfValue, args)); err != nil {
				return nil, err
			}
			if !selfValue.IsString() { // gonja formats the receiver for an error message it may not need
				if err := b.charge(len(selfValue.String()), what); err != nil {
					return nil, err
				}
			}
			if e != nil {
				if err := b.check(e(selfValue, args), what); err != nil {
					return nil, err
				}
			}
			out, err := m(self, selfValue, args)
			if err != nil {
				return nil, err
			}
			return out, b.charge(valueSize(exec.AsValue(out)), what)
		}
	}
	for name := range mutating {
		set[name] = func(T, *exec.Value, *exec.VarArgs) (any, error) {
			return nil, fmt.Errorf("%s() is refused: a chat template cannot change the data it is given (as in transformers' immutable sandbox)", name)
		}
	}
	return exec.NewMethodSet(set)
}
