package tokenizer

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// Hand-made tokenizers for the BPE options byte-level tokenizers leave unused: unk with and
// without fusing, byte fallback, continuing_subword_prefix / end_of_word_suffix, and no
// decoder (tokens joined by spaces). Each is checked by hand and against the Rust library.
var handModels = []struct {
	name, json string
	cases      map[string][]int
}{
	{"unk-fused", `{"pre_tokenizer": {"type": "Split", "pattern": {"Regex": "\\s+"}, "behavior": "Removed", "invert": false},
		"model": {"type": "BPE", "unk_token": "<unk>", "fuse_unk": true,
		"vocab": {"<unk>": 0, "a": 1, "b": 2, "ab": 3}, "merges": ["a b"]}}`,
		// "xyab": x and y are unknown and fused into one <unk>, then "ab" merges.
		map[string][]int{"xyab": {0, 3}, "abxa": {3, 0, 1}}},
	{"unk-unfused", `{"pre_tokenizer": {"type": "Split", "pattern": {"Regex": "\\s+"}, "behavior": "Removed", "invert": false},
		"model": {"type": "BPE", "unk_token": "<unk>", "fuse_unk": false,
		"vocab": {"<unk>": 0, "a": 1, "b": 2, "ab": 3}, "merges": ["a b"]}}`,
		map[string][]int{"xyab": {0, 0, 3}}},
	{"byte-fallback", `{"model": {"type": "BPE", "unk_token": "<unk>", "byte_fallback": true,
		"vocab": {"<unk>": 0, "<0x78>": 1, "<0xC3>": 2, "<0xA9>": 3, "a": 4, "b": 5, "ab": 6}, "merges": ["a b"]}}`,
		// x -> <0x78>; é -> <0xC3> <0xA9>; z has no byte token -> <unk>.
		map[string][]int{"abxéz": {6, 1, 2, 3, 0}}},
	{"prefix-suffix", `{"pre_tokenizer": {"type": "Split", "pattern": {"Regex": " "}, "behavior": "Removed", "invert": false},
		"model": {"type": "BPE", "continuing_subword_prefix": "##", "end_of_word_suffix": "</w>",
		"vocab": {"a": 0, "##b": 1, "##c</w>": 2, "ab": 3, "abc</w>": 4, "##b</w>": 5, "a</w>": 6},
		"merges": ["a ##b", "ab ##c</w>"]}}`,
		// "abc": a ##b ##c</w> -> ab ##c</w> -> abc</w>; "ab": a ##b</w> (no merge); "a": a</w>.
		map[string][]int{"abc ab a": {4, 0, 5, 6}}},
}

func TestHandModels(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	var docs []string
	for _, hm := range handModels {
		tk, err := FromJSON([]byte(hm.json))
		if err != nil {
			t.Fatalf("%s: %v", hm.name, err)
		}
		for in, want := range hm.cases {
			if got := tk.Encode(in, false); !slices.Equal(got, want) {
				t.Errorf("%s %q: got %v want %v", hm.name, in, got, want)
			}
			docs = append(docs, in)
		}
		p := filepath.Join(dir, hm.name+".json")
		if err := os.WriteFile(p, []byte(hm.json), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	if got := mustTok(t, handModels[0].json).Decode([]int{3, 0, 1}, false); got != "ab <unk> a" {
		t.Errorf("no decoder: tokens joined by spaces, got %q", got)
	}
	requireAssets(t)
	docs = append(docs, "ab ba  xx abab é", "abcabc abc a b c", "")
	ref, texts, err := rustEncode(paths, docs)
	if err != nil {
		t.Fatal(err)
	}
	for i, hm := range handModels {
		tk := mustTok(t, hm.json)
		for d, doc := range docs {
			if got := tk.Encode(doc, false); !slices.Equal(got, ref[i][0][d]) {
				t.Errorf("%s %q: go %v rust %v", hm.name, doc, got, ref[i][0][d])
			}
			if got := tk.Decode(ref[i][1][d], false); got != texts[i][0][d] {
				t.Errorf("%s %q: decode go %q rust %q", hm.name, doc, got, texts[i][0][d])
			}
			ds := tk.NewDecodeStream(false)
			streamed := ""
			for _, id := range ref[i][1][d] {
				streamed += ds.Next(id)
			}
			if streamed+ds.Flush() != texts[i][0][d] {
				t.Errorf("%s %q: stream %q rust %q", hm.name, doc, streamed, texts[i][0][d])
			}
		}
	}
}

func mustTok(t *testing.T, js string) *Tokenizer {
	t.Helper()
	tk, err := FromJSON([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	return tk
}
