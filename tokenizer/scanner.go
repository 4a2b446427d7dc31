package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// Hand-written matchers for the split regexes of the tokenizers we ship for. Each reproduces
// the regex's leftmost-first alternation (including the backtracking of \s*[\r\n]+ and the
// lookahead of \s+(?!\S)) and is several times faster than a backtracking regex engine.
// Any other pattern goes to regexp2 (see matcher.go).
const (
	// Qwen2, Qwen2.5, Qwen3: digits one at a time.
	patternQwen = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// Llama 3, 3.1, 3.2, 3.3: up to three digits per piece.
	patternLlama3 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// GPT-2: the regex of the ByteLevel pre-tokenizer when use_regex is true.
	patternGPT2 = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
)

// Character classes of the ASCII range; other runes go through package unicode.
const (
	clsL = 1 << iota // \p{L}
	clsN             // \p{N}
	clsS             // \s (Unicode White_Space, as Oniguruma and Rust use; includes U+0085)
)

// The classes follow Oniguruma's Unicode 16 tables: see unicode_onig.go.

var asciiClass [128]uint8

func init() {
	for c := 0; c < 128; c++ {
		r := rune(c)
		switch {
		case unicode.IsLetter(r):
			asciiClass[c] = clsL
		case unicode.IsNumber(r):
			asciiClass[c] = clsN
		case unicode.IsSpace(r):
			asciiClass[c] = clsS
		}
	}
}

// classAt decodes the rune at s[i] and returns it with its class bits and width.
func classAt(s string, i int) (rune, uint8, int) {
	c := s[i]
	if c < utf8.RuneSelf {
		return rune(c), asciiClass[c], 1
	}
	r, n := utf8.DecodeRuneInString(s[i:])
	var cls uint8
	switch {
	case unicode.IsLetter(r):
		cls = clsL
	case unicode.IsNumber(r):
		cls = clsN
	case unicode.IsSpace(r):
		cls = clsS
	default:
		cls = onigClass(r)
	}
	return r, cls, n
}

// scanner finds the matches of one of the known patterns.
type scanner struct {
	maxDigits int  // 1 (Qwen), 3 (Llama 3), 0 = unbounded (GPT-2)
	gpt2      bool // the GPT-2 alternation: optional space before letters/digits, no \r\n rules
}

func (sc scanner) find(s string, dst []span) []span {
	sc.each(s, func(start, end int) { dst = append(dst, span{start, end}) })
	return dst
}

// each calls fn for every match in order, without collecting them.
func (sc scanner) each(s string, fn func(start, end int)) {
	for i := 0; i < len(s); {
		var end int
		if sc.gpt2 {
			end = scanGPT2(s, i)
		} else {
			end = scanLlama(s, i, sc.maxDigits)
		}
		if end <= i { // cannot happen for these patterns: every character matches something
			_, n := utf8.DecodeRuneInString(s[i:])
			end = i + n
		}
		fn(i, end)
		i = end
	}
}

// foldASCII is the case-insensitive match used by (?i:...) for the contraction letters:
// Oniguruma folds U+017F LATIN SMALL LETTER LONG S to 's'.
func foldASCII(r rune) rune {
	if r == 0x17F {
		return 's'
	}
	if r >= 'A' && r <= 'Z' {
		return r + 32
	}
	return r
}

// contraction matches 's|'t|'re|'ve|'m|'ll|'d at s[i] (s[i] == '\”) and returns its end.
func contraction(s string, i int, fold bool) int {
	j := i + 1
	if j >= len(s) {
		return -1
	}
	r1, n1 := utf8.DecodeRuneInString(s[j:])
	if fold {
		r1 = foldASCII(r1)
	}
	switch r1 {
	case 's', 't', 'm', 'd':
		return j + n1
	case 'r', 'v', 'l':
		k := j + n1
		if k >= len(s) {
			return -1
		}
		r2, n2 := utf8.DecodeRuneInString(s[k:])
		if fold {
			r2 = foldASCII(r2)
		}
		want := 'e'
		if r1 == 'l' {
			want = 'l'
		}
		if r2 == want {
			return k + n2
		}
	}
	return -1
}

