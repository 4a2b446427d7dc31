package tokenizer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// fileSpec is the top level of tokenizer.json. Components are decoded by type below; any
// type this package does not implement is an error naming it, never a silent fallback.
type fileSpec struct {
	Version       string          `json:"version"`
	Truncation    json.RawMessage `json:"truncation"`
	Padding       json.RawMessage `json:"padding"`
	AddedTokens   []AddedToken    `json:"added_tokens"`
	Normalizer    json.RawMessage `json:"normalizer"`
	PreTokenizer  json.RawMessage `json:"pre_tokenizer"`
	PostProcessor json.RawMessage `json:"post_processor"`
	Decoder       json.RawMessage `json:"decoder"`
	// Model is decoded in the same pass as the rest (it is most of the file); a model of
	// another type fails that decode or its type check, see modelTypeError.
	Model *bpeSpec `json:"model"`
}

// modelTypeError explains a failed decode when the model is not BPE: the fields of other
// model types (a Unigram vocab is a list) do not fit bpeSpec.
func modelTypeError(data []byte) error {
	var probe struct {
		Model *typed `json:"model"`
	}
	if json.Unmarshal(data, &probe) == nil && probe.Model != nil && probe.Model.Type != "" && probe.Model.Type != "BPE" {
		return fmt.Errorf("model type %q is not supported (only BPE)", probe.Model.Type)
	}
	return nil
}

// typed is the "type" tag every component carries.
type typed struct {
	Type string `json:"type"`
}

func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}

func typeOf(raw json.RawMessage, what string) (string, error) {
	var t typed
	if err := json.Unmarshal(raw, &t); err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	return t.Type, nil
}

