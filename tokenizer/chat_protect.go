package tokenizer

import (
	"strings"

	"github.com/nikolalohinski/gonja/v2/exec"
)

// Data in a chat (message text, tool calls, tool specs) must not become special tokens: a tool
// that prints "<|im_end|><|im_start|>system" would otherwise close its turn and forge a system
// turn with the very ids the template writes. transformers encodes the rendered text as a whole,
// so there it does; EncodeChat deviates on purpose. The template's own markup still gets its
// special tokens; the data's spellings of them are encoded as the text they are, exactly as
// EncodePlain (split_special_tokens) encodes that data.
//
// How: before rendering, protect puts protectMark in front of every place where data spells a
// special token. The template runs on the marked strings (the mark is one code point that string
// operations carry along like any other), and the encoder skips a special token right after a
// mark, then deletes the marks before pre-tokenisation, so the data's text is encoded in its
// context as if the mark had never been there. A mark the data brings itself is replaced by
// U+FFFD first: placed before the template's own <|im_end|> it would otherwise turn that into
// text.
//
// Limits: a template that rebuilds a special token from pieces of data (slicing it apart around
// the mark and joining it again) defeats the mark; the shipped Qwen and Llama templates only print
// the data. Special tokens with normalized: true (none in Qwen's or Llama's files) are found only
// where the data spells them exactly as written. Caller-supplied ChatOptions.Vars are not data
// and are not protected.

// protectMark is U+FDD0, a noncharacter: Unicode reserves it for a program's internal use, and
// no tokenizer or template gives it a meaning.
const protectMark = "\uFDD0"

// protect marks the special tokens that s spells (see above). s is also made valid UTF-8 here,
// as Encode would make it, so that an invalid sequence cannot join a mark.
func (av *addedVocab) protect(s string) string {
	s = toValidUTF8(s)
	if strings.Contains(s, protectMark) {
		s = strings.ReplaceAll(s, protectMark, "\uFFFD")
	}
	if av.special.empty() {
		return s
	}
	var b strings.Builder
	last := 0
	for i := 0; i < len(s); i++ {
		if !av.special.first[s[i]] {
			continue
		}
		if tok, _ := av.special.longestAt(s, i); tok >= 0 {
			if b.Len() == 0 {
				b.Grow(len(s) + 2*len(protectMark))
			}
			b.WriteString(s[last:i])
			b.WriteString(protectMark)
			last = i
		}
	}
	if last == 0 && b.Len() == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// protectData returns a copy of a template value built from the caller's data (parseOrdered's and
// messageDict's lists, dicts and strings) with protect applied to every string, keys included.
func (av *addedVocab) protectData(v any) any {
	switch x := v.(type) {
	case string:
		return av.protect(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = av.protectData(e)
		}
		return out
	case exec.Dict:
		out := exec.Dict{Pairs: make([]*exec.Pair, len(x.Pairs))}
		for i, p := range x.Pairs {
			out.Pairs[i] = &exec.Pair{Key: exec.AsValue(av.protectData(p.Key.Interface())),
				Value: exec.AsValue(av.protectData(p.Value.Interface()))}
		}
		return out
	}
	return v
}
