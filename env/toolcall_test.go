package env

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestParseQwenToolCalls(t *testing.T) {
	text := "Let me compute.\n<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"2+2\"}}\n</tool_call>\n<tool_call>{\"name\":\"search\",\"arguments\":\"{\\\"query\\\": \\\"x\\\"}\"}</tool_call>"
	p := ParseToolCalls(text)
	if p.Content != "Let me compute." || len(p.Calls) != 2 || len(p.Errors) != 0 {
		t.Fatalf("got %+v", p)
	}
	if p.Calls[0].Function.Name != "calculator" || string(p.Calls[0].Function.Arguments) != `{"expression":"2+2"}` {
		t.Errorf("call 0: %+v", p.Calls[0])
	}
	// Arguments written as a JSON string holding an object are unwrapped.
	if p.Calls[1].Function.Name != "search" || string(p.Calls[1].Function.Arguments) != `{"query":"x"}` {
		t.Errorf("call 1: %s %s", p.Calls[1].Function.Name, p.Calls[1].Function.Arguments)
	}
}

func TestParseQwenMalformed(t *testing.T) {
	cases := map[string]string{
		"<tool_call>{not json}</tool_call>":                          "not valid JSON",
		"<tool_call>{\"arguments\": {}}</tool_call>":                 `missing "name"`,
		"<tool_call>{\"name\": \"f\", \"arguments\": 3}</tool_call>": "must be a JSON object",
		"<tool_call>{\"name\": \"f\"":                                "not closed",
		"text </tool_call>":                                          "without <tool_call>",
	}
	for in, want := range cases {
		p := ParseToolCalls(in)
		if len(p.Calls) != 0 || len(p.Errors) != 1 || !strings.Contains(p.Errors[0], want) {
			t.Errorf("%q: want one error containing %q, got %+v", in, want, p)
		}
	}
}

func TestParseLlamaToolCall(t *testing.T) {
	for _, in := range []string{
		`{"name": "calculator", "parameters": {"expression": "3*4"}}`,
		"<|python_tag|>{\"name\": \"calculator\", \"parameters\": {\"expression\": \"3*4\"}}",
		` {"name": "calculator", "arguments": {"expression": "3*4"}} `,
	} {
		p := ParseToolCalls(in)
		if len(p.Calls) != 1 || p.Calls[0].Function.Name != "calculator" || string(p.Calls[0].Function.Arguments) != `{"expression":"3*4"}` || p.Content != "" {
			t.Errorf("%q: got %+v", in, p)
		}
	}
	// Prose, or JSON that names no function, is not a call.
	for _, in := range []string{"The answer is 12.", `{"answer": 12}`, ""} {
		if p := ParseToolCalls(in); p.Attempts() != 0 {
			t.Errorf("%q: parsed as a call: %+v", in, p)
		}
	}
	if p := ParseToolCalls("<|python_tag|>print(1)"); len(p.Errors) != 1 {
		t.Errorf("python_tag with non-JSON: %+v", p)
	}
}

type panicky struct{}

func (panicky) Name() string                { return "boom" }
func (panicky) Description() string         { return "panics" }
func (panicky) Parameters() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }
func (panicky) Call(context.Context, json.RawMessage) (string, error) {
	panic("tool bug")
}

