package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tinyWith returns the tiny tokenizer.json with one top-level field replaced.
func tinyWith(t *testing.T, field string, value any) []byte {
	t.Helper()
	var spec map[string]any
	if err := json.Unmarshal(tinyTokenizerJSON(t), &spec); err != nil {
		t.Fatal(err)
	}
	spec[field] = value
	data, _ := json.Marshal(spec)
	return data
}

func tinyModelWith(t *testing.T, key string, value any) []byte {
	t.Helper()
	var spec map[string]any
	if err := json.Unmarshal(tinyTokenizerJSON(t), &spec); err != nil {
		t.Fatal(err)
	}
	spec["model"].(map[string]any)[key] = value
	data, _ := json.Marshal(spec)
	return data
}

// Every bad file is an error that names what is wrong; none panics.
func TestBadTokenizerFiles(t *testing.T) {
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"truncated json", []byte(`{"model": {"type": "BPE"`), "tokenizer.json"},
		{"not an object", []byte(`[1, 2]`), "tokenizer.json"},
		{"unknown pre-tokenizer", tinyWith(t, "pre_tokenizer", map[string]any{"type": "Whitespace"}), `"Whitespace"`},
		{"unknown pre-tokenizer in sequence", tinyWith(t, "pre_tokenizer", map[string]any{"type": "Sequence",
			"pretokenizers": []any{map[string]any{"type": "Metaspace"}}}), `Sequence[0]: pre_tokenizer type "Metaspace"`},
		{"unknown normalizer", tinyWith(t, "normalizer", map[string]any{"type": "Strip"}), `normalizer type "Strip"`},
		{"unknown decoder", tinyWith(t, "decoder", map[string]any{"type": "WordPiece"}), `decoder type "WordPiece"`},
		{"unknown post-processor", tinyWith(t, "post_processor", map[string]any{"type": "BertProcessing"}), `"BertProcessing"`},
		{"unknown split behavior", tinyWith(t, "pre_tokenizer", map[string]any{"type": "Split",
			"pattern": map[string]any{"Regex": "a"}, "behavior": "Sideways"}), `behavior "Sideways"`},
		{"bad regex", tinyWith(t, "pre_tokenizer", map[string]any{"type": "Split",
			"pattern": map[string]any{"Regex": "(unclosed"}, "behavior": "Isolated"}), `Split pattern "(unclosed"`},
		{"truncation", tinyWith(t, "truncation", map[string]any{"max_length": 5}), "truncation"},
		{"unknown model", tinyWith(t, "model", map[string]any{"type": "WordPiece", "vocab": map[string]any{}}), `model type "WordPiece"`},
		{"missing model", tinyWith(t, "model", nil), "model: missing"},
		{"merge with unknown token", tinyModelWith(t, "merges", []any{[]any{"a", "zz"}}), `merge 0 ("a" "zz")`},
		{"merge of three parts", tinyModelWith(t, "merges", []any{"a b c"}), `merge 0 "a b c"`},
		{"merge result not in vocab", tinyModelWith(t, "merges", []any{"Q Z"}), `makes "QZ"`},
		{"merges not a list", tinyModelWith(t, "merges", "a b"), "merges must be a list"},
		{"dropout", tinyModelWith(t, "dropout", 0.1), "dropout"},
		{"unk not in vocab", tinyModelWith(t, "unk_token", "<unk>"), `unk_token "<unk>"`},
		{"empty added token", tinyWith(t, "added_tokens", []any{map[string]any{"id": 600, "content": ""}}), "added_tokens[0]: empty content"},
		// An empty vocabulary used to load and encode every text to no ids at all.
		{"empty vocab", tinyModelWith(t, "vocab", map[string]any{}), "vocab is empty"},
		{"empty vocab, no merges", []byte(`{"model": {"type": "BPE", "vocab": {}, "merges": []}}`), "vocab is empty"},
		// Ids size dense tables (and the model's embedding): 2e9 must not allocate 32 GB first.
		{"huge vocab id", tinyModelWith(t, "vocab", map[string]any{"a": 2000000000}), `"a" has id 2000000000, outside [0, 16777216)`},
		{"huge added id", tinyWith(t, "added_tokens", []any{map[string]any{"id": 1 << 31, "content": "<x>"}}), `added_tokens[0] "<x>": id 2147483648 is outside`},
	}
	for _, c := range cases {
		_, err := FromJSON(c.data)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: want an error containing %q, got %v", c.name, c.want, err)
		}
	}
}

