package env

import (
	"context"
	"math/big"
	"strings"
	"testing"
)

// FuzzParseToolCalls: any assistant text parses without panicking; every call has a name and a
// JSON-object argument; running the calls through a toolset counts every attempt and answers
// each one up to the per-message cap, then the rest in one message.
func FuzzParseToolCalls(f *testing.F) {
	for _, s := range []string{
		`<tool_call>{"name": "calculator", "arguments": {"expression": "1+2"}}</tool_call>`,
		`text <tool_call>{"name": "x", "arguments": "{\"a\": 1}"}</tool_call> more <tool_call>{bad`,
		`<|python_tag|>{"name": "calculator", "parameters": {"expression": "2^10"}}`,
		`{"name": "calculator", "parameters": {"expression": "-(3)"}}`,
		"</tool_call><tool_call></tool_call>",
		"plain answer #### 42",
		"<think>x <tool_call>{}</tool_call></think><tool_call>{\"name\": \"calculator\"}</tool_call>",
		`{"name": "calculator", "parameters": {"expression": "1"}}; {"name": "calculator", "parameters": {"expression": "2"}}`,
		"<|python_tag|>{\"name\": \"a\", \"parameters\": {}};\n{\"name\": \"b\", \"parameters\": \"{}\"};",
		`[{"name": "calculator", "parameters": {"expression": "3"}}, {"name": "x"}]`,
		`{"name": "a", "parameters": {}} {"name": "b"} tail`,
		"<|python_tag|>[]",
		"[{\"name\": 1}; {",
		strings.Repeat(`<tool_call>{"name": "calculator", "arguments": {"expression": "1"}}</tool_call><tool_call>x</tool_call>`, 4),
	} {
		f.Add(s)
	}
	ts, _ := NewToolset(Calculator{})
	f.Fuzz(func(t *testing.T, s string) {
		p := ParseToolCalls(s)
		for _, c := range p.Calls {
			if c.Function.Name == "" || len(c.Function.Arguments) == 0 || c.Function.Arguments[0] != '{' {
				t.Fatalf("bad call %+v from %q", c, s)
			}
		}
		reasoning := strings.Contains(s, thinkOpen) || strings.Contains(s, thinkClose)
		if !reasoning && strings.Contains(p.Content, qwenOpen) && len(p.Errors) == 0 {
			t.Fatalf("markup left in content without an error: %q", p.Content)
		}
		msgs, _, info := ts.Run(context.Background(), 0, p)
		n := p.Attempts()
		answered := min(n, DefaultMaxToolCalls)
		if n > answered {
			answered++ // one message for the calls past the cap
		}
		if info.ToolCalls != n || len(msgs) != answered || info.ToolSuccesses+info.ToolErrors != info.ToolCalls ||
			info.ToolCallsDropped != max(n-DefaultMaxToolCalls, 0) {
			t.Fatalf("counts %+v, %d messages for %d attempts", info, len(msgs), n)
		}
	})
}

// FuzzEvaluate: the calculator never panics or hangs on any expression, its results stay within
// the digit cap, and evaluation agrees with itself: (e) has e's value and -(e) its negation,
// whenever the extra nesting level and bytes are within the limits.
func FuzzEvaluate(f *testing.F) {
	for _, s := range []string{"1+2*3", "2^-3", "((1))", "1/0", "9^999", "-.5", "1,0.0", "2**3**2", "--+-3",
		"1/3^600 + 1/7^600", "(((2)))^(1^2)", "7 × 6 ÷ 3", strings.Repeat("(", 300) + "1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := Evaluate(s)
		if err != nil {
			return
		}
		if v == nil || checkSize(v) != nil {
			t.Fatalf("%q: value %v out of bounds", s, v)
		}
		if len(s)+3 > maxExpression || strings.Count(s, "(")+strings.Count(s, "^")+strings.Count(s, "**")+1 > maxDepth {
			return
		}
		if w, err := Evaluate("(" + s + ")"); err != nil || w.Cmp(v) != 0 {
			t.Fatalf("(%s) = %v, %v; want %v", s, w, err, v)
		}
		if w, err := Evaluate("-(" + s + ")"); err != nil || w.Cmp(new(big.Rat).Neg(v)) != 0 {
			t.Fatalf("-(%s) = %v, %v; want %v", s, w, err, FormatRat(new(big.Rat).Neg(v)))
		}
	})
}
