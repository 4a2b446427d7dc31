package tokenizer

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mtgrpo/mtgrpo/env"
)

// An episode's history reaches the chat template as env.Message / env.ToolSpec values: the
// rollout maps each env.ToolCall onto a ToolCall (its JSON arguments as they are) and each
// ToolSpec through json.Marshal onto ChatOptions.Tools. These tests take the messages of real
// env steps (the model's text parsed by env.ParseToolCalls, the tools run by env.Toolset),
// render them that way, and require the same bytes as @huggingface/jinja rendering the same
// conversation given as transformers-style JSON (json.Marshal of the env messages: arguments
// as objects). An argument object that reached the template as a JSON string, or with its keys
// re-sorted, would print differently from transformers' tojson.

// envMessages maps env messages onto tokenizer messages as the rollout does.
func envMessages(msgs []env.Message) []Message {
	out := make([]Message, len(msgs))
	for i, m := range msgs {
		out[i] = Message{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID, Name: m.Name}
		for _, c := range m.ToolCalls {
			out[i].ToolCalls = append(out[i].ToolCalls, ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
		}
	}
	return out
}

// envTools marshals the specs as the rollout does.
func envTools(t *testing.T, specs []env.ToolSpec) []json.RawMessage {
	var out []json.RawMessage
	for _, s := range specs {
		raw, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, raw)
	}
	return out
}

// keyOrderTool has parameters whose keys are not in alphabetical order, so a re-sorted object
// shows in the rendering.
type keyOrderTool struct{}

func (keyOrderTool) Name() string { return "lookup" }
func (keyOrderTool) Description() string {
	return "Look a city up (<b>HTML</b> & quotes \" stay as they are)."
}
func (keyOrderTool) Parameters() json.RawMessage {
	return json.RawMessage(`{"type": "object", "properties": {"query": {"type": "string"}, "k": {"type": "integer"}, "exact": {"type": "boolean"}}, "required": ["query"]}`)
}
func (keyOrderTool) Call(_ context.Context, args json.RawMessage) (string, error) {
	return "Zürich: 421,878 inhabitants", nil
}

// envStep is one assistant turn as an environment returns it: the parsed message and the tool
// results.
func envStep(t *testing.T, ts *env.Toolset, turn int, text string) []env.Message {
	t.Helper()
	p := env.ParseToolCalls(text)
	if len(p.Errors) != 0 || len(p.Calls) == 0 {
		t.Fatalf("%q: want calls, got %+v", text, p)
	}
	msgs, _, _ := ts.Run(context.Background(), turn, p)
	return append([]env.Message{{Role: env.RoleAssistant, Content: p.Content, ToolCalls: p.Calls}}, msgs...)
}

func TestEnvToolCallsRenderAsTransformers(t *testing.T) {
	requireAssets(t)
	ts, err := env.NewToolset(env.Calculator{}, keyOrderTool{})
	if err != nil {
		t.Fatal(err)
	}
	tools := envTools(t, ts.Specs())
	// Qwen3: two calls in one message, arguments with non-ASCII text, a float, a nested list and
	// keys out of alphabetical order; one call's arguments written as a JSON string. (No integral
	// float such as 1e3: JavaScript cannot tell it from an int, where Python prints 1000.0 — the
	// tojson unit tests check that case by hand.)
	qwen := []env.Message{env.Text("system", "Use tools."), env.Text("user", "How big is Zürich, and 12*34?")}
	qwen = append(qwen, envStep(t, ts, 0, "Let me check.\n<tool_call>\n{\"name\": \"lookup\", \"arguments\": {\"query\": \"Z\\u00fcrich\", \"k\": 2, \"exact\": true, \"w\": [1.5, -2, {\"z\": null, \"a\": \"é\"}]}}\n</tool_call>\n<tool_call>\n{\"name\": \"calculator\", \"arguments\": \"{\\\"expression\\\": \\\"12*34\\\"}\"}\n</tool_call>")...)
	qwen = append(qwen, env.Text("assistant", "Zürich has 421,878 inhabitants; 12*34 = 408."))
	// Llama 3.1: one call per message (its template refuses more), in its JSON format.
	llama := []env.Message{env.Text("user", "How big is Zürich?")}
	llama = append(llama, envStep(t, ts, 0, `{"name": "lookup", "parameters": {"query": "Zürich", "k": 2, "exact": false}}`)...)
	llama = append(llama, env.Text("assistant", "421,878."))

	type jsCase struct {
		Template            string            `json:"template"`
		Config              string            `json:"config"`
		Messages            []env.Message     `json:"messages"`
		Tools               []json.RawMessage `json:"tools"`
		AddGenerationPrompt bool              `json:"add_generation_prompt"`
	}
	qwenTok := loadModel(t, "tokenizer-qwen3")
	qwenTpl := filepath.Join(t.TempDir(), "qwen3.jinja")
	if err := os.WriteFile(qwenTpl, []byte(qwenTok.Config().ChatTemplate), 0o644); err != nil {
		t.Fatal(err)
	}
	llamaTok, llamaTpl, llamaCfg := chatSetup(t, "llama31_env.json")
	want := renderJinja(t, []jsCase{
		{qwenTpl, filepath.Join(modelDir("tokenizer-qwen3"), "tokenizer_config.json"), qwen, tools, true},
		{llamaTpl, llamaCfg, llama, tools, true},
	})
	cases := []struct {
		name  string
		tok   *Tokenizer
		msgs  []env.Message
		parts []string // the calls, by hand, as transformers' json.dumps writes them
	}{
		{"qwen3", qwenTok, qwen, []string{
			"<tool_call>\n{\"name\": \"lookup\", \"arguments\": {\"query\": \"Zürich\", \"k\": 2, \"exact\": true, \"w\": [1.5, -2, {\"z\": null, \"a\": \"é\"}]}}\n</tool_call>",
			"<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"12*34\"}}\n</tool_call>",
			"\"description\": \"Look a city up (<b>HTML</b> & quotes \\\" stay as they are).\", \"parameters\": {\"type\": \"object\", \"properties\": {\"query\": {\"type\": \"string\"}, \"k\": {\"type\": \"integer\"}, \"exact\"",
			"<tool_response>\nZürich: 421,878 inhabitants\n</tool_response>\n<tool_response>\n408\n</tool_response>",
		}},
		{"llama3.1", llamaTok, llama, []string{
			"<|start_header_id|>assistant<|end_header_id|>\n\n{\"name\": \"lookup\", \"parameters\": {\"query\": \"Zürich\", \"k\": 2, \"exact\": false}}<|eot_id|>",
			"<|start_header_id|>ipython<|end_header_id|>\n\n\"Zürich: 421,878 inhabitants\"<|eot_id|>",
		}},
	}
	for i, c := range cases {
		got, err := c.tok.ApplyChatTemplate(envMessages(c.msgs), ChatOptions{AddGenerationPrompt: true, Tools: tools})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var w string
		if err := json.Unmarshal(want[i], &w); err != nil {
			t.Fatalf("%s: jinja failed: %s", c.name, want[i])
		}
		if got != w {
			j := 0
			for j < len(got) && j < len(w) && got[j] == w[j] {
				j++
			}
			t.Errorf("%s: differs from transformers at byte %d\n ours:  %q\n jinja: %q", c.name, j, clip(got[j:], 200), clip(w[j:], 200))
		}
		for _, p := range c.parts {
			if !strings.Contains(got, p) {
				t.Errorf("%s: rendering lacks %q:\n%s", c.name, p, got)
			}
		}
	}
}
