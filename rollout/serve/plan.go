package serve

import (
	"github.com/mtgrpo/mtgrpo/env"
	"github.com/mtgrpo/mtgrpo/rollout"
	"github.com/mtgrpo/mtgrpo/tokenizer"
)

// Token-exact contexts. A call's messages are rendered with the chat template and encoded (the
// canonical ids). When they extend an earlier call's messages and the reply it returned, the
// earlier call's prompt and sampled ids are reused as they were, and only what follows them is
// taken from the canonical ids:
//
//	base  = encode(earlier.Messages + [earlier.Reply], no generation prompt)
//	full  = encode(messages, generation prompt)
//	full starts with base, and base has exactly one stop id more than the earlier call's own
//	canonical render (the one that closes the reply)  ⇒
//	prompt = earlier.Prompt ++ earlier.Output [++ the closing stop id, when the output has none]
//	         ++ full[after base's last stop id:]
//
// The model then sees its own tokens for its earlier turns (not a re-encoding of their text, which
// can differ: spacing of a tool call, a stop string, <think> text the template drops), and the
// trainer trains each call on exactly the ids the engine saw. A call whose messages do not extend
// any earlier call (a condensing agent, an edited history, a template that rewrites earlier turns)
// starts a new segment from its canonical ids.

// planned is a call's context.
type planned struct {
	prompt    []int32
	extends   int // index of the extended call, -1 for none
	segment   int
	reused    int
	fullStops int
}

// plan builds a call's prompt in session s.
func plan(s *Session, rend *rollout.Renderer, stops map[int32]bool, msgs []env.Message, tools []env.ToolSpec) (planned, error) {
	full, err := rend.Encode(msgs, true)
	if err != nil {
		return planned{}, err
	}
	p := planned{prompt: full, extends: -1, fullStops: countStops(full, stops)}
	bestLen := 0
	var best *Call
	for _, c := range s.candidates() {
		base := c.baseIDs(rend.Tok, rend.Vars)
		if base == nil || len(base) <= bestLen || len(base) > len(full) || !hasPrefix(full, base) {
			continue
		}
		if countStops(base, stops) != c.fullStops+1 {
			continue // the template wrote the reply without its own closing stop id
		}
		best, bestLen = c, len(base)
	}
	if best == nil {
		return p, nil
	}
	base := best.base
	cut := lastStop(base, stops) + 1
	prompt := make([]int32, 0, len(best.Prompt)+len(best.Output)+1+len(full)-cut)
	prompt = append(append(prompt, best.Prompt...), best.Output...)
	if n := len(best.Output); n == 0 || !stops[best.Output[n-1]] {
		prompt = append(prompt, base[cut-1]) // the model stopped short (length, a stop string): close its turn
	}
	reused := len(prompt)
	prompt = append(prompt, full[cut:]...)
	return planned{prompt: prompt, extends: best.Index, segment: best.Segment, reused: reused, fullStops: p.fullStops}, nil
}

// baseIDs are the canonical ids of the call's messages followed by its reply, without a
// generation prompt (nil when the template refuses them). Computed once.
func (c *Call) baseIDs(tok *tokenizer.Tokenizer, vars map[string]any) []int32 {
	c.baseOnce.Do(func() {
		rend, err := rollout.NewRenderer(tok, c.Tools, vars)
		if err == nil {
			c.base, err = rend.Encode(append(append([]env.Message(nil), c.Messages...), c.Reply), false)
		}
		if err != nil {
			c.base = nil
		}
	})
	return c.base
}

func hasPrefix(ids, prefix []int32) bool {
	if len(prefix) > len(ids) {
		return false
	}
	for i, id := range prefix {
		if ids[i] != id {
			return false
		}
	}
	return true
}

func countStops(ids []int32, stops map[int32]bool) int {
	n := 0
	for _, id := range ids {
		if stops[id] {
			n++
		}
	}
	return n
}

func lastStop(ids []int32, stops map[int32]bool) int {
	for i := len(ids) - 1; i >= 0; i-- {
		if stops[ids[i]] {
			return i
		}
	}
	return -1
}
