package tokenizer

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// @huggingface/jinja has no reject filter, so the Llama 3.1 builtin-tools path is checked
// against output worked out by hand from the template:
//
//	bos, system header, "Environment: ipython\n" (builtin_tools defined),
//	"Tools: " + builtin_tools minus code_interpreter joined by ", " + "\n\n",
//	knowledge and date lines, the system message, <|eot_id|>; then the user turn; the tool
//	call as <|python_tag|>name.call(arg="value") closed by <|eom_id|> (ipython mode); the
//	mapping tool result through tojson; the final assistant turn.
func TestLlama31BuiltinToolsByHand(t *testing.T) {
	requireAssets(t)
	tk, err := Load(modelDir("tokenizer-llama3_1"))
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("testdata/templates/llama3_1.jinja")
	if err != nil {
		t.Fatal(err)
	}
	if err := tk.SetChatTemplate(string(src)); err != nil {
		t.Fatal(err)
	}
	msgs := `[{"role": "system", "content": "You are a research assistant."},
	  {"role": "user", "content": "Search for the tallest building."},
	  {"role": "assistant", "tool_calls": [{"type": "function", "function": {"name": "brave_search", "arguments": {"query": "tallest building", "count": "3"}}}]},
	  {"role": "ipython", "content": {"results": ["Burj Khalifa, 828 m"], "ok": true}},
	  {"role": "assistant", "content": "The Burj Khalifa (828 m)."}]`
	got, err := tk.ApplyChatTemplateJSON([]byte(msgs), ChatOptions{Vars: map[string]any{
		"builtin_tools": []any{"brave_search", "wolfram_alpha", "code_interpreter"}, "date_string": "01 Jan 2025"}})
	if err != nil {
		t.Fatal(err)
	}
	want := "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n" +
		"Environment: ipython\nTools: brave_search, wolfram_alpha\n\n" +
		"Cutting Knowledge Date: December 2023\nToday Date: 01 Jan 2025\n\n" +
		"You are a research assistant.<|eot_id|>" +
		"<|start_header_id|>user<|end_header_id|>\n\nSearch for the tallest building.<|eot_id|>" +
		"<|start_header_id|>assistant<|end_header_id|>\n\n" +
		`<|python_tag|>brave_search.call(query="tallest building", count="3")<|eom_id|>` +
		"<|start_header_id|>ipython<|end_header_id|>\n\n" + `{"results": ["Burj Khalifa, 828 m"], "ok": true}<|eot_id|>` +
		"<|start_header_id|>assistant<|end_header_id|>\n\nThe Burj Khalifa (828 m).<|eot_id|>"
	if got != want {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
}

// TestPyJSON checks tojson against json.dumps output written out by hand (Python 3.12).
func TestPyJSON(t *testing.T) {
	v, err := parseOrdered([]byte(`{"b": 1, "a": [1.5, 1e-05, 1e16, 1000000.0, 0.1, -0.0, true, null],
		"s": "é\"\\\n\t\u0001/<>", "e": {}, "l": []}`))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		o    jsonOptions
		want string
	}{
		// json.dumps(v, ensure_ascii=False)
		{jsonOptions{indent: -1, itemSep: ", ", keySep: ": "},
			`{"b": 1, "a": [1.5, 1e-05, 1e+16, 1000000.0, 0.1, -0.0, true, null], "s": "é\"\\\n\t\u0001/<>", "e": {}, "l": []}`},
		// json.dumps(v, ensure_ascii=True, indent=2)
		{jsonOptions{indent: 2, ensureASCII: true, itemSep: ",", keySep: ": "},
			"{\n  \"b\": 1,\n  \"a\": [\n    1.5,\n    1e-05,\n    1e+16,\n    1000000.0,\n    0.1,\n    -0.0,\n    true,\n    null\n  ],\n" +
				"  \"s\": \"\\u00e9\\\"\\\\\\n\\t\\u0001/<>\",\n  \"e\": {},\n  \"l\": []\n}"},
	}
	for _, c := range cases {
		got, err := pyJSON(v, c.o)
		if err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("got  %s\nwant %s", got, c.want)
		}
	}
}

// TestMessagesMatchJSON renders typed Messages and the equivalent JSON and requires the same
// text, so the struct API cannot drift from the fixture-tested JSON path.
func TestMessagesMatchJSON(t *testing.T) {
	tk := loadModel(t, "tokenizer-qwen3")
	msgs := []Message{
		{Role: "system", Content: "You can use tools."},
		{Role: "user", Content: "Weather in Paris?"},
		{Role: "assistant", Content: "", ToolCalls: []ToolCall{{Name: "get_weather", Arguments: json.RawMessage(`{"city": "Paris", "unit": "celsius"}`)}}},
		{Role: "tool", Content: "18 C", ToolCallID: "call_1"},
	}
	js := `[{"role": "system", "content": "You can use tools."}, {"role": "user", "content": "Weather in Paris?"},
	  {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}}]},
	  {"role": "tool", "content": "18 C", "tool_call_id": "call_1"}]`
	tools := []json.RawMessage{json.RawMessage(`{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}`)}
	opts := ChatOptions{AddGenerationPrompt: true, Tools: tools, Vars: map[string]any{"enable_thinking": false}}
	a, err := tk.ApplyChatTemplate(msgs, opts)
	if err != nil {
		t.Fatal(err)
	}
	b, err := tk.ApplyChatTemplateJSON([]byte(js), opts)
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Errorf("struct and JSON renderings differ:\n%q\n%q", a, b)
	}
	// The Qwen3 format, by hand: tool call JSON inside <tool_call>, the tool result as a
	// user turn, and the empty think block that enable_thinking=false adds.
	for _, part := range []string{
		"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": \"celsius\"}}\n</tool_call><|im_end|>\n",
		"<|im_start|>user\n<tool_response>\n18 C\n</tool_response><|im_end|>\n",
		"<|im_start|>assistant\n<think>\n\n</think>\n\n",
	} {
		if !strings.Contains(a, part) {
			t.Errorf("rendering lacks %q:\n%s", part, a)
		}
	}
	ids, err := tk.EncodeChat(msgs, opts)
	if err != nil || tk.Decode(ids, false) != a {
		t.Errorf("EncodeChat does not round-trip the rendering (err %v)", err)
	}
}

