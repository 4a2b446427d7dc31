package tokenizer

// Pre-tokenisation cuts a normalised segment into pieces; the BPE model encodes each piece
// on its own. Pieces never cross an added token. Empty pieces are dropped, as in the Rust
// PreTokenizedString.

// preStep is one pre-tokenizer of a (possibly Sequence) pre_tokenizer.
type preStep interface {
	split(s string, emit func(string))
}

// Split behaviours (SplitDelimiterBehavior in the Rust library).
const (
	behaviorRemoved = iota
	behaviorIsolated
	behaviorMergedWithPrevious
	behaviorMergedWithNext
	behaviorContiguous
)

// splitStep is the Split pre-tokenizer.
type splitStep struct {
	m        matcher
	behavior int
	invert   bool
}

// part is a span of the input and whether the pattern matched it.
type part struct {
	span
	match bool
}

func (st *splitStep) split(s string, emit func(string)) {
	if s == "" {
		return
	}
	if sc, ok := st.m.(scanner); ok && st.behavior == behaviorIsolated && !st.invert {
		// The known patterns match every character, so there are no gaps to emit.
		sc.each(s, func(start, end int) { emit(s[start:end]) })
		return
	}
	matches := st.m.find(s, nil)
	if st.behavior == behaviorIsolated && !st.invert {
		prev := 0
		for _, m := range matches {
			if m.start > prev {
				emit(s[prev:m.start])
			}
			emit(s[m.start:m.end])
			prev = m.end
		}
		if prev < len(s) {
			emit(s[prev:])
		}
		return
	}
	for _, p := range applyBehavior(coverParts(s, matches, st.invert), st.behavior) {
		if !p.match && p.end > p.start {
			emit(s[p.start:p.end])
		}
	}
}

// coverParts lists matches and the gaps between them so that they cover all of s.
func coverParts(s string, matches []span, invert bool) []part {
	var parts []part
	prev := 0
	for _, m := range matches {
		if m.start > prev {
			parts = append(parts, part{span{prev, m.start}, invert})
		}
		parts = append(parts, part{m, !invert})
		prev = m.end
	}
	if prev < len(s) {
		parts = append(parts, part{span{prev, len(s)}, invert})
	}
	return parts
}

// applyBehavior merges or drops parts; in the result, match == true means "remove".
func applyBehavior(parts []part, behavior int) []part {
	var out []part
	switch behavior {
	case behaviorIsolated:
		for _, p := range parts {
			out = append(out, part{p.span, false})
		}
	case behaviorRemoved:
		return parts
	case behaviorContiguous:
		prevMatch := false
		for i, p := range parts {
			if i > 0 && p.match == prevMatch {
				out[len(out)-1].end = p.end
			} else {
				out = append(out, part{p.span, false})
			}
			prevMatch = p.match
		}
	case behaviorMergedWithPrevious:
		prevMatch := false
		for _, p := range parts {
			if p.match && !prevMatch && len(out) > 0 {
				out[len(out)-1].end = p.end
			} else {
				out = append(out, part{p.span, false})
			}
			prevMatch = p.match
		}
	case behaviorMergedWithNext:
		prevMatch := false
		for i := len(parts) - 1; i >= 0; i-- {
			p := parts[i]
			if p.match && !prevMatch && len(out) > 0 {
				out[len(out)-1].start = p.start
			} else {
				out = append(out, part{p.span, false})
			}
			prevMatch = p.match
		}
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	}
	return out
}

// byteLevelStep is the ByteLevel pre-tokenizer: an optional leading space, an optional
// GPT-2 regex split, then every byte mapped to its byte-level rune.
type byteLevelStep struct {
	addPrefixSpace bool
	useRegex       bool
}

func (b *byteLevelStep) split(s string, emit func(string)) {
	if s == "" {
		return
	}
	if b.addPrefixSpace && s[0] != ' ' {
		s = " " + s
	}
	if !b.useRegex {
		emit(byteLevelString(s))
		return
	}
	for _, m := range (scanner{gpt2: true}).find(s, nil) {
		emit(byteLevelString(s[m.start:m.end]))
	}
}

// pipeline runs the pre-tokenizer steps. When the last step is a plain ByteLevel (no prefix
// space, no regex), it is left out and rawBytes is set: the BPE model then maps bytes to
// byte-level symbols itself, which saves building a mapped copy of every piece.
type pipeline struct {
	steps    []preStep
	rawBytes bool
}

func (p *pipeline) run(s string, emit func(string)) {
	p.runFrom(0, s, emit)
}

func (p *pipeline) runFrom(k int, s string, emit func(string)) {
	if s == "" {
		return
	}
	if k == len(p.steps) {
		emit(s)
		return
	}
	p.steps[k].split(s, func(piece string) { p.runFrom(k+1, piece, emit) })
}