func TestToolsetRun(t *testing.T) {
	ts, err := NewToolset(Calculator{}, panicky{})
	if err != nil {
		t.Fatal(err)
	}
	p := ParseToolCalls(`<tool_call>{"name": "calculator", "arguments": {"expression": "6*7"}}</tool_call>
<tool_call>{"name": "nope", "arguments": {}}</tool_call>
<tool_call>{"name": "calculator", "arguments": {"expr": "1"}}</tool_call>
<tool_call>{"name": "boom", "arguments": {}}</tool_call>
<tool_call>broken</tool_call>`)
	msgs, _, info := ts.Run(context.Background(), 0, p)
	// 5 attempts: 1 success; unknown tool, bad argument, panic and bad JSON are errors.
	if info.ToolCalls != 5 || info.ToolSuccesses != 1 || info.ToolErrors != 4 {
		t.Fatalf("info %+v", info)
	}
	byContent := ""
	for _, m := range msgs {
		if m.Role != RoleTool {
			t.Fatalf("role %q", m.Role)
		}
		byContent += m.Content + "\n"
	}
	// One answer per attempt, in the order written.
	for i, want := range []string{"42", `unknown tool "nope" (available: calculator, boom)`, "missing required argument \"expression\"", "tool boom failed: tool bug", "not valid JSON"} {
		if !strings.Contains(msgs[i].Content, want) {
			t.Errorf("message %d: want %q in\n%s", i, want, byContent)
		}
	}
	if msgs[0].ToolCallID != "call_0_0" || msgs[0].Name != "calculator" || msgs[3].ToolCallID != "call_0_3" {
		t.Errorf("ids: %+v", msgs)
	}
	// A malformed call between two good ones is answered between them.
	p = ParseToolCalls(`<tool_call>{"name": "calculator", "arguments": {"expression": "1+1"}}</tool_call>
<tool_call>{broken</tool_call>
<tool_call>{"name": "calculator", "arguments": {"expression": "2+2"}}</tool_call>`)
	msgs, _, _ = ts.Run(context.Background(), 1, p)
	if len(msgs) != 3 || msgs[0].Content != "2" || !strings.HasPrefix(msgs[1].Content, "Error: tool call error: not valid JSON") || msgs[2].Content != "4" || msgs[2].ToolCallID != "call_1_1" {
		t.Errorf("order: %+v", msgs)
	}
	if _, err := NewToolset(Calculator{}, Calculator{}); err == nil {
		t.Fatal("duplicate tool accepted")
	}
	spec, _ := json.Marshal(ts.Specs()[0])
	want := `{"type":"function","function":{"name":"calculator","description":"Evaluate an arithmetic expression exactly. Supports + - * / ^, parentheses and decimals.","parameters":{"type":"object","properties":{"expression":{"type":"string","description":"The expression, e.g. 123 * (45 + 6)"}},"required":["expression"]}}}`
	if string(spec) != want {
		t.Fatalf("spec\n%s\nwant\n%s", spec, want)
	}
}

// Calls are looked for after the reasoning only.
func TestParseSkipsReasoning(t *testing.T) {
	text := "<think>\nMaybe <tool_call>{\"name\": \"x\"}</tool_call> is wrong.\n</think>\n\n<tool_call>{\"name\": \"calculator\", \"arguments\": {\"expression\": \"1\"}}</tool_call>"
	p := ParseToolCalls(text)
	if len(p.Calls) != 1 || p.Calls[0].Function.Name != "calculator" || len(p.Errors) != 0 {
		t.Fatalf("%+v", p)
	}
	if p.Content != "<think>\nMaybe <tool_call>{\"name\": \"x\"}</tool_call> is wrong.\n</think>" {
		t.Fatalf("content %q", p.Content)
	}
	if p := ParseToolCalls("<think>cut off <tool_call>{\"name\": \"calculator\"}</tool_call>"); p.Attempts() != 0 {
		t.Fatalf("unclosed think: %+v", p)
	}
	if p := ParseToolCalls("<think></think>The answer is 4."); p.Attempts() != 0 || p.Content != "<think></think>\n\nThe answer is 4." {
		t.Fatalf("plain: %+v", p)
	}
}

