package rollout

import (
	"fmt"

	"github.com/mtgrpo/mtgrpo/env"
)

// Summary has the model condense its own history: when the steps since the last summary become
// too many (MaxSteps) or their context too long (MaxTokens), the model is asked, from the task,
// the previous summary and those steps, to write a short summary; the summary then replaces them
// (all but the last KeepLast) in every later context, as a user message after the task.
type Summary struct {
	// MaxSteps triggers a summary when more steps than this follow the last one (0: no limit).
	MaxSteps int
	// MaxTokens triggers a summary when the context would be longer (0: no limit).
	MaxTokens int
	// KeepLast steps stay verbatim after the summary.
	KeepLast int
	// MaxSummaryTokens caps the summary's length (0: 256).
	MaxSummaryTokens int
	// Train makes the summary a trained sample (its tokens get loss mask 1 and the trajectory's
	// advantage); otherwise it is recorded with mask 0.
	Train bool
	// Instruction asks for the summary ("" means DefaultSummaryInstruction); Header introduces it
	// in later contexts ("" means DefaultSummaryHeader).
	Instruction, Header string
}

// Default texts of the summary condenser.
const (
	DefaultSummaryInstruction = "Summarize the conversation so far in a few sentences: what has been tried, " +
		"what was learned and what remains to do. Write only the summary."
	DefaultSummaryHeader = "Summary of the earlier steps:\n"
)

// Name is "summary".
func (Summary) Name() string { return "summary" }

// Condense returns the context with the current summary, or asks for a new summary.
func (c Summary) Condense(h *History, r *Renderer) (Plan, error) {
	if c.MaxSteps < 0 || c.MaxTokens < 0 || c.KeepLast < 0 {
		return Plan{}, fmt.Errorf("rollout: summary condenser: max_steps %d, max_tokens %d, keep_last %d must be >= 0",
			c.MaxSteps, c.MaxTokens, c.KeepLast)
	}
	fresh := h.Steps[h.Summarized:]
	p, err := plan(c.messages(h, fresh), r)
	if err != nil {
		return Plan{}, err
	}
	due := c.MaxSteps > 0 && len(fresh) > c.MaxSteps || c.MaxTokens > 0 && len(p.IDs) > c.MaxTokens
	if !due || len(fresh) <= c.KeepLast {
		return p, nil
	}
	covers := len(h.Steps) - c.KeepLast
	instr := c.Instruction
	if instr == "" {
		instr = DefaultSummaryInstruction
	}
	prompt := append(c.messages(h, h.Steps[h.Summarized:covers]), env.Text(env.RoleUser, instr))
	ids, err := r.IDs(prompt)
	if err != nil {
		return Plan{}, err
	}
	return Plan{Summarize: prompt, SummaryIDs: ids, SummaryCovers: covers, SummaryMaxTokens: c.summaryTokens(),
		TrainSummary: c.Train}, nil
}

// messages is the task, the summary so far (if any) and steps.
func (c Summary) messages(h *History, steps []Step) []env.Message {
	msgs := append([]env.Message(nil), h.Task...)
	if h.Summary != "" {
		header := c.Header
		if header == "" {
			header = DefaultSummaryHeader
		}
		msgs = append(msgs, env.Text(env.RoleUser, header+h.Summary))
	}
	for _, s := range steps {
		msgs = append(msgs, s.Messages()...)
	}
	return msgs
}

func (c Summary) summaryTokens() int {
	if c.MaxSummaryTokens <= 0 {
		return 256
	}
	return c.MaxSummaryTokens
}
