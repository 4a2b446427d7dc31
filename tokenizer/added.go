package tokenizer

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// AddedToken is an entry of tokenizer.json's "added_tokens": a string matched as a whole
// before normalisation and pre-tokenisation (chat markers, tool tags, <think>).
type AddedToken struct {
	ID         int    `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"` // only matches with no word character on either side
	LStrip     bool   `json:"lstrip"`      // also swallows the whitespace before it
	RStrip     bool   `json:"rstrip"`      // also swallows the whitespace after it
	Normalized bool   `json:"normalized"`  // matched in the normalised text rather than the raw text
	Special    bool   `json:"special"`     // dropped by Decode(ids, skipSpecial=true)
}

// segment is a piece of input: either an added token (id >= 0) or text.
type segment struct {
	text string
	id   int32
}

// trie matches a set of added tokens leftmost-longest, like the Aho-Corasick automaton
// (MatchKind::LeftmostLongest) of the Rust AddedVocabulary.
type trie struct {
	nodes []trieNode
	first [256]bool
}

type trieNode struct {
	next  map[byte]int32
	token int32 // index into the token list, or -1
}

func newTrie() *trie { return &trie{nodes: []trieNode{{token: -1}}} }

func (t *trie) insert(s string, token int32) {
	if s == "" {
		return
	}
	t.first[s[0]] = true
	n := int32(0)
	for i := 0; i < len(s); i++ {
		nx, ok := t.nodes[n].next[s[i]]
		if !ok {
			if t.nodes[n].next == nil {
				t.nodes[n].next = map[byte]int32{}
			}
			nx = int32(len(t.nodes))
			t.nodes = append(t.nodes, trieNode{token: -1})
			t.nodes[n].next[s[i]] = nx
		}
		n = nx
	}
	t.nodes[n].token = token
}

// longestAt returns the token index and end of the longest token starting at s[i].
func (t *trie) longestAt(s string, i int) (int32, int) {
	best, end := int32(-1), -1
	n := int32(0)
	for j := i; j < len(s); j++ {
		nx, ok := t.nodes[n].next[s[j]]
		if !ok {
			break
		}
		n = nx
		if tok := t.nodes[n].token; tok >= 0 {
			best, end = tok, j+1
		}
	}
	return best, end
}

func (t *trie) empty() bool { return len(t.nodes) == 1 }

// addedVocab holds the added tokens and the tries they are matched with.
type addedVocab struct {
	tokens     []AddedToken
	raw        *trie // tokens with normalized == false, matched in the raw text
	normalized *trie // tokens with normalized == true, matched after normalisation
	special    *trie // the contents of special tokens, to find them in data (see protect)
}

// specialMode says which matches of special added tokens split keeps; non-special added tokens
// always match. It is transformers' split_special_tokens, for all of a text or for marked parts.
type specialMode uint8

const (
	specialAll      specialMode = iota // every match: Encode
	specialNone                        // none: special tokens spelled in the text are text (EncodePlain)
	specialUnmarked                    // all but those right after protectMark (EncodeChat, see protect)
)

func newAddedVocab(tokens []AddedToken, norm normalizer) *addedVocab {
	av := &addedVocab{tokens: tokens, raw: newTrie(), normalized: newTrie(), special: newTrie()}
	for i, tok := range tokens {
		if tok.Special {
			av.special.insert(tok.Content, int32(i))
		}
		if tok.Normalized && norm != nil {
			av.normalized.insert(norm.normalize(tok.Content), int32(i))
		} else if tok.Normalized {
			av.normalized.insert(tok.Content, int32(i))
		} else {
			av.raw.insert(tok.Content, int32(i))
		}
	}
	return av
}

// split cuts s at the tokens of t, applying single_word, lstrip and rstrip as
// AddedVocabulary::find_matches does, and appends the segments to dst. A special token that mode
// excludes is skipped as the Rust library skips it under encode_special_tokens: the search
// resumes after it and its text stays in the surrounding segment.
func (av *addedVocab) split(dst []segment, s string, t *trie, mode specialMode) []segment {
	if t.empty() {
		return append(dst, segment{text: s, id: -1})
	}
	prev := 0 // end of the last emitted token
	for i := 0; i < len(s); {
		if !t.first[s[i]] {
			i++
			continue
		}
		tok, stop := t.longestAt(s, i)
		if tok < 0 {
			i++
			continue
		}
		start := i
		i = stop // non-overlapping: the search resumes after this match, kept or not
		at := av.tokens[tok]
		if at.Special && (mode == specialNone || mode == specialUnmarked && strings.HasSuffix(s[:start], protectMark)) {
			continue
		}
		if at.SingleWord {
			startOK := start == 0 || !endsWithWord(s[:start])
			stopOK := stop == len(s) || !startsWithWord(s[stop:])
			if !startOK || !stopOK {
				continue
			}
		}
		if at.LStrip {
			start = max(spaceLeftmostAtEnd(s[:start]), prev)
		}
		if at.RStrip {
			stop += spaceRightmostAtStart(s[stop:])
		}
		if prev < start {
			dst = append(dst, segment{text: s[prev:start], id: -1})
		}
		dst = append(dst, segment{text: s[start:stop], id: int32(at.ID)})
		prev = stop
	}
	if prev < len(s) {
		dst = append(dst, segment{text: s[prev:], id: -1})
	}
	return dst
}

// isWordChar is \w of Rust's regex crate: alphabetic, decimal digit, mark, connector
// punctuation, or join control.
func isWordChar(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Nd, r) ||
		unicode.IsMark(r) || unicode.Is(unicode.Pc, r) || unicode.Is(unicode.Join_Control, r) ||
		unicode.Is(unicode.Other_Alphabetic, r) || unicode.Is(unicode.Nl, r)
}

func endsWithWord(s string) bool {
	r, _ := utf8.DecodeLastRuneInString(s)
	return s != "" && isWordChar(r)
}

func startsWithWord(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return s != "" && isWordChar(r)
}

// spaceLeftmostAtEnd is the start of the trailing whitespace of s (len(s) if none).
func spaceLeftmostAtEnd(s string) int {
	i := len(s)
	for i > 0 {
		r, n := utf8.DecodeLastRuneInString(s[:i])
		if !unicode.IsSpace(r) {
			break
		}
		i -= n
	}
	return i
}

// spaceRightmostAtStart is the length of the leading whitespace of s.
func spaceRightmostAtStart(s string) int {
	i := 0
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if !unicode.IsSpace(r) {
			break
		}
		i += n
	}
	return i
}
