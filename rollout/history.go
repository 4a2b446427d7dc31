package rollout

import (
	"encoding/json"
	"fmt"

	"github.com/mtgrpo/mtgrpo/env"
	"github.com/mtgrpo/mtgrpo/tokenizer"
)

// History is everything an episode has said so far, from which a Condenser builds the next
// context: the task (what Reset returned), every step, and a model-written summary of the first
// Summarized steps when the summary condenser made one.
type History struct {
	Task  []env.Message // system prompt and the task's prompt
	Tools []env.ToolSpec
	Steps []Step
	// Summary replaces Steps[:Summarized] in contexts built by the summary condenser.
	Summary    string
	Summarized int
}

// Step is one assistant turn and what the environment answered.
type Step struct {
	Assistant env.Message   // as parsed by the environment (prose and tool calls)
	Results   []env.Message // tool results and environment feedback
}

// Messages is the step as chat messages.
func (s Step) Messages() []env.Message {
	return append([]env.Message{s.Assistant}, s.Results...)
}

// messagesOf lists the task followed by the given steps.
func (h *History) messagesOf(steps []Step) []env.Message {
	out := append([]env.Message(nil), h.Task...)
	for _, s := range steps {
		out = append(out, s.Messages()...)
	}
	return out
}

// Renderer renders messages into a context's token ids with the chat template, the tools of the
// episode and a generation prompt. It is safe for concurrent use.
type Renderer struct {
	Tok   *tokenizer.Tokenizer
	Tools []json.RawMessage
	Vars  map[string]any // extra template variables (enable_thinking, ...)
}

// NewRenderer makes the renderer of an episode with tools.
func NewRenderer(tok *tokenizer.Tokenizer, tools []env.ToolSpec, vars map[string]any) (*Renderer, error) {
	r := &Renderer{Tok: tok, Vars: vars}
	for i, t := range tools {
		raw, err := json.Marshal(t)
		if err != nil {
			return nil, fmt.Errorf("rollout: tool spec %d (%s): %w", i, t.Function.Name, err)
		}
		r.Tools = append(r.Tools, raw)
	}
	return r, nil
}

// Text renders msgs with the generation prompt.
//
// Some templates (Llama 3.1's) refuse an assistant message with several tool calls, which the
// environments parse from one message when the model writes them. When the template refuses such
// a history, it is rendered again with each call in its own assistant message, followed by its
// result: the form those templates are trained on.
func (r *Renderer) Text(msgs []env.Message) (string, error) {
	text, err := r.render(msgs)
	if err != nil && hasMultiCall(msgs) {
		if split, err2 := r.render(splitToolCalls(msgs)); err2 == nil {
			return split, nil
		}
	}
	return text, err
}

func (r *Renderer) render(msgs []env.Message) (string, error) {
	tm := make([]tokenizer.Message, len(msgs))
	for i, m := range msgs {
		tm[i] = tokenizer.Message{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID, Name: m.Name}
		for _, c := range m.ToolCalls {
			tm[i].ToolCalls = append(tm[i].ToolCalls, tokenizer.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
		}
	}
	text, err := r.Tok.ApplyChatTemplate(tm, tokenizer.ChatOptions{AddGenerationPrompt: true, Tools: r.Tools, Vars: r.Vars})
	if err != nil {
		return "", fmt.Errorf("rollout: chat template: %w", err)
	}
	return text, nil
}

// IDs renders msgs and encodes them (the template writes the special tokens).
func (r *Renderer) IDs(msgs []env.Message) ([]int32, error) {
	text, err := r.Text(msgs)
	if err != nil {
		return nil, err
	}
	ids := r.Tok.Encode(text, false)
	out := make([]int32, len(ids))
	for i, id := range ids {
		out[i] = int32(id)
	}
	return out, nil
}

func hasMultiCall(msgs []env.Message) bool {
	for _, m := range msgs {
		if len(m.ToolCalls) > 1 {
			return true
		}
	}
	return false
}

// splitToolCalls turns an assistant message with n tool calls followed by its tool results into n
// (assistant with one call, its result) pairs; the prose goes with the first call. Results are
// matched by tool_call_id when they carry one, else taken in order. Messages after the results
// (environment feedback) follow unchanged.
func splitToolCalls(msgs []env.Message) []env.Message {
	var out []env.Message
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		if m.Role != "assistant" || len(m.ToolCalls) < 2 {
			out = append(out, m)
			continue
		}
		j := i + 1
		for j < len(msgs) && msgs[j].Role == "tool" {
			j++
		}
		results := msgs[i+1 : j]
		used := make([]bool, len(results))
		for k, call := range m.ToolCalls {
			one := m
			one.ToolCalls = []env.ToolCall{call}
			if k > 0 {
				one.Content = ""
			}
			out = append(out, one)
			if r := resultFor(call, k, results, used); r >= 0 {
				out = append(out, results[r])
			}
		}
		for r, u := range used { // results that matched no call keep their place at the end
			if !u {
				out = append(out, results[r])
			}
		}
		i = j - 1
	}
	return out
}

// resultFor finds the result of the k-th call: by id when the call has one, else the k-th result.
func resultFor(call env.ToolCall, k int, results []env.Message, used []bool) int {
	if call.ID != "" {
		for r, m := range results {
			if !used[r] && m.ToolCallID == call.ID {
				used[r] = true
				return r
			}
		}
	}
	if k < len(results) && !used[k] {
		used[k] = true
		return k
	}
	return -1
}
