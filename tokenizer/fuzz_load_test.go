package tokenizer

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// minimalJSON is a complete tokenizer.json small enough for the fuzzer to mutate usefully: a
// byte-level BPE with two merges, a Split pre-tokenizer, a template post-processor and an added
// token with every option set.
const minimalJSON = `{"version": "1.0", "truncation": null, "padding": null,
"added_tokens": [{"id": 5, "content": "<e>", "single_word": true, "lstrip": true, "rstrip": true, "normalized": false, "special": true}],
"normalizer": {"type": "NFC"},
"pre_tokenizer": {"type": "Sequence", "pretokenizers": [{"type": "Split", "pattern": {"Regex": "\\p{L}+| ?\\p{N}"}, "behavior": "Isolated", "invert": false},
  {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false}]},
"post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<e>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
  "pair": [], "special_tokens": {"<e>": {"id": "<e>", "ids": [5], "tokens": ["<e>"]}}},
"decoder": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
"model": {"type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": null, "end_of_word_suffix": null,
  "fuse_unk": false, "byte_fallback": false, "ignore_merges": true, "vocab": {"a": 0, "b": 1, "ab": 2, "Ġ": 3, "abab": 4}, "merges": [["a", "b"], ["ab", "ab"]]}}`

// FuzzFromJSON: any tokenizer.json either loads or fails with an error; none panics, and a
// tokenizer that loads encodes and decodes without panicking.
//
//	go test ./tokenizer -run '^$' -fuzz FuzzFromJSON -fuzztime 60s
func FuzzFromJSON(f *testing.F) {
	f.Add([]byte(minimalJSON))
	f.Add([]byte(`{"model": {"type": "BPE", "vocab": {}, "merges": []}}`))
	f.Add([]byte(`{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [], "unk_token": "a", "byte_fallback": true}, "decoder": null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tk, err := FromJSON(data)
		if err != nil {
			return
		}
		for _, s := range []string{"", "abab ab 12 <e> a<e>b \xff ü"} {
			ids := tk.Encode(s, true)
			_ = tk.Decode(ids, false)
			_ = tk.Decode(append(ids, -1, 1<<30), true)
		}
	})
}

// FuzzChatTemplate: any template and any messages render or fail with an error that names the
// template. What the fuzzer would report as a crash (a stack overflow, running out of memory, an
// input that never ends) is what the sandbox prevents; the limits are small here so that each
// input is quick, and the output never passes the byte budget.
//
//	go test ./tokenizer -run '^$' -fuzz FuzzChatTemplate -fuzztime 60s
func FuzzChatTemplate(f *testing.F) {
	lim := defaultLimits
	lim.maxSteps, lim.maxBytes, lim.maxRange, lim.maxDepth = 20_000, 1<<20, 1000, 32
	_, cfg, err := TinyFiles()
	if err != nil {
		f.Fatal(err)
	}
	var tiny struct {
		ChatTemplate string `json:"chat_template"`
	}
	if err := json.Unmarshal(cfg, &tiny); err != nil {
		f.Fatal(err)
	}
	llama, err := os.ReadFile("testdata/templates/llama3_1.jinja")
	if err != nil {
		f.Fatal(err)
	}
	msgs := `[{"role": "system", "content": "s"}, {"role": "user", "content": "hi"}, {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {"b": [1, 2.5, null], "a": "é"}}}]}, {"role": "tool", "content": "ok"}]`
	for _, tpl := range []string{tiny.ChatTemplate, string(llama),
		`{% for m in messages %}{{ m.role }}: {{ m.content }}{% if m.tool_calls %}{{ m.tool_calls | tojson(indent=2) }}{% endif %}{% endfor %}`,
		`{{ raise_exception("no") }}`,
		`{%- set ns = namespace(a=0) %}{% for k, v in messages[0].items() %}{{ k }}={{ v | tojson }}{% endfor %}{{ messages[-1:] | length }}{{ "x"[::-1] }}`,
		`{{ 1 % 0 }}{{ "a" * -1 }}`,
		`{{ tools | tojson }}{{ strftime_now("%d %b %Y") }}{% generation %}x{% endgeneration %}`,
		`{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}`,
		`{% set ns = namespace(s='x') %}{% for i in range(99) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}`,
		`{% include "x" %}{% set ns = namespace() %}{% set ns.a = [ns] %}{{ 'x'|center(99999999) }}`,
		`{% with a = 1 %}{% filter upper %}{{ a }}{% endfilter %}{% endwith %}{% raw %}{{{% endraw %}{% block b %}{% endblock %}`,
	} {
		f.Add(tpl, msgs)
	}
	f.Fuzz(func(t *testing.T, tpl, messages string) {
		c, err := compileTemplate("fuzz", tpl, lim)
		if err != nil {
			return
		}
		v, err := parseOrdered([]byte(messages))
		if err != nil {
			v = []any{}
		}
		out, err := execute(c, map[string]any{"messages": v, "add_generation_prompt": true, "tools": v})
		if err != nil && !strings.HasPrefix(err.Error(), "chat template fuzz: ") {
			t.Fatalf("error does not name the template: %v", err)
		}
		if budget := lim.maxBytes + 4*2*inputBytes(v, 0); len(out) > budget {
			t.Fatalf("output of %d bytes, over the budget of %d", len(out), budget)
		}
	})
}