// The JSON shapes are the ones Hugging Face chat templates and the OpenAI API use.
func TestMessageJSONShape(t *testing.T) {
	p := ParseToolCalls(`Checking.<tool_call>{"name": "calculator", "arguments": {"expression": "2*3", "b": 1}}</tool_call>`)
	p.Calls[0].ID = "call_0_0"
	m := []Message{
		{Role: RoleAssistant, Content: p.Content, ToolCalls: p.Calls},
		{Role: RoleTool, Name: "calculator", ToolCallID: "call_0_0", Content: "6"},
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"role":"assistant","content":"Checking.","tool_calls":[{"id":"call_0_0","type":"function","function":{"name":"calculator","arguments":{"expression":"2*3","b":1}}}]},{"role":"tool","content":"6","tool_call_id":"call_0_0","name":"calculator"}]`
	if string(b) != want {
		t.Fatalf("got\n%s\nwant\n%s", b, want)
	}
}

// Llama 3.1-3.3 write parallel calls as JSON objects separated by ";" (or on separate lines),
// or as a JSON list; each becomes its own call, in order.
func TestParseLlamaSeveralCalls(t *testing.T) {
	two := []string{
		`{"name": "calculator", "parameters": {"expression": "3*4"}}; {"name": "search", "parameters": {"query": "Paris", "k": 2}}`,
		"<|python_tag|>{\"name\": \"calculator\", \"parameters\": {\"expression\": \"3*4\"}};{\"name\": \"search\", \"parameters\": {\"query\": \"Paris\", \"k\": 2}};",
		"{\"name\": \"calculator\", \"parameters\": {\"expression\": \"3*4\"}}\n{\"name\": \"search\", \"parameters\": {\"query\": \"Paris\", \"k\": 2}}",
		`[{"name": "calculator", "parameters": {"expression": "3*4"}}, {"name": "search", "parameters": {"query": "Paris", "k": 2}}]`,
		`<|python_tag|>[{"name": "calculator", "arguments": {"expression": "3*4"}}, {"name": "search", "parameters": "{\"query\": \"Paris\", \"k\": 2}"}]`,
	}
	for _, in := range two {
		p := ParseToolCalls(in)
		if len(p.Calls) != 2 || len(p.Errors) != 0 || p.Content != "" {
			t.Errorf("%q: want 2 calls, got %+v", in, p)
			continue
		}
		if p.Calls[0].Function.Name != "calculator" || string(p.Calls[0].Function.Arguments) != `{"expression":"3*4"}` {
			t.Errorf("%q: call 0 %s %s", in, p.Calls[0].Function.Name, p.Calls[0].Function.Arguments)
		}
		// Key order as written: query before k.
		if p.Calls[1].Function.Name != "search" || string(p.Calls[1].Function.Arguments) != `{"query":"Paris","k":2}` {
			t.Errorf("%q: call 1 %s %s", in, p.Calls[1].Function.Name, p.Calls[1].Function.Arguments)
		}
	}
	// A malformed call after a good one: the good one runs, the rest is one error.
	bad := map[string]string{
		`{"name": "calculator", "parameters": {"expression": "1"}}; {"name": "calculator", "parameters": {`: "not valid JSON",
		`{"name": "calculator", "parameters": {"expression": "1"}}; {"parameters": {}}`:                     `missing "name"`,
		`{"name": "calculator", "parameters": {"expression": "1"}} and then I stop`:                         "unexpected text after a call",
		`{"name": "calculator", "parameters": {"expression": "1"}}; [1]`:                                    "not valid JSON",
	}
	for in, want := range bad {
		p := ParseToolCalls(in)
		if len(p.Calls) != 1 || len(p.Errors) != 1 || !strings.Contains(p.Errors[0], want) {
			t.Errorf("%q: want 1 call and an error containing %q, got %+v", in, want, p)
		}
	}
	// A broken list is one error; a list element that is no call is an error beside the good ones.
	if p := ParseToolCalls(`[{"name": "calculator", "parameters": {}}`); len(p.Calls) != 0 || len(p.Errors) != 1 || !strings.Contains(p.Errors[0], "JSON list") {
		t.Errorf("broken list: %+v", p)
	}
	if p := ParseToolCalls(`[{"name": "calculator", "parameters": {}}, {"name": 3}]`); len(p.Calls) != 1 || len(p.Errors) != 1 {
		t.Errorf("list with a bad element: %+v", p)
	}
	// A JSON list that is not calls is prose.
	if p := ParseToolCalls(`[1, 2, 3]`); p.Attempts() != 0 || p.Content != "[1, 2, 3]" {
		t.Errorf("plain list: %+v", p)
	}
}

// Hostile messages parse in time linear in their length and without deep recursion: 40,000
// stray closing tags (each used to rescan the rest of the text for an opening tag: ~25 s) and
// arguments nested a million levels deep (encoding/json stops at 10,000) are errors.
func TestParseHostileMessages(t *testing.T) {
	for _, c := range []struct {
		text   string
		errors int
	}{
		{strings.Repeat("</tool_call>", 40_000), 40_000},
		{`<tool_call>{"name": "a", "arguments": ` + strings.Repeat("[", 1<<20) + `}</tool_call>`, 1},
		{`{"name": "a", "parameters": ` + strings.Repeat(`{"a":`, 1<<18) + "1" + strings.Repeat("}", 1<<18) + "}", 1},
	} {
		t0 := time.Now()
		p := ParseToolCalls(c.text)
		if d := time.Since(t0); d > 2*time.Second {
			t.Errorf("%s: %v", clip(c.text, 30), d)
		}
		if len(p.Calls) != 0 || len(p.Errors) != c.errors {
			t.Errorf("%s: %d calls, %d errors; want %d errors", clip(c.text, 30), len(p.Calls), len(p.Errors), c.errors)
		}
	}
}
