package tokenizer

import (
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

// FuzzChatTemplate: any template and any messages JSON render or fail with an error; none
// panics (a tokenizer_config.json's template is user input).
//
//	go test ./tokenizer -run '^$' -fuzz FuzzChatTemplate -fuzztime 60s
func FuzzChatTemplate(f *testing.F) {
	tk, err := FromJSON([]byte(minimalJSON))
	if err != nil {
		f.Fatal(err)
	}
	msgs := `[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {"b": [1, 2.5, null], "a": "é"}}}]}, {"role": "tool", "content": "ok"}]`
	f.Add(`{% for m in messages %}{{ m.role }}: {{ m.content }}{% if m.tool_calls %}{{ m.tool_calls | tojson(indent=2) }}{% endif %}{% endfor %}`, msgs)
	f.Add(`{{ raise_exception("no") }}`, `[]`)
	f.Add(`{%- set ns = namespace(a=0) %}{% for k, v in messages[0].items() %}{{ k }}={{ v | tojson }}{% endfor %}{{ messages[-1:] | length }}{{ "x"[::-1] }}`, msgs)
	f.Add(`{{ 1 % 0 }}{{ "a" * -1 }}`, `[]`)
	f.Add(`{{ tools | tojson }}{{ strftime_now("%d %b %Y") }}{% generation %}x{% endgeneration %}`, `[{"role": 1}]`)
	f.Fuzz(func(t *testing.T, tpl, messages string) {
		if err := tk.SetChatTemplate(tpl); err != nil {
			return
		}
		_, _ = tk.ApplyChatTemplateJSON([]byte(messages), ChatOptions{AddGenerationPrompt: true})
	})
}
