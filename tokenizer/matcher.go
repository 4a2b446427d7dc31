package tokenizer

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
)

// span is a byte range [start, end) of a string.
type span struct{ start, end int }

// matcher finds the non-overlapping, leftmost-first matches of a Split pattern.
type matcher interface {
	find(s string, dst []span) []span
}

// newMatcher compiles a Split pattern: the known regexes get a hand-written scanner, other
// regexes regexp2 (a backtracking engine with lookaround, like the Oniguruma engine the Rust
// library uses), and {"String": ...} patterns a literal search.
func newMatcher(regex string, literal bool) (matcher, error) {
	if literal {
		if regex == "" {
			return nil, fmt.Errorf("Split pattern: empty String pattern")
		}
		return literalMatcher(regex), nil
	}
	switch regex {
	case patternQwen:
		return scanner{maxDigits: 1}, nil
	case patternLlama3:
		return scanner{maxDigits: 3}, nil
	case patternGPT2:
		return scanner{gpt2: true}, nil
	}
	return newRegexMatcher(regex)
}

type literalMatcher string

func (l literalMatcher) find(s string, dst []span) []span {
	for off := 0; ; {
		k := strings.Index(s[off:], string(l))
		if k < 0 {
			return dst
		}
		dst = append(dst, span{off + k, off + k + len(l)})
		off += k + len(l)
	}
}

type regexMatcher struct{ re *regexp2.Regexp }

// contractionsCI is the case-insensitive contraction group of GPT-4-style patterns.
// Oniguruma's (?i) folds ſ (U+017F) to s and regexp2's does not, so it is spelled out.
const contractionsCI = `(?i:'s|'t|'re|'ve|'m|'ll|'d)`

const contractionsExplicit = `(?:'[sSſ]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])`

func newRegexMatcher(pattern string) (matcher, error) {
	re, err := regexp2.Compile(strings.ReplaceAll(pattern, contractionsCI, contractionsExplicit), regexp2.None)
	if err != nil {
		return nil, fmt.Errorf("Split pattern %q: %w", pattern, err)
	}
	return regexMatcher{re}, nil
}

// find runs regexp2, which reports positions in runes, and converts them to byte offsets.
func (m regexMatcher) find(s string, dst []span) []span {
	runes := []rune(s)
	offsets := make([]int, len(runes)+1)
	for i, off := 0, 0; i < len(runes); i++ {
		offsets[i] = off
		off += utf8.RuneLen(runes[i])
		offsets[i+1] = off
	}
	match, err := m.re.FindRunesMatch(runes)
	for err == nil && match != nil {
		if match.Length > 0 {
			dst = append(dst, span{offsets[match.Index], offsets[match.Index+match.Length]})
		}
		match, err = m.re.FindNextMatch(match)
	}
	return dst
}
