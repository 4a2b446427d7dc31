package rollout

import (
	"time"

	"github.com/mtgrpo/mtgrpo/tokenizer"
)

// Scripted is a Generator that answers with text from a policy instead of a model, for testing
// the multi-turn driver and the trainer without weights. The output tokens are the policy's text
// encoded, then EOS (when >= 0); log-probs are 0.
type Scripted struct {
	Tok *tokenizer.Tokenizer
	// Policy writes sample k's output for a prompt (decoded with special tokens). Finish may be
	// left empty (FinishEOS).
	Policy func(prompt string, sample int) (text string, finish FinishReason)
	// Turn, when set, is used instead of Policy for the driver's requests: it answers from the
	// task and the context's messages (TurnTag), as a demonstrator does.
	Turn func(tag *TurnTag, sample int) (text string, finish FinishReason)
	EOS  int32
	// Requests records every submitted request.
	Requests []*Request

	pending []*Request
}

// Submit queues r.
func (s *Scripted) Submit(r *Request) error {
	r.submitted = time.Now()
	s.Requests = append(s.Requests, r)
	s.pending = append(s.pending, r)
	return nil
}

// MaxLen is 0: a scripted generator holds sequences of any length.
func (s *Scripted) MaxLen() int { return 0 }

// Stats is zero: there is no engine.
func (s *Scripted) Stats() Stats { return Stats{} }

// Idle reports whether nothing is pending.
func (s *Scripted) Idle() bool { return len(s.pending) == 0 }

// Abort drops r.
func (s *Scripted) Abort(r *Request) []*Result {
	for i, p := range s.pending {
		if p == r {
			s.pending = append(s.pending[:i], s.pending[i+1:]...)
			break
		}
	}
	return nil
}

// Step answers every pending request.
func (s *Scripted) Step() ([]*Result, error) {
	var out []*Result
	for _, r := range s.pending {
		ids := make([]int, len(r.Prompt))
		for i, id := range r.Prompt {
			ids[i] = int(id)
		}
		prompt := s.Tok.Decode(ids, false)
		for k := 0; k < r.samples(); k++ {
			var text string
			var why FinishReason
			if s.Turn != nil && r.Turn != nil {
				text, why = s.Turn(r.Turn, k)
			} else {
				text, why = s.Policy(prompt, k)
			}
			if why == "" {
				why = FinishEOS
			}
			var toks []int32
			for _, id := range s.Tok.Encode(text, false) {
				toks = append(toks, int32(id))
			}
			if why == FinishEOS && s.EOS >= 0 {
				toks = append(toks, s.EOS)
			}
			out = append(out, &Result{Request: r, Sample: k, Tokens: toks, LogProbs: make([]float32, len(toks)),
				TemperedLogProbs: make([]float32, len(toks)), Text: text, Finish: why, PromptTokens: len(r.Prompt),
				Total: time.Since(r.submitted)})
		}
	}
	s.pending = nil
	return out, nil
}