func TestBadModelDirectory(t *testing.T) {
	if _, err := Load(filepath.Join(t.TempDir(), "nope")); err == nil {
		t.Error("missing directory: no error")
	}
	dir := t.TempDir()
	if err := WriteTiny(dir); err != nil {
		t.Fatal(err)
	}
	for name, cfg := range map[string]string{
		"eos number":      `{"eos_token": 5}`,
		"template number": `{"chat_template": 7}`,
		"template syntax": `{"chat_template": "{% for x in %}"}`,
		"not json":        `{`,
	} {
		if err := os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Load(dir)
		if err == nil || !strings.Contains(err.Error(), "tokenizer_config.json") {
			t.Errorf("%s: want an error naming tokenizer_config.json, got %v", name, err)
		}
	}
	// An AddedToken object for eos_token is fine, and a chat_template.jinja file wins.
	cfg := `{"eos_token": {"content": "<|im_end|>", "special": true}, "chat_template": "inline"}`
	if err := os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "chat_template.jinja"), []byte("from file"), 0o644); err != nil {
		t.Fatal(err)
	}
	tk, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if tk.Config().TemplateSource != "chat_template.jinja" {
		t.Errorf("template source %q", tk.Config().TemplateSource)
	}
	if _, id, ok := tk.SpecialToken("eos"); !ok || id != tk.VocabSize()-5 {
		t.Errorf("eos from an AddedToken object: id %d ok %v", id, ok)
	}
	if out, err := tk.ApplyChatTemplate(nil, ChatOptions{}); err != nil || out != "from file" {
		t.Errorf("chat_template.jinja should win: %q %v", out, err)
	}
}

// Invalid UTF-8 is repaired with U+FFFD per maximal invalid subpart before encoding; ids
// out of range decode to nothing, as in the Rust library.
func TestInvalidInput(t *testing.T) {
	tk, err := FromJSON(tinyTokenizerJSON(t))
	if err != nil {
		t.Fatal(err)
	}
	bad := "ok \xE2\x82 then \xFF!"
	if got, want := tk.Encode(bad, false), tk.Encode("ok \uFFFD then \uFFFD!", false); firstDiff(got, want) >= 0 {
		t.Errorf("invalid UTF-8: %v, want %v", got, want)
	}
	if got := tk.Decode([]int{-1, 1 << 30, int('h'), tk.VocabSize()}, false); got != "h" {
		t.Errorf("out-of-range ids: %q", got)
	}
	if got := tk.Encode("", true); len(got) != 0 {
		t.Errorf("empty text: %v", got)
	}
}

// A list of named templates: "default" without tools, "tool_use" with tools or by name.
func TestNamedTemplates(t *testing.T) {
	dir := t.TempDir()
	if err := WriteTiny(dir); err != nil {
		t.Fatal(err)
	}
	cfg := `{"chat_template": [{"name": "default", "template": "D"}, {"name": "tool_use", "template": "T{{ tools|length }}"}]}`
	if err := os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	tk, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	tool := []json.RawMessage{json.RawMessage(`{"type": "function"}`)}
	for _, c := range []struct {
		opts ChatOptions
		want string
	}{{ChatOptions{}, "D"}, {ChatOptions{Tools: tool}, "T1"}, {ChatOptions{Template: "tool_use"}, "T0"}} {
		if got, err := tk.ApplyChatTemplate(nil, c.opts); err != nil || got != c.want {
			t.Errorf("%+v: %q %v, want %q", c.opts, got, err, c.want)
		}
	}
	if _, err := tk.ApplyChatTemplate(nil, ChatOptions{Template: "nope"}); err == nil {
		t.Error("unknown template name: no error")
	}
}

// Expressions on which gonja panics (where Python raises) fail the render with an error.
func TestChatTemplatePanicIsError(t *testing.T) {
	tk, err := FromJSON([]byte(minimalJSON))
	if err != nil {
		t.Fatal(err)
	}
	for tpl, want := range map[string]string{
		`{{ 1 % 0 }}`:      "divide by zero",
		`{{ "a" * -1 }}`:   "negative Repeat count",
		`{{ "%d" % "x" }}`: "divide by zero",
	} {
		if err := tk.SetChatTemplate(tpl); err != nil {
			t.Fatalf("%s: %v", tpl, err)
		}
		out, err := tk.ApplyChatTemplate([]Message{{Role: "user", Content: "hi"}}, ChatOptions{})
		if err == nil || out != "" || !strings.Contains(err.Error(), "chat template set by SetChatTemplate: ") || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: want an error containing %q, got %q, %v", tpl, want, out, err)
		}
	}
}

// A model directory whose tokenizer files are streams without end (links to /dev/zero) is an
// error naming the file, read no further than its cap.
func TestLoadStopsAtEndlessFiles(t *testing.T) {
	for _, name := range []string{"tokenizer_config.json", "chat_template.jinja"} {
		dir := t.TempDir()
		if err := WriteTiny(dir); err != nil {
			t.Fatal(err)
		}
		os.Remove(filepath.Join(dir, name))
		os.Symlink("/dev/zero", filepath.Join(dir, name))
		_, err := Load(dir)
		if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, name)) || !strings.Contains(err.Error(), "too large: over 16777216 bytes") {
			t.Errorf("%s -> /dev/zero: %v", name, err)
		}
	}
}