// runOf returns the end of the run of characters from s[i] whose class satisfies ok.
func runOf(s string, i int, ok func(r rune, cls uint8) bool) int {
	for i < len(s) {
		r, cls, n := classAt(s, i)
		if !ok(r, cls) {
			break
		}
		i += n
	}
	return i
}

func isLetter(_ rune, cls uint8) bool { return cls == clsL }
func isOther(_ rune, cls uint8) bool  { return cls == 0 }
func isCRLF(r rune, _ uint8) bool     { return r == '\r' || r == '\n' }

// scanLlama matches the Qwen / Llama 3 alternation at s[i] and returns the match end.
func scanLlama(s string, i int, maxDigits int) int {
	r0, c0, n0 := classAt(s, i)
	// (?i:'s|'t|'re|'ve|'m|'ll|'d)
	if r0 == '\'' {
		if end := contraction(s, i, true); end > 0 {
			return end
		}
	}
	// [^\r\n\p{L}\p{N}]?\p{L}+
	if c0 == clsL {
		return runOf(s, i+n0, isLetter)
	}
	if c0 != clsN && r0 != '\r' && r0 != '\n' && i+n0 < len(s) {
		if _, c1, n1 := classAt(s, i+n0); c1 == clsL {
			return runOf(s, i+n0+n1, isLetter)
		}
	}
	// \p{N}{1,maxDigits}
	if c0 == clsN {
		j := i + n0
		for k := 1; k < maxDigits && j < len(s); k++ {
			_, c, n := classAt(s, j)
			if c != clsN {
				break
			}
			j += n
		}
		return j
	}
	// ` ?[^\s\p{L}\p{N}]+[\r\n]*`
	if c0 == 0 {
		return runOf(s, runOf(s, i+n0, isOther), isCRLF)
	}
	if r0 == ' ' && i+1 < len(s) {
		if _, c1, n1 := classAt(s, i+1); c1 == 0 {
			return runOf(s, runOf(s, i+1+n1, isOther), isCRLF)
		}
	}
	// Whitespace from here on: the run is [i, j).
	j, lastNL, lastStart := i, -1, i
	for j < len(s) {
		r, c, n := classAt(s, j)
		if c != clsS {
			break
		}
		if r == '\r' || r == '\n' {
			lastNL = j
		}
		lastStart = j
		j += n
	}
	// \s*[\r\n]+ : backtracking \s* leaves the match ending after the run's last \r or \n.
	if lastNL >= 0 {
		return lastNL + 1
	}
	return spaceTail(s, i, j, lastStart)
}

// spaceTail resolves \s+(?!\S)|\s+ for the whitespace run [i, j) whose last character
// starts at lastStart: the run minus its last character when a non-space follows.
func spaceTail(s string, i, j, lastStart int) int {
	if j == len(s) || lastStart == i {
		return j
	}
	return lastStart
}

// scanGPT2 matches the GPT-2 alternation at s[i] and returns the match end.
func scanGPT2(s string, i int) int {
	r0, c0, _ := classAt(s, i)
	if r0 == '\'' {
		if end := contraction(s, i, false); end > 0 {
			return end
		}
	}
	start, c := i, c0
	if r0 == ' ' && i+1 < len(s) {
		if _, c1, _ := classAt(s, i+1); c1 != clsS {
			start, c = i+1, c1
		}
	}
	switch c {
	case clsL:
		return runOf(s, start, isLetter)
	case clsN:
		return runOf(s, start, func(_ rune, cls uint8) bool { return cls == clsN })
	case 0:
		return runOf(s, start, isOther)
	}
	j, lastStart := i, i
	for j < len(s) {
		_, c, n := classAt(s, j)
		if c != clsS {
			break
		}
		lastStart = j
		j += n
	}
	return spaceTail(s, i, j, lastStart)
}
