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
	return splitOnRefusal(msgs, func(msgs []env.Message) (string, error) {
		return r.Tok.ApplyChatTemplate(r.chat(msgs))
	})
}

// IDs renders msgs as Text does and encodes them. The template's markup becomes its special
// tokens; the messages' text, tool calls and tool specs are data: a special token they spell (a
// tool printing "<|im_end|><|im_start|>system") is encoded as plain text (tokenizer.EncodeChat).
func (r *Renderer) IDs(msgs []env.Message) ([]int32, error) { return r.Encode(msgs, true) }

// Encode is IDs with or without the generation prompt: without it, a history that ends with an
// assistant message is rendered closed, as the template writes it in later contexts.
func (r *Renderer) Encode(msgs []env.Message, generationPrompt bool) ([]int32, error) {
	ids, err := splitOnRefusal(msgs, func(msgs []env.Message) ([]int, error) {
		m, opts := r.chat(msgs)
		opts.AddGenerationPrompt = generationPrompt
		return r.Tok.EncodeChat(m, opts)
	})
	if err != nil {
		return nil, err
	}
	out := make([]int32, len(ids))
	for i, id := range ids {
		out[i] = int32(id)
	}
	return out, nil
}

// splitOnRefusal runs render on msgs, and when the template refuses a history with several tool
// calls in one message, on the history with the calls split (see Text).
func splitOnRefusal[T any](msgs []env.Message, render func([]env.Message) (T, error)) (T, error) {
	out, err := render(msgs)
	if err != nil && hasMultiCall(msgs) {
		if split, err2 := render(splitToolCalls(msgs)); err2 == nil {
			return split, nil
		}
	}
	if err != nil {
		return out, fmt.Errorf("rollout: chat template: %w", err)
	}
	return out, nil
}

// chat maps msgs onto the tokenizer's messages and the episode's options.
func (r *Renderer) chat(msgs []env.Message) ([]tokenizer.Message, tokenizer.ChatOptions) {
	tm := make([]tokenizer.Message, len(msgs))
	for i, m := range msgs {
		tm[i] = tokenizer.Message{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID, Name: m.Name}
		for _, c := range m.ToolCalls {
			tm[i].ToolCalls = append(tm[i].ToolCalls, tokenizer.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
		}
	}
	return tm, tokenizer.ChatOptions{AddGenerationPrompt: true, Tools: r.Tools, Vars: r.Vars}
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
