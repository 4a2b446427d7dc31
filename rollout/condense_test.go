package rollout

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/mtgrpo/mtgrpo/env"
)

// handHistory: a system prompt, a task and three steps, each an assistant message with a tool call
// answered by a tool result, the last answered by user feedback.
func handHistory() *History {
	call := func(expr string) env.Message {
		return env.Message{Role: env.RoleAssistant, Content: "Let me compute.", ToolCalls: []env.ToolCall{{ID: "c", Type: "function",
			Function: env.FunctionCall{Name: "calculator", Arguments: []byte(`{"expression": "` + expr + `"}`)}}}}
	}
	tool := func(out string) env.Message {
		return env.Message{Role: env.RoleTool, Content: out, ToolCallID: "c", Name: "calculator"}
	}
	return &History{
		Task: []env.Message{env.Text(env.RoleSystem, "You are a calculator user."), env.Text(env.RoleUser, "What is 12 * 34 + 5?")},
		Steps: []Step{
			{Assistant: call("12 * 34"), Results: []env.Message{tool("408")}},
			{Assistant: call("408 + 5"), Results: []env.Message{tool("413")}},
			{Assistant: env.Text(env.RoleAssistant, "#### 412"), Results: []env.Message{env.Text(env.RoleUser, "Wrong, try again.")}},
		},
	}
}

func renderer(t *testing.T) *Renderer {
	t.Helper()
	r, err := NewRenderer(tiny(t), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// messages of the task followed by steps[from:] of h.
func taskPlus(h *History, from int) []env.Message {
	out := append([]env.Message(nil), h.Task...)
	for _, s := range h.Steps[from:] {
		out = append(out, s.Assistant)
		out = append(out, s.Results...)
	}
	return out
}

func checkPlan(t *testing.T, name string, p Plan, err error, want []env.Message, r *Renderer) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if !reflect.DeepEqual(p.Messages, want) {
		t.Errorf("%s: messages\n%+v\nwant\n%+v", name, p.Messages, want)
	}
	ids, _ := r.IDs(want)
	if !slices.Equal(p.IDs, ids) {
		t.Errorf("%s: ids are not the rendering of the messages", name)
	}
}

func TestFullAndLastN(t *testing.T) {
	h, r := handHistory(), renderer(t)
	p, err := Full{}.Condense(h, r)
	checkPlan(t, "full", p, err, taskPlus(h, 0), r)
	// The rendering is the chat template's: the tool call is re-rendered in <tool_call> markup
	// and the tool result as a <tool_response> user turn.
	text, _ := r.Text(p.Messages)
	for _, s := range []string{"<|im_start|>system\nYou are a calculator user.<|im_end|>", "<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"12 * 34\"}}\n</tool_call>",
		"<tool_response>\n413\n</tool_response>", "<|im_start|>assistant\n"} {
		if !strings.Contains(text, s) {
			t.Errorf("full context lacks %q", s)
		}
	}
	p, err = LastN{N: 2}.Condense(h, r)
	checkPlan(t, "last 2", p, err, taskPlus(h, 1), r)
	p, err = LastN{N: 0}.Condense(h, r)
	checkPlan(t, "last 0", p, err, h.Task, r)
	p, err = LastN{N: 9}.Condense(h, r)
	checkPlan(t, "last 9", p, err, taskPlus(h, 0), r)
	if _, err := (LastN{N: -1}).Condense(h, r); err == nil {
		t.Error("negative N accepted")
	}
}

// The budget is set between the lengths of (task + last step) and (task + last two steps): the
// two oldest steps are dropped. Below the task + last step, the longest message is cut.
func TestTokenBudget(t *testing.T) {
	h, r := handHistory(), renderer(t)
	n := func(from int) int { ids, _ := r.IDs(taskPlus(h, from)); return len(ids) }
	if !(n(2) < n(1) && n(1) < n(0)) {
		t.Fatalf("lengths %d %d %d not increasing", n(2), n(1), n(0))
	}
	p, err := TokenBudget{MaxTokens: n(0)}.Condense(h, r)
	checkPlan(t, "budget = full", p, err, taskPlus(h, 0), r)
	p, err = TokenBudget{MaxTokens: n(1) - 1}.Condense(h, r)
	checkPlan(t, "budget < last two", p, err, taskPlus(h, 2), r)

	// Truncation: a long feedback message in the last step is the longest and gets cut.
	long := strings.Repeat("The answer is wrong. ", 40)
	h.Steps[2].Results[0].Content = long
	budget := n(2) - 60
	p, err = TokenBudget{MaxTokens: budget}.Condense(h, r)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.IDs) > budget {
		t.Errorf("%d tokens over the budget %d", len(p.IDs), budget)
	}
	cut := p.Messages[len(p.Messages)-1].Content
	if !strings.HasSuffix(cut, " [...]") || !strings.HasPrefix(long, strings.TrimSuffix(cut, " [...]")) || len(cut) >= len(long) {
		t.Errorf("cut message %q is not a marked prefix of the original", cut)
	}
	if !reflect.DeepEqual(p.Messages[:len(p.Messages)-1], taskPlus(h, 2)[:len(p.Messages)-1]) {
		t.Error("messages other than the longest changed")
	}
	// A budget below the template's own tokens cannot be met.
	if _, err := (TokenBudget{MaxTokens: 5}).Condense(h, r); !errors.Is(err, ErrContextBudget) {
		t.Errorf("budget 5: error %v, want ErrContextBudget", err)
	}
}

