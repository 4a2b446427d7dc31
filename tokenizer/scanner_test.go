package tokenizer

import (
	"slices"
	"strings"
	"testing"
)

// The scanner must split exactly as a backtracking regex engine does. regexp2 is that
// engine here; where it and Oniguruma (the Rust library's engine) disagree, the scanner
// follows Oniguruma, and those characters are replaced before comparing.
func TestScannerMatchesRegexp2(t *testing.T) {
	docs := testCorpus()
	for _, c := range []struct {
		pattern string
		sc      scanner
	}{{patternQwen, scanner{maxDigits: 1}}, {patternLlama3, scanner{maxDigits: 3}}, {patternGPT2, scanner{gpt2: true}}} {
		re, err := newRegexMatcher(c.pattern)
		if err != nil {
			t.Fatal(err)
		}
		bad := 0
		for d, doc := range docs {
			if len(doc) > 20000 {
				continue // slow in regexp2
			}
			// The engines differ on ſ (see TestScannerFoldsLongS) and on characters newer
			// than Go's Unicode tables, where the scanner follows Oniguruma.
			doc = strings.Map(func(r rune) rune {
				if r == 'ſ' || onigClass(r) != 0 {
					return 'x'
				}
				return r
			}, doc)
			got, want := c.sc.find(doc, nil), re.find(doc, nil)
			if !slices.Equal(got, want) {
				bad++
				for i := range min(len(got), len(want)) {
					if got[i] != want[i] {
						t.Errorf("pattern %.20q doc %d: scanner %q, regexp2 %q", c.pattern, d,
							doc[got[i].start:got[i].end], doc[want[i].start:want[i].end])
						break
					}
				}
				if bad > 3 {
					t.FailNow()
				}
			}
		}
	}
}

// Oniguruma's (?i) folds U+017F LATIN SMALL LETTER LONG S to s, so "'ſ" is a contraction
// for Qwen and Llama 3 (checked against the Rust library in the corpus test).
func TestScannerFoldsLongS(t *testing.T) {
	got := scanner{maxDigits: 1}.find("it'ſ", nil)
	want := []span{{0, 2}, {2, 5}}
	if !slices.Equal(got, want) {
		t.Errorf("got %v want %v", got, want)
	}
}

// A Unicode 16 letter (U+16D43, Kirat Rai) is a letter to Oniguruma, so "a𖵃b" is one piece.
func TestScannerNewLetters(t *testing.T) {
	s := "a\U00016D43b \U00016D70\U00016D71"
	got := scanner{maxDigits: 3}.find(s, nil)
	// "a𖵃b" (1+4+1 bytes) is one \p{L}+ piece; " " before a digit is its own piece
	// (\s+(?!\S) fails, \s+ matches); the two Kirat Rai digits are one \p{N}{1,3} piece.
	want := []span{{0, 6}, {6, 7}, {7, 15}}
	if !slices.Equal(got, want) {
		t.Errorf("got %v want %v", got, want)
	}
}
