package rollout

import (
	"errors"
	"fmt"

	"github.com/mtgrpo/mtgrpo/env"
)

// Condenser builds the context c_t of the next turn from an episode's history. It may instead ask
// for a summary: the driver then has the model write one from Plan.Summarize, stores it in the
// history (Summary, Summarized) and calls Condense again. Condensers hold settings only, never
// per-episode state, and are safe for concurrent use.
type Condenser interface {
	// Name is the condenser's name in logs.
	Name() string
	// Condense returns the next context (rendered ids included) or a summary request.
	Condense(h *History, r *Renderer) (Plan, error)
}

// Plan is a condenser's answer.
type Plan struct {
	// Messages is the context to generate from, and IDs its rendering (with the generation
	// prompt).
	Messages []env.Message
	IDs      []int32
	// Summarize, when set, is the prompt of a summary to write first (Messages is then empty);
	// SummaryCovers is how many steps the summary will replace.
	Summarize     []env.Message
	SummaryIDs    []int32
	SummaryCovers int
	// SummaryMaxTokens caps the summary; TrainSummary gives its tokens loss mask 1.
	SummaryMaxTokens int
	TrainSummary     bool
}

// ErrContextBudget is returned (wrapped) when no context within the budget can be built.
var ErrContextBudget = errors.New("context does not fit the token budget")

// plan renders msgs into a Plan.
func plan(msgs []env.Message, r *Renderer) (Plan, error) {
	ids, err := r.IDs(msgs)
	return Plan{Messages: msgs, IDs: ids}, err
}

// Full keeps the whole history: c_t is the task and every step.
type Full struct{}

// Name is "full".
func (Full) Name() string { return "full" }

// Condense renders the task and all steps.
func (Full) Condense(h *History, r *Renderer) (Plan, error) { return plan(h.messagesOf(h.Steps), r) }

// LastN keeps the task and the last N steps (keep_last_n_steps); N = 0 keeps the task alone.
type LastN struct{ N int }

// Name is "last_n".
func (LastN) Name() string { return "last_n" }

// Condense renders the task and the last N steps.
func (c LastN) Condense(h *History, r *Renderer) (Plan, error) {
	if c.N < 0 {
		return Plan{}, fmt.Errorf("rollout: keep_last_n_steps %d must be >= 0", c.N)
	}
	return plan(h.messagesOf(h.Steps[max(0, len(h.Steps)-c.N):]), r)
}

// TokenBudget keeps the context within MaxTokens (max_condensed_tokens): it drops the oldest
// steps until the rendered context fits, then, if the task and the last step alone are still
// too long, truncates the longest message's content (its end, marked with TruncationMark) until
// it fits. The system prompt is never truncated.
type TokenBudget struct {
	MaxTokens int
	// TruncationMark ends a cut message ("" means " [...]").
	TruncationMark string
}

// Name is "token_budget".
func (TokenBudget) Name() string { return "token_budget" }

// Condense drops and truncates as described on TokenBudget.
func (c TokenBudget) Condense(h *History, r *Renderer) (Plan, error) {
	if c.MaxTokens <= 0 {
		return Plan{}, fmt.Errorf("rollout: max_condensed_tokens %d must be > 0", c.MaxTokens)
	}
	for first := 0; first < len(h.Steps); first++ {
		p, err := plan(h.messagesOf(h.Steps[first:]), r)
		if err != nil || len(p.IDs) <= c.MaxTokens {
			return p, err
		}
		if first == len(h.Steps)-1 {
			return c.truncate(p.Messages, r)
		}
	}
	p, err := plan(h.messagesOf(nil), r)
	if err != nil || len(p.IDs) <= c.MaxTokens {
		return p, err
	}
	return c.truncate(p.Messages, r)
}

// truncate cuts the longest non-system message until the rendering fits. Each round removes the
// overflow (in tokens of that message's content, plus the mark's) from its end; a few rounds
// absorb the tokenizer's merges across the cut.
func (c TokenBudget) truncate(msgs []env.Message, r *Renderer) (Plan, error) {
	mark := c.TruncationMark
	if mark == "" {
		mark = " [...]"
	}
	msgs = append([]env.Message(nil), msgs...)
	for round := 0; round < 8; round++ {
		p, err := plan(msgs, r)
		if err != nil || len(p.IDs) <= c.MaxTokens {
			return p, err
		}
		over := len(p.IDs) - c.MaxTokens
		i := longestMessage(msgs)
		if i < 0 {
			break
		}
		ids := r.Tok.EncodePlain(msgs[i].Content) // as the content is encoded in the context (Renderer.IDs)
		keep := len(ids) - over - len(r.Tok.EncodePlain(mark))
		if keep <= 0 {
			msgs[i].Content = ""
			continue
		}
		msgs[i].Content = r.Tok.Decode(ids[:keep], false) + mark
	}
	p, err := plan(msgs, r)
	if err != nil || len(p.IDs) <= c.MaxTokens {
		return p, err
	}
	return Plan{}, fmt.Errorf("rollout: %w: %d tokens even truncated, budget %d", ErrContextBudget, len(p.IDs), c.MaxTokens)
}

// longestMessage is the index of the non-system message with the longest content (-1 if all
// are empty).
func longestMessage(msgs []env.Message) int {
	best, n := -1, 0
	for i, m := range msgs {
		if m.Role != env.RoleSystem && len(m.Content) > n {
			best, n = i, len(m.Content)
		}
	}
	return best
}