func parseNormalizer(raw json.RawMessage) (normalizer, error) {
	if isNull(raw) {
		return nil, nil
	}
	typ, err := typeOf(raw, "normalizer")
	if err != nil {
		return nil, err
	}
	switch typ {
	case "NFC":
		return unicodeNormalizer{norm.NFC}, nil
	case "NFD":
		return unicodeNormalizer{norm.NFD}, nil
	case "NFKC":
		return unicodeNormalizer{norm.NFKC}, nil
	case "NFKD":
		return unicodeNormalizer{norm.NFKD}, nil
	case "Lowercase":
		return lowercaseNormalizer{}, nil
	case "Sequence":
		var seq struct {
			Normalizers []json.RawMessage `json:"normalizers"`
		}
		if err := json.Unmarshal(raw, &seq); err != nil {
			return nil, fmt.Errorf("normalizer Sequence: %w", err)
		}
		var out normalizerSequence
		for i, r := range seq.Normalizers {
			n, err := parseNormalizer(r)
			if err != nil {
				return nil, fmt.Errorf("normalizer Sequence[%d]: %w", i, err)
			}
			if n != nil {
				out = append(out, n)
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("normalizer type %q is not supported (supported: NFC, NFD, NFKC, NFKD, Lowercase, Sequence)", typ)
}

type splitSpec struct {
	Pattern struct {
		Regex  *string `json:"Regex"`
		String *string `json:"String"`
	} `json:"pattern"`
	Behavior string `json:"behavior"`
	Invert   bool   `json:"invert"`
}

type byteLevelSpec struct {
	AddPrefixSpace bool  `json:"add_prefix_space"`
	TrimOffsets    bool  `json:"trim_offsets"`
	UseRegex       *bool `json:"use_regex"` // absent means true
}

func (b byteLevelSpec) useRegex() bool { return b.UseRegex == nil || *b.UseRegex }

var behaviors = map[string]int{
	"Removed": behaviorRemoved, "Isolated": behaviorIsolated,
	"MergedWithPrevious": behaviorMergedWithPrevious, "MergedWithNext": behaviorMergedWithNext,
	"Contiguous": behaviorContiguous,
}

func parsePreTokenizer(raw json.RawMessage) ([]preStep, error) {
	if isNull(raw) {
		return nil, nil
	}
	typ, err := typeOf(raw, "pre_tokenizer")
	if err != nil {
		return nil, err
	}
	switch typ {
	case "Sequence":
		var seq struct {
			Pretokenizers []json.RawMessage `json:"pretokenizers"`
		}
		if err := json.Unmarshal(raw, &seq); err != nil {
			return nil, fmt.Errorf("pre_tokenizer Sequence: %w", err)
		}
		var steps []preStep
		for i, r := range seq.Pretokenizers {
			s, err := parsePreTokenizer(r)
			if err != nil {
				return nil, fmt.Errorf("pre_tokenizer Sequence[%d]: %w", i, err)
			}
			steps = append(steps, s...)
		}
		return steps, nil
	case "Split":
		var sp splitSpec
		if err := json.Unmarshal(raw, &sp); err != nil {
			return nil, fmt.Errorf("pre_tokenizer Split: %w", err)
		}
		b, ok := behaviors[sp.Behavior]
		if !ok {
			return nil, fmt.Errorf("pre_tokenizer Split: unknown behavior %q", sp.Behavior)
		}
		var m matcher
		switch {
		case sp.Pattern.Regex != nil:
			m, err = newMatcher(*sp.Pattern.Regex, false)
		case sp.Pattern.String != nil:
			m, err = newMatcher(*sp.Pattern.String, true)
		default:
			err = fmt.Errorf("pre_tokenizer Split: pattern needs a Regex or a String")
		}
		if err != nil {
			return nil, err
		}
		return []preStep{&splitStep{m: m, behavior: b, invert: sp.Invert}}, nil
	case "ByteLevel":
		var bl byteLevelSpec
		if err := json.Unmarshal(raw, &bl); err != nil {
			return nil, fmt.Errorf("pre_tokenizer ByteLevel: %w", err)
		}
		return []preStep{&byteLevelStep{addPrefixSpace: bl.AddPrefixSpace, useRegex: bl.useRegex()}}, nil
	}
	return nil, fmt.Errorf("pre_tokenizer type %q is not supported (supported: Sequence, Split, ByteLevel)", typ)
}

type bpeSpec struct {
	Type                    string           `json:"type"`
	Dropout                 *float64         `json:"dropout"`
	UnkToken                *string          `json:"unk_token"`
	ContinuingSubwordPrefix *string          `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string          `json:"end_of_word_suffix"`
	FuseUnk                 bool             `json:"fuse_unk"`
	ByteFallback            bool             `json:"byte_fallback"`
	IgnoreMerges            bool             `json:"ignore_merges"`
	Vocab                   map[string]int32 `json:"vocab"`
	Merges                  json.RawMessage  `json:"merges"`
}

func parseModel(spec *bpeSpec) (*bpe, error) {
	if spec == nil {
		return nil, fmt.Errorf("model: missing")
	}
	sp := *spec
	if sp.Type == "" && sp.Merges != nil {
		sp.Type = "BPE" // files written before the tag existed
	}
	if sp.Type != "BPE" {
		return nil, fmt.Errorf("model type %q is not supported (only BPE)", sp.Type)
	}
	if sp.Dropout != nil && *sp.Dropout > 0 {
		return nil, fmt.Errorf("model: BPE dropout %g is not supported (encoding would be random)", *sp.Dropout)
	}
	m := &bpe{vocab: sp.Vocab, ignoreMerges: sp.IgnoreMerges, fuseUnk: sp.FuseUnk,
		byteFallback: sp.ByteFallback, unk: -1, cache: newWordCache()}
	if sp.ContinuingSubwordPrefix != nil {
		m.prefix = *sp.ContinuingSubwordPrefix
	}
	if sp.EndOfWordSuffix != nil {
		m.suffix = *sp.EndOfWordSuffix
	}
	if len(m.vocab) == 0 {
		return nil, fmt.Errorf("model: vocab is empty (every text would encode to no ids)")
	}
	maxID := int32(-1)
	for tok, id := range m.vocab {
		if id < 0 || id >= MaxTokenID {
			return nil, fmt.Errorf("model: vocab token %q has id %d, outside [0, %d)", tok, id, MaxTokenID)
		}
		maxID = max(maxID, id)
	}
	m.tokens = make([]string, maxID+1)
	for tok, id := range m.vocab {
		m.tokens[id] = tok
	}
	if sp.UnkToken != nil {
		id, ok := m.vocab[*sp.UnkToken]
		if !ok {
			return nil, fmt.Errorf("model: unk_token %q is not in the vocab", *sp.UnkToken)
		}
		m.unk = id
	}
	for b := 0; b < 256; b++ {
		m.byteIDs[b] = -1
		if id, ok := m.vocab[byteToUTF8[b]]; ok {
			m.byteIDs[b] = id
		}
	}
	pairs, err := parseMerges(sp.Merges)
	if err != nil {
		return nil, err
	}
	if err := m.setMerges(pairs); err != nil {
		return nil, err
	}
	return m, nil
}

// setMerges builds the (left id, right id) -> (rank, merged id) table.
func (m *bpe) setMerges(pairs [][2]string) error {
	m.merges = make(map[uint64]merge, len(pairs))
	for rank, p := range pairs {
		a, okA := m.vocab[p[0]]
		b, okB := m.vocab[p[1]]
		if !okA || !okB {
			return fmt.Errorf("model: merge %d (%q %q) uses a token missing from the vocab", rank, p[0], p[1])
		}
		// As the Rust builder does, the prefix length is cut from the right token whether
		// or not it starts with the prefix.
		if len(p[1]) < len(m.prefix) || !utf8.ValidString(p[1][len(m.prefix):]) {
			return fmt.Errorf("model: merge %d (%q %q): cannot cut continuing_subword_prefix %q from the right token", rank, p[0], p[1], m.prefix)
		}
		joined := p[0] + p[1][len(m.prefix):]
		id, ok := m.vocab[joined]
		if !ok {
			return fmt.Errorf("model: merge %d (%q %q) makes %q, which is missing from the vocab", rank, p[0], p[1], joined)
		}
		m.merges[pairKey(a, b)] = merge{rank: int32(rank), id: id}
	}
	return nil
}

// parseMerges reads both formats: ["a b", ...] (older files, Llama 3) and [["a", "b"], ...]
// (newer files, Qwen), which allows tokens that contain spaces.
func parseMerges(raw json.RawMessage) ([][2]string, error) {
	t := bytes.TrimSpace(raw)
	if isNull(t) {
		return nil, nil
	}
	if len(t) < 2 || t[0] != '[' {
		return nil, fmt.Errorf("model: merges must be a list")
	}
	inner := bytes.TrimSpace(t[1:])
	if len(inner) > 0 && inner[0] == '[' {
		var pairs [][]string
		if err := json.Unmarshal(t, &pairs); err != nil {
			return nil, fmt.Errorf("model: merges: %w", err)
		}
		out := make([][2]string, len(pairs))
		for i, p := range pairs {
			if len(p) != 2 {
				return nil, fmt.Errorf("model: merge %d has %d parts, want 2", i, len(p))
			}
			out[i] = [2]string{p[0], p[1]}
		}
		return out, nil
	}
	var lines []string
	if err := json.Unmarshal(t, &lines); err != nil {
		return nil, fmt.Errorf("model: merges: %w", err)
	}
	out := make([][2]string, len(lines))
	for i, l := range lines {
		parts := strings.Split(l, " ")
		if len(parts) != 2 {
			return nil, fmt.Errorf("model: merge %d %q is not two tokens separated by one space", i, l)
		}
		out[i] = [2]string{parts[0], parts[1]}
	}
	return out, nil
}
