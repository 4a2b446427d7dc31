package env

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// ChatEnv is the environment of question-answering tasks, with or without tools: the model
// answers in one turn, or calls tools and answers in a later turn. A message with no tool call
// is the final answer and ends the episode; MaxTurns ends it otherwise (Truncated).
//
// gsm8k, gsm8k_python, calc_mult, wiki_qa, countdown and users' data are ChatEnvs that differ in
// system prompt, tools and rubric.
type ChatEnv struct {
	// System, if set, is prepended as the system message (tool instructions live here; the chat
	// template adds the tool list itself).
	System string
	// Tools the model may call; nil for single-turn tasks.
	Tools *Toolset
	// MaxTurns bounds assistant turns (1 = single turn).
	MaxTurns int
	// RubricFor picks the rubric for the current task.
	RubricFor func(Task) *Rubric
	// AnswerIn reports whether a tool result contains the task's answer (MT-GRPO's turn signal);
	// nil means ContainsAnswer.
	AnswerIn func(result string, t Task) bool

	task    Task
	turn    int
	started bool
	done    bool
}

var errNotStarted = errors.New("env: Step before Reset")

// Reset implements Env.
func (e *ChatEnv) Reset(_ context.Context, t Task) (Start, error) {
	if len(t.Prompt) == 0 {
		return Start{}, fmt.Errorf("env: task %s has an empty prompt", t.ID)
	}
	e.task, e.turn, e.started, e.done = t, 0, true, false
	var msgs []Message
	if e.System != "" {
		msgs = append(msgs, Text(RoleSystem, e.System))
	}
	msgs = append(msgs, t.Prompt...)
	return Start{Messages: msgs, Tools: e.Tools.Specs()}, nil
}

// Step implements Env.
func (e *ChatEnv) Step(ctx context.Context, text string) (StepResult, error) {
	if err := e.checkStep(ctx); err != nil {
		return StepResult{}, err
	}
	e.turn++
	var res StepResult
	var p ParsedMessage
	if e.Tools.Len() > 0 {
		p = ParseToolCalls(text)
	} else {
		p = ParsedMessage{Content: strings.TrimSpace(text)}
	}
	res.Assistant = Message{Role: RoleAssistant, Content: p.Content}
	if p.Attempts() == 0 {
		res.Done, res.Info.Final = true, true
		e.done = true
		return res, nil
	}
	msgs, outs, info := e.Tools.Run(ctx, e.turn-1, p)
	for _, o := range outs {
		res.Assistant.ToolCalls = append(res.Assistant.ToolCalls, o.Call)
		if o.Err == nil && e.answerIn(o.Result) {
			info.AnswerInToolResult = true
		}
	}
	res.Messages, res.Info = msgs, info
	if err := ctx.Err(); err != nil { // the episode was cancelled while its tools ran
		return StepResult{}, err
	}
	if e.turn >= e.maxTurns() {
		res.Done, res.Info.Truncated = true, true
		e.done = true
	}
	return res, nil
}

func (e *ChatEnv) checkStep(ctx context.Context) error {
	if !e.started {
		return errNotStarted
	}
	if e.done {
		return fmt.Errorf("env: Step after the episode of task %s ended", e.task.ID)
	}
	return ctx.Err()
}

func (e *ChatEnv) maxTurns() int {
	if e.MaxTurns <= 0 {
		return 1
	}
	return e.MaxTurns
}

func (e *ChatEnv) answerIn(result string) bool {
	if e.AnswerIn != nil {
		return e.AnswerIn(result, e.task)
	}
	return ContainsAnswer(result, e.task.GroundTruth)
}

// MultiTurn implements Env.
func (e *ChatEnv) MultiTurn() bool { return IsMultiTurn(e.Tools.Len(), e.maxTurns()) }

// Rubric implements Env.
func (e *ChatEnv) Rubric() *Rubric { return e.RubricFor(e.task) }

// Close implements Env.
func (e *ChatEnv) Close() error { return nil }

// ContainsAnswer reports whether text contains the ground truth: as a number among the text's
// numbers when the truth is numeric, else as a case-insensitive normalised substring.
func ContainsAnswer(text, truth string) bool {
	truth = strings.TrimSpace(truth)
	if truth == "" {
		return false
	}
	if _, ok := parseRat(truth); ok {
		for _, n := range numberRe.FindAllString(text, -1) {
			if AnswersEqual(cleanNumber(n), truth) {
				return true
			}
		}
		return false
	}
	nt := NormalizeText(truth)
	return nt != "" && strings.Contains(" "+NormalizeText(text)+" ", " "+nt+" ")
}
