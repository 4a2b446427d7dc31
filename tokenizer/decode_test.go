package tokenizer

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestDecodeMatchesRust decodes the reference ids (with add_special_tokens) and compares
// with the Rust decode, keeping and skipping special tokens.
func TestDecodeMatchesRust(t *testing.T) {
	docs, ref := reference(t)
	for mi, name := range realModels {
		tk := loadModel(t, name)
		bad := 0
		for d := range docs {
			for k, skip := range []bool{false, true} {
				if got, want := tk.Decode(ref[mi][1][d], skip), rustText[mi][k][d]; got != want {
					bad++
					if bad <= 3 {
						t.Errorf("%s doc %d skipSpecial=%v: go %q, rust %q", name, d, skip, clip(got, 80), clip(want, 80))
					}
				}
			}
		}
		if bad > 0 {
			t.Errorf("%s: %d decodes differ", name, bad)
		}
	}
}

// TestRoundTrip: Decode(Encode(x)) is x after normalisation (Qwen normalises to NFC; Llama
// has no normalizer, so there it is x itself).
func TestRoundTrip(t *testing.T) {
	docs := testCorpus()
	for _, name := range realModels {
		t.Run(name, func(t *testing.T) {
			tk := loadModel(t, name)
			for d, doc := range docs {
				want := doc
				if tk.norm != nil {
					want = tk.norm.normalize(doc)
				}
				if got := tk.Decode(tk.Encode(doc, false), false); got != want {
					t.Fatalf("doc %d: round trip differs: %q", d, clip(got, 80))
				}
			}
		})
	}
}

// TestDecodeStream feeds ids one at a time. Wherever the ids so far end on a complete
// UTF-8 character, the text streamed so far must equal Decode of those ids; at the end,
// text plus Flush equals Decode of all ids. Nothing streamed may contain U+FFFD unless the
// full decode does.
func TestDecodeStream(t *testing.T) {
	docs := testCorpus()
	for _, name := range realModels {
		t.Run(name, func(t *testing.T) { checkStream(t, loadModel(t, name), docs) })
	}
}

func checkStream(t *testing.T, tk *Tokenizer, docs []string) {
	checked := 0
	for d, doc := range docs {
		ids := tk.Encode(doc, true)
		full := tk.Decode(ids, false)
		ds := tk.NewDecodeStream(false)
		var sb strings.Builder
		// Checking every prefix is quadratic: do it on documents of up to 500 ids
		// (several hundred of them); longer ones are checked in total only.
		everyPrefix := len(ids) <= 500
		for i, id := range ids {
			piece := ds.Next(id)
			if !utf8.ValidString(piece) {
				t.Fatalf("doc %d: invalid UTF-8 streamed", d)
			}
			sb.WriteString(piece)
			if everyPrefix && ds.Pending() == 0 {
				checked++
				if want := tk.Decode(ids[:i+1], false); sb.String() != want {
					t.Fatalf("doc %d after %d ids: streamed %q, decode %q", d, i+1, clip(sb.String(), 60), clip(want, 60))
				}
			}
		}
		sb.WriteString(ds.Flush())
		if sb.String() != full {
			t.Fatalf("doc %d: stream total differs from Decode", d)
		}
	}
	if checked < 1000 {
		t.Errorf("only %d prefix checks ran", checked)
	}
}

// TestDecodeStreamHoldsSplitCharacters works one case by hand: "é" is the two bytes C3 A9;
// byte tokens Ã (C3) and © (A9) in the byte-level alphabet. After the first nothing may be
// emitted; after the second, the whole character.
func TestDecodeStreamHoldsSplitCharacters(t *testing.T) {
	tk, err := Load("testdata/tiny")
	if err != nil {
		t.Fatal(err)
	}
	c3, ok1 := tk.TokenID("Ã")
	a9, ok2 := tk.TokenID("©")
	if !ok1 || !ok2 {
		t.Fatal("byte tokens missing")
	}
	ds := tk.NewDecodeStream(false)
	if got := ds.Next(c3); got != "" || ds.Pending() != 1 {
		t.Fatalf("after C3: %q pending %d", got, ds.Pending())
	}
	if got := ds.Next(a9); got != "é" {
		t.Fatalf("after A9: %q", got)
	}
	// A lead byte followed by ASCII: the lone C3 becomes one U+FFFD, then "a".
	ds.Next(c3)
	a, _ := tk.TokenID("a")
	if got := ds.Next(a); got != "\uFFFDa" {
		t.Fatalf("C3 then a: %q", got)
	}
	// A dangling lead byte at the end comes out of Flush as U+FFFD, as Decode gives.
	ds.Next(c3)
	if got := ds.Flush(); got != "\uFFFD" || tk.Decode([]int{c3}, false) != "\uFFFD" {
		t.Fatalf("flush: %q", got)
	}
}

// TestLossyUTF8 checks the replacement rule against values worked out from the Unicode
// "maximal subpart" practice (what Rust's from_utf8_lossy and Python's errors="replace" do).
func TestLossyUTF8(t *testing.T) {
	cases := []struct{ in, want string }{
		{"a\xE2\x82b", "a\uFFFDb"},             // truncated 3-byte sequence: one U+FFFD
		{"\xE2\x82\xE2\x82\xAC", "\uFFFD€"},    // truncated, then complete €
		{"\xF0\x80\x80", "\uFFFD\uFFFD\uFFFD"}, // F0 80: 80 is outside F0's second-byte range
		{"\xED\xA0\x80", "\uFFFD\uFFFD\uFFFD"}, // a surrogate: ED A0 is invalid
		{"\xC0\xAF", "\uFFFD\uFFFD"},           // overlong lead byte
		{"\xFF", "\uFFFD"},
	}
	for _, c := range cases {
		if got := string(appendLossy(nil, []byte(c.in))); got != c.want {
			t.Errorf("lossy(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := incompleteTail([]byte("ab\xF0\x9F\x98")); got != 3 {
		t.Errorf("incompleteTail of a 3/4 emoji = %d, want 3", got)
	}
}

// transformers' clean_up_tokenization, worked by hand: " ," twice, " ' " joins "you're",
// then each contraction and punctuation mark loses its leading space.
func TestCleanUpTokenizationSpaces(t *testing.T) {
	in := "Hi , you ' re here . Is n't it ? I 'm sure ! It 's fine , we 've seen they 're ok"
	want := "Hi, you're here. Isn't it? I'm sure! It's fine, we've seen they're ok"
	if got := CleanUpTokenizationSpaces(in); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	llama := loadModel(t, "tokenizer-llama3_1")
	if !llama.Config().CleanUpTokenizationSpaces {
		t.Error("Llama 3.1's tokenizer_config.json sets clean_up_tokenization_spaces")
	}
}
