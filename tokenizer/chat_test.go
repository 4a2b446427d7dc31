package tokenizer

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// chatCase is one file of testdata/chat: a conversation and apply_chat_template arguments.
type chatCase struct {
	Messages            json.RawMessage   `json:"messages"`
	Tools               []json.RawMessage `json:"tools"`
	AddGenerationPrompt bool              `json:"add_generation_prompt"`
	Vars                map[string]any    `json:"vars"`
}

// chatSetup returns the tokenizer and template file a case file runs with: qwen3_* use
// Qwen3's own template, llama31_* the Llama 3.1 Instruct template in testdata/templates
// (the npm Llama 3.1 package ships a shorter one without tools).
func chatSetup(t *testing.T, file string) (*Tokenizer, string, string) {
	t.Helper()
	base := filepath.Base(file)
	switch {
	case strings.HasPrefix(base, "qwen3_"):
		dir := modelDir("tokenizer-qwen3")
		tk := loadModel(t, "tokenizer-qwen3")
		tplPath := filepath.Join(t.TempDir(), "qwen3.jinja")
		if err := os.WriteFile(tplPath, []byte(tk.Config().ChatTemplate), 0o644); err != nil {
			t.Fatal(err)
		}
		return tk, tplPath, filepath.Join(dir, "tokenizer_config.json")
	case strings.HasPrefix(base, "tiny_"):
		tk := loadModel(t, "tiny")
		tplPath := filepath.Join(t.TempDir(), "tiny.jinja")
		if err := os.WriteFile(tplPath, []byte(tk.Config().ChatTemplate), 0o644); err != nil {
			t.Fatal(err)
		}
		return tk, tplPath, filepath.Join(modelDir("tiny"), "tokenizer_config.json")
	case strings.HasPrefix(base, "llama31_"):
		dir := modelDir("tokenizer-llama3_1")
		requireAssets(t)
		tk, err := Load(dir) // a private copy: its template is replaced
		if err != nil {
			t.Fatal(err)
		}
		tplPath, _ := filepath.Abs("testdata/templates/llama3_1.jinja")
		src, err := os.ReadFile(tplPath)
		if err != nil {
			t.Fatal(err)
		}
		if err := tk.SetChatTemplate(string(src)); err != nil {
			t.Fatal(err)
		}
		return tk, tplPath, filepath.Join(dir, "tokenizer_config.json")
	}
	t.Fatalf("no setup for %s", file)
	return nil, "", ""
}

// TestChatTemplatesMatchJinja renders every conversation with gonja and with
// @huggingface/jinja and requires byte-identical output (or both failing with the
// template's raise_exception message).
func TestChatTemplatesMatchJinja(t *testing.T) {
	requireAssets(t)
	files, _ := filepath.Glob("testdata/chat/*.json")
	sort.Strings(files)
	if len(files) < 10 {
		t.Fatalf("expected at least 10 conversations, found %d", len(files))
	}
	type jsCase struct {
		Template            string            `json:"template"`
		Config              string            `json:"config"`
		Messages            json.RawMessage   `json:"messages"`
		Tools               []json.RawMessage `json:"tools,omitempty"`
		AddGenerationPrompt bool              `json:"add_generation_prompt"`
		Vars                map[string]any    `json:"vars,omitempty"`
	}
	var cases []chatCase
	var toks []*Tokenizer
	var js []jsCase
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var c chatCase
		if err := json.Unmarshal(data, &c); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		tk, tpl, cfg := chatSetup(t, f)
		cases, toks = append(cases, c), append(toks, tk)
		js = append(js, jsCase{tpl, cfg, c.Messages, c.Tools, c.AddGenerationPrompt, c.Vars})
	}
	want := renderJinja(t, js)
	for i, f := range files {
		c := cases[i]
		got, err := toks[i].ApplyChatTemplateJSON(c.Messages, ChatOptions{
			AddGenerationPrompt: c.AddGenerationPrompt, Tools: c.Tools, Vars: c.Vars})
		var w string
		if json.Unmarshal(want[i], &w) != nil {
			var e struct{ Error string }
			_ = json.Unmarshal(want[i], &e)
			if err == nil || !strings.Contains(err.Error(), e.Error) {
				t.Errorf("%s: jinja failed with %q, gonja gave err=%v", f, e.Error, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if got != w {
			i := 0
			for i < len(got) && i < len(w) && got[i] == w[i] {
				i++
			}
			t.Errorf("%s: differs at byte %d\n gonja: %q\n jinja: %q", f, i, clip(got[i:], 200), clip(w[i:], 200))
		}
	}
}

func renderJinja(t *testing.T, cases any) []json.RawMessage {
	t.Helper()
	dir := t.TempDir()
	in, out := filepath.Join(dir, "cases.json"), filepath.Join(dir, "out.json")
	data, _ := json.Marshal(cases)
	if err := os.WriteFile(in, data, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", "../scripts/tokenizer/render.js", in, out)
	cmd.Env = append(os.Environ(), "MTGRPO_NPM="+npmDir())
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("render.js: %v\n%s", err, msg)
	}
	var res []json.RawMessage
	data, err := os.ReadFile(out)
	if err == nil {
		err = json.Unmarshal(data, &res)
	}
	if err != nil {
		t.Fatal(err)
	}
	return res
}
