package tokenizer

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func tinyTokenizerJSON(t testing.TB) []byte {
	t.Helper()
	tok, _, err := TinyFiles()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestTinyCommittedCopy regenerates the tiny tokenizer and compares it with the committed
// testdata/tiny files (training is deterministic). MTGRPO_UPDATE_TINY=1 rewrites them.
func TestTinyCommittedCopy(t *testing.T) {
	dir := t.TempDir()
	if err := WriteTiny(dir); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"tokenizer.json", "tokenizer_config.json"} {
		got, _ := os.ReadFile(filepath.Join(dir, name))
		want, err := os.ReadFile(filepath.Join("testdata/tiny", name))
		if os.Getenv("MTGRPO_UPDATE_TINY") == "1" {
			if err := os.WriteFile(filepath.Join("testdata/tiny", name), got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("testdata/tiny/%s is stale (regenerate with MTGRPO_UPDATE_TINY=1 go test -run TestTinyCommittedCopy)", name)
		}
	}
}

func TestTinyShape(t *testing.T) {
	tk, err := Load("testdata/tiny")
	if err != nil {
		t.Fatal(err)
	}
	merges, tokens := trainBPE(tinyCorpus, TinyMerges)
	if len(merges) != TinyMerges {
		t.Fatalf("learned %d merges, want %d", len(merges), TinyMerges)
	}
	// 256 bytes + one token per distinct merge result + 7 added tokens.
	if want := len(tokens) + 7; tk.VocabSize() != want {
		t.Errorf("vocab size %d, want %d", tk.VocabSize(), want)
	}
	for _, name := range []string{"im_start", "im_end", "endoftext", "tool_call", "tool_call_end", "think", "think_end"} {
		if _, _, ok := tk.SpecialToken(name); !ok {
			t.Errorf("special token %s missing", name)
		}
	}
	_, eos, _ := tk.SpecialToken("<|im_end|>")
	if ids := tk.EOSIDs(); len(ids) != 2 || ids[0] != eos {
		t.Errorf("EOSIDs = %v, want <|im_end|> (%d) then <|endoftext|>", ids, eos)
	}
	// " the", " answer" and " is" are frequent in the corpus: each must be one token.
	for _, w := range []string{" the", " answer", " is"} {
		if ids := tk.Encode(w, false); len(ids) != 1 {
			t.Errorf("%q encodes to %v, want a single merged token", w, ids)
		}
	}
	text := "<|im_start|>user\nWhat is 12 plus 30? 🙂<|im_end|>"
	ids := tk.Encode(text, false)
	if ids[0] != tk.VocabSize()-6 || tk.Decode(ids, false) != text {
		t.Errorf("encode/decode of %q: %v", text, ids)
	}
	if got := tk.Decode(ids, true); got != "user\nWhat is 12 plus 30? 🙂" {
		t.Errorf("skip special: %q", got)
	}
}
