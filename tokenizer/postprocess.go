package tokenizer

import (
	"encoding/json"
	"fmt"
)

// template is a TemplateProcessing "single" template: special-token ids around the
// sequence ($A). Pair templates are not used: mtgrpo encodes one sequence at a time.
type template []templatePiece

type templatePiece struct {
	sequence bool  // the encoded text goes here
	ids      []int // else: these special-token ids
}

func (t template) apply(ids []int) []int {
	out := make([]int, 0, len(ids)+4)
	for _, p := range t {
		if p.sequence {
			out = append(out, ids...)
		} else {
			out = append(out, p.ids...)
		}
	}
	return out
}

type templateSpec struct {
	Single []struct {
		SpecialToken *struct {
			ID string `json:"id"`
		} `json:"SpecialToken"`
		Sequence *struct {
			ID string `json:"id"`
		} `json:"Sequence"`
	} `json:"single"`
	SpecialTokens map[string]struct {
		IDs []int `json:"ids"`
	} `json:"special_tokens"`
}

// parsePostProcessor returns the templates applied, in order, when add_special_tokens is
// true. ByteLevel post-processing only moves offsets, so it contributes nothing here.
func parsePostProcessor(raw json.RawMessage) ([]template, error) {
	if isNull(raw) {
		return nil, nil
	}
	typ, err := typeOf(raw, "post_processor")
	if err != nil {
		return nil, err
	}
	switch typ {
	case "ByteLevel":
		return nil, nil
	case "Sequence":
		var seq struct {
			Processors []json.RawMessage `json:"processors"`
		}
		if err := json.Unmarshal(raw, &seq); err != nil {
			return nil, fmt.Errorf("post_processor Sequence: %w", err)
		}
		var out []template
		for i, r := range seq.Processors {
			ts, err := parsePostProcessor(r)
			if err != nil {
				return nil, fmt.Errorf("post_processor Sequence[%d]: %w", i, err)
			}
			out = append(out, ts...)
		}
		return out, nil
	case "TemplateProcessing":
		var sp templateSpec
		if err := json.Unmarshal(raw, &sp); err != nil {
			return nil, fmt.Errorf("post_processor TemplateProcessing: %w", err)
		}
		var t template
		for i, p := range sp.Single {
			switch {
			case p.Sequence != nil:
				if p.Sequence.ID != "A" {
					return nil, fmt.Errorf("post_processor TemplateProcessing: single[%d] uses sequence %q, want A", i, p.Sequence.ID)
				}
				t = append(t, templatePiece{sequence: true})
			case p.SpecialToken != nil:
				st, ok := sp.SpecialTokens[p.SpecialToken.ID]
				if !ok {
					return nil, fmt.Errorf("post_processor TemplateProcessing: special token %q is not in special_tokens", p.SpecialToken.ID)
				}
				t = append(t, templatePiece{ids: st.IDs})
			default:
				return nil, fmt.Errorf("post_processor TemplateProcessing: single[%d] is neither Sequence nor SpecialToken", i)
			}
		}
		return []template{t}, nil
	}
	return nil, fmt.Errorf("post_processor type %q is not supported (supported: ByteLevel, TemplateProcessing, Sequence)", typ)
}

// parseDecoder reports whether tokens are byte-level decoded (the ByteLevel decoder) or,
// with no decoder, joined with spaces as the Rust library does.
func parseDecoder(raw json.RawMessage) (byteLevel bool, err error) {
	if isNull(raw) {
		return false, nil
	}
	typ, err := typeOf(raw, "decoder")
	if err != nil {
		return false, err
	}
	switch typ {
	case "ByteLevel":
		return true, nil
	case "Sequence":
		var seq struct {
			Decoders []json.RawMessage `json:"decoders"`
		}
		if err := json.Unmarshal(raw, &seq); err != nil {
			return false, fmt.Errorf("decoder Sequence: %w", err)
		}
		if len(seq.Decoders) != 1 {
			return false, fmt.Errorf("decoder Sequence: only a Sequence of one ByteLevel decoder is supported, got %d decoders", len(seq.Decoders))
		}
		return parseDecoder(seq.Decoders[0])
	}
	return false, fmt.Errorf("decoder type %q is not supported (supported: ByteLevel)", typ)
}