func TestRaiseException(t *testing.T) {
	tk := &Tokenizer{}
	if err := tk.SetChatTemplate(`{% if messages|length == 0 %}{{ raise_exception("no messages!") }}{% endif %}ok`); err != nil {
		t.Fatal(err)
	}
	_, err := tk.ApplyChatTemplate(nil, ChatOptions{})
	if err == nil || !strings.Contains(err.Error(), "no messages!") {
		t.Fatalf("want the template's exception, got %v", err)
	}
	out, err := tk.ApplyChatTemplate([]Message{{Role: "user", Content: "x"}}, ChatOptions{})
	if err != nil || out != "ok" {
		t.Fatalf("got %q, %v", out, err)
	}
}

func TestFallbackTemplate(t *testing.T) {
	tk, err := FromJSON(tinyTokenizerJSON(t))
	if err != nil {
		t.Fatal(err)
	}
	out, err := tk.ApplyChatTemplate([]Message{{Role: "user", Content: "hi"}}, ChatOptions{AddGenerationPrompt: true})
	if !errors.Is(err, ErrNoChatTemplate) {
		t.Fatalf("want ErrNoChatTemplate, got %v", err)
	}
	if want := "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"; out != want {
		t.Errorf("fallback: got %q want %q", out, want)
	}
}

// Dict methods and the items filter keep insertion order (Python dicts), where gonja sorts.
func TestDictOrder(t *testing.T) {
	tk := &Tokenizer{}
	src := `{% for m in messages %}{% for k, v in m.items() %}{{ k }}={{ v }};{% endfor %}|{{ m.keys()|join(",") }}|` +
		`{% for k, v in m|items %}{{ k }}{% endfor %}|{{ m.get("zeta") }}|{{ m.get("nope", "dflt") }}{% endfor %}`
	if err := tk.SetChatTemplate(src); err != nil {
		t.Fatal(err)
	}
	got, err := tk.ApplyChatTemplateJSON([]byte(`[{"zeta": 1, "alpha": "a", "mid": true}]`), ChatOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := "zeta=1;alpha=a;mid=True;|zeta,alpha,mid|zetaalphamid|1|dflt"; got != want {
		t.Errorf("got %q want %q", got, want)
	}
}

// {% generation %} (transformers' assistant-mask block) renders its body.
func TestGenerationBlock(t *testing.T) {
	tk := &Tokenizer{}
	src := `{% for m in messages %}{% if m.role == 'assistant' %}{% generation %}<a>{{ m.content }}</a>{% endgeneration %}` +
		`{% else %}<u>{{ m.content }}</u>{% endif %}{% endfor %}`
	if err := tk.SetChatTemplate(src); err != nil {
		t.Fatal(err)
	}
	got, err := tk.ApplyChatTemplate([]Message{{Role: "user", Content: "q"}, {Role: "assistant", Content: "r"}}, ChatOptions{})
	if err != nil || got != "<u>q</u><a>r</a>" {
		t.Errorf("got %q, %v", got, err)
	}
}

func TestStrftime(t *testing.T) {
	at := time.Date(2024, 7, 6, 15, 4, 5, 0, time.UTC)
	for format, want := range map[string]string{
		"%d %b %Y":          "06 Jul 2024",
		"%Y-%m-%d %H:%M:%S": "2024-07-06 15:04:05",
		"%A, %B %e (%j) %%": "Saturday, July  6 (188) %",
	} {
		if got := strftime(at, format); got != want {
			t.Errorf("strftime(%q) = %q, want %q", format, got, want)
		}
	}
}

// Without any template a Llama vocabulary gets the Llama 3 header format (contents
// trimmed), and the error says so.
func TestFallbackLlama(t *testing.T) {
	requireAssets(t)
	tk, err := LoadFile(filepath.Join(modelDir("tokenizer-llama3_1"), "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := tk.ApplyChatTemplate([]Message{{Role: "user", Content: " hi \n"}}, ChatOptions{AddGenerationPrompt: true})
	if !errors.Is(err, ErrNoChatTemplate) {
		t.Fatalf("want ErrNoChatTemplate, got %v", err)
	}
	want := "<|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"
	if out != want {
		t.Errorf("got %q want %q", out, want)
	}
}