// MaxSteps 1, KeepLast 1: with three steps unsummarised the condenser asks for a summary of the
// first two (prompt: task, those steps, the instruction); with the summary stored, the context is
// the task, the summary as a user message and the last step. Two steps after a summary of one:
// one fresh step, not due.
func TestSummaryCondenser(t *testing.T) {
	h, r := handHistory(), renderer(t)
	c := Summary{MaxSteps: 1, KeepLast: 1, MaxSummaryTokens: 40, Train: true}
	p, err := c.Condense(h, r)
	if err != nil {
		t.Fatal(err)
	}
	wantPrompt := append(taskPlus(h, 0)[:len(taskPlus(h, 0))-2], env.Text(env.RoleUser, DefaultSummaryInstruction))
	if p.Summarize == nil || p.SummaryCovers != 2 || !reflect.DeepEqual(p.Summarize, wantPrompt) || p.SummaryMaxTokens != 40 || !p.TrainSummary {
		t.Fatalf("summary plan %+v", p)
	}
	if ids, _ := r.IDs(wantPrompt); !slices.Equal(ids, p.SummaryIDs) {
		t.Error("summary ids are not the rendering of its prompt")
	}
	h.Summary, h.Summarized = "Computed 12*34 = 408 and 408+5 = 413.", 2
	p, err = c.Condense(h, r)
	want := append(append([]env.Message(nil), h.Task...), env.Text(env.RoleUser, DefaultSummaryHeader+h.Summary))
	want = append(want, h.Steps[2].Assistant, h.Steps[2].Results[0])
	checkPlan(t, "after summary", p, err, want, r)

	// Not due: two steps, MaxSteps 2.
	h2 := handHistory()
	h2.Steps = h2.Steps[:2]
	p, err = Summary{MaxSteps: 2}.Condense(h2, r)
	checkPlan(t, "not due", p, err, taskPlus(h2, 0), r)
	// Token trigger: a budget below the full context asks for a summary of all steps (KeepLast 0).
	ids, _ := r.IDs(taskPlus(h2, 0))
	p, err = Summary{MaxTokens: len(ids) - 1}.Condense(h2, r)
	if err != nil || p.Summarize == nil || p.SummaryCovers != 2 {
		t.Errorf("token trigger: %+v %v", p, err)
	}
}
