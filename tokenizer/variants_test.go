package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// Variants of the tiny tokenizer exercise the components the real tokenizers do not use
// (other Split behaviours, invert, GPT-2 ByteLevel, regexp2 patterns, added-token flags,
// other normalizers, templates, ignore_merges). Each is compared with the Rust library.

func byteLevel(prefix, regex bool) map[string]any {
	return map[string]any{"type": "ByteLevel", "add_prefix_space": prefix, "trim_offsets": false, "use_regex": regex}
}

func split(pattern map[string]any, behavior string, invert bool) map[string]any {
	return map[string]any{"type": "Split", "pattern": pattern, "behavior": behavior, "invert": invert}
}

func re(s string) map[string]any  { return map[string]any{"Regex": s} }
func str(s string) map[string]any { return map[string]any{"String": s} }

func seq(steps ...map[string]any) map[string]any {
	list := make([]any, len(steps))
	for i, s := range steps {
		list[i] = s
	}
	return map[string]any{"type": "Sequence", "pretokenizers": list}
}

type variant struct {
	name string
	edit func(spec map[string]any)
}

func setPre(p map[string]any) func(map[string]any) {
	return func(spec map[string]any) { spec["pre_tokenizer"] = p }
}

var variants = []variant{
	{"split-removed", setPre(seq(split(re(`\s+`), "Removed", false), byteLevel(false, false)))},
	{"split-merged-previous", setPre(seq(split(re(`[.,!?]`), "MergedWithPrevious", false), byteLevel(false, false)))},
	{"split-merged-next", setPre(seq(split(str(" "), "MergedWithNext", false), byteLevel(false, false)))},
	{"split-contiguous", setPre(seq(split(re(`\d`), "Contiguous", false), byteLevel(false, false)))},
	{"split-isolated-invert", setPre(seq(split(re(`\p{L}+`), "Isolated", true), byteLevel(false, false)))},
	{"split-removed-invert", setPre(seq(split(re(`[a-z]+`), "Removed", true), byteLevel(false, false)))},
	{"gpt2-bytelevel", setPre(byteLevel(true, true))},
	{"bytelevel-prefix-space", setPre(byteLevel(true, false))},
	{"regexp2-qwen-2-digits", setPre(seq(split(re(`(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,2}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`), "Isolated", false), byteLevel(false, false)))},
	{"regexp2-lookahead", setPre(seq(split(re(`[A-Z][a-z]+|\d{2}|\s+(?=\S)|[^\s]`), "Isolated", false), byteLevel(false, false)))},
	{"nfkc-lowercase-added-flags", func(spec map[string]any) {
		spec["normalizer"] = map[string]any{"type": "Sequence", "normalizers": []any{
			map[string]any{"type": "NFKC"}, map[string]any{"type": "Lowercase"}}}
		added := spec["added_tokens"].([]any)
		next := 0
		for _, a := range added {
			at := a.(map[string]any)
			switch at["content"] {
			case "<think>":
				at["lstrip"] = true
			case "</think>":
				at["rstrip"] = true
			case "<tool_call>":
				at["single_word"] = true
			case "</tool_call>":
				at["lstrip"], at["rstrip"] = true, true
			}
			next = max(next, int(at["id"].(float64))+1)
		}
		spec["added_tokens"] = append(added,
			map[string]any{"id": next, "content": "hello", "single_word": false, "lstrip": false, "rstrip": false, "normalized": true, "special": false},
			map[string]any{"id": next + 1, "content": "ﬁx", "single_word": true, "lstrip": false, "rstrip": false, "normalized": true, "special": true})
	}},
	{"nfd", func(spec map[string]any) { spec["normalizer"] = map[string]any{"type": "NFD"} }},
	{"nfkd", func(spec map[string]any) { spec["normalizer"] = map[string]any{"type": "NFKD"} }},
	{"template", func(spec map[string]any) {
		sp := func(id string, n int) map[string]any {
			return map[string]any{"id": id, "ids": []any{n}, "tokens": []any{id}}
		}
		base := len(spec["model"].(map[string]any)["vocab"].(map[string]any))
		spec["post_processor"] = map[string]any{"type": "Sequence", "processors": []any{
			byteLevel(false, false),
			map[string]any{"type": "TemplateProcessing",
				"single": []any{map[string]any{"SpecialToken": map[string]any{"id": "<|im_start|>", "type_id": 0}},
					map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}},
					map[string]any{"SpecialToken": map[string]any{"id": "<|im_end|>", "type_id": 0}}},
				"pair": []any{map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}},
					map[string]any{"Sequence": map[string]any{"id": "B", "type_id": 1}}},
				"special_tokens": map[string]any{"<|im_start|>": sp("<|im_start|>", base+1), "<|im_end|>": sp("<|im_end|>", base+2)}}}}
	}},
	{"ignore-merges", func(spec map[string]any) { spec["model"].(map[string]any)["ignore_merges"] = true }},
	{"string-merges", func(spec map[string]any) {
		m := spec["model"].(map[string]any)
		var lines []any
		for _, p := range m["merges"].([]any) {
			pair := p.([]any)
			lines = append(lines, pair[0].(string)+" "+pair[1].(string))
		}
		m["merges"] = lines
	}},
}

var variantDocs = []string{
	"HELLO hello Hello, hellohello ﬁx ﬁxed FIX fix.",
	"a <think> b </think>  c <think>\n\nd</think>\n\ne",
	"x<tool_call>y <tool_call> z\t<tool_call>\n</tool_call>   </tool_call>x",
	"Numbers 1234567 and 12.5 and ٣٤٥; CAPS Words HereNow!!! end?",
	"  leading spaces, trailing spaces   ",
	"İstanbul ΣΊΣΥΦΟΣ ǅemal Åström ﬃ ² ⅷ",
}

func TestVariantsMatchRust(t *testing.T) {
	requireAssets(t)
	base, err := os.ReadFile("testdata/tiny/tokenizer.json")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var paths []string
	for _, v := range variants {
		var spec map[string]any
		if err := json.Unmarshal(base, &spec); err != nil {
			t.Fatal(err)
		}
		v.edit(spec)
		data, _ := json.Marshal(spec)
		p := filepath.Join(dir, v.name+".json")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	docs := append([]string{}, variantDocs...)
	for i, d := range testCorpus() {
		if i%20 == 0 && len(d) < 20000 {
			docs = append(docs, d)
		}
	}
	ref, texts, err := rustEncode(paths, docs)
	if err != nil {
		t.Fatal(err)
	}
	for vi, v := range variants {
		tk, err := LoadFile(paths[vi])
		if err != nil {
			t.Errorf("%s: %v", v.name, err)
			continue
		}
		bad := 0
		for k, addSpecial := range []bool{false, true} {
			for d, doc := range docs {
				got := tk.Encode(doc, addSpecial)
				if i := firstDiff(got, ref[vi][k][d]); i >= 0 {
					bad++
					if bad <= 2 {
						t.Errorf("%s addSpecial=%v doc %d %q: first difference at %d: go %v rust %v", v.name, addSpecial, d,
							clip(doc, 40), i, got[i:min(i+5, len(got))], ref[vi][k][d][i:min(i+5, len(ref[vi][k][d]))])
					}
				}
				if k == 1 {
					if got := tk.Decode(ref[vi][1][d], true); got != texts[vi][1][d] {
						bad++
						t.Errorf("%s doc %d: decode differs: go %q rust %q", v.name, d, clip(got, 40), clip(texts[vi][1][d], 40))
					}
				}
			}
		}
		if bad > 0 {
			t.Errorf("%s: %d mismatches", v.name, bad)
		}
	}
}
