package env

import (
	"context"
	"encoding/json"
)

// Env is one episode of an environment. The rollout drives it:
//
//	start, err := e.Reset(ctx, task)         // opening messages and tool specs
//	for !done {
//	    text := generate(condense(history))  // the assistant's message, decoded
//	    res, err := e.Step(ctx, text)        // env / tool messages, done, turn info
//	    history = append(history, res.Assistant); history = append(history, res.Messages...)
//	}
//	score := e.Rubric().Score(&trajectory)   // the rollout fills in token counts first
//	e.Close()
//
// One Env value serves one episode at a time and is not safe for concurrent use; make one per
// episode (New from the registry is cheap: shared resources such as a search index are built once
// and shared by the tools, which are safe for concurrent use). Envs run on goroutines other than
// the torch thread and never touch tensors.
//
// Malformed model output never makes Step return an error: it becomes a message to the model and
// a count in TurnInfo. Step returns an error only for misuse (Step before Reset or after Done), a
// cancelled context, or, for an environment behind a server (package env/openenv), a server that
// failed: the rollout then ends that episode as failed.
type Env interface {
	// Reset starts an episode for task and returns the opening messages (system and user) and the
	// tools the chat template should list. It may be called again to start a new episode.
	Reset(ctx context.Context, task Task) (Start, error)
	// Step takes the assistant's message (decoded text, without the end-of-turn token) and returns
	// what the environment answers.
	Step(ctx context.Context, assistant string) (StepResult, error)
	// MultiTurn reports whether episodes can have more than one assistant turn (tools or several
	// moves). Single-turn environments end after the first Step.
	MultiTurn() bool
	// Rubric returns the reward functions that score this environment's trajectories.
	Rubric() *Rubric
	// Close releases the episode's resources. It is idempotent.
	Close() error
}

// Task is one dataset row as an environment sees it.
type Task struct {
	// ID names the task in logs (a row index or the row's extra_info.index).
	ID string `json:"id"`
	// DataSource is verl's data_source column; rewards may dispatch on it.
	DataSource string `json:"data_source"`
	// Ability is verl's ability column ("math", "code", "qa", "game").
	Ability string `json:"ability"`
	// Prompt is the opening conversation (usually one user message).
	Prompt []Message `json:"prompt"`
	// GroundTruth is reward_model.ground_truth: the answer, or a JSON object for games.
	GroundTruth string `json:"ground_truth"`
	// Extra is extra_info, passed through.
	Extra map[string]any `json:"extra,omitempty"`
	// Seed drives any randomness inside the episode (a slippery lake). Copies of a task in one
	// GRPO group may share it or not: that is the rollout's choice.
	Seed int64 `json:"seed"`
}

// Start is what Reset returns.
type Start struct {
	// Messages opens the conversation: system prompt (if any) then the task's prompt.
	Messages []Message
	// Tools lists the tools for the chat template's tools argument; empty for tool-less envs.
	Tools []ToolSpec
}

// StepResult is what Step returns.
type StepResult struct {
	// Assistant is the assistant's message as parsed: content without the tool-call markup, and
	// ToolCalls. A condenser that re-renders history through the chat template uses it; the
	// trained sample keeps the model's own tokens.
	Assistant Message
	// Messages are appended after the assistant's: tool results (role "tool") and environment
	// feedback (role "user"). Empty when the episode ends without feedback.
	Messages []Message
	// Done ends the episode.
	Done bool
	// Info describes the turn for turn-level rewards and metrics.
	Info TurnInfo
}

// TurnInfo holds what happened in one turn. Rewards read it; the rollout logs it.
type TurnInfo struct {
	// ToolCalls counts tool calls the assistant attempted in this turn, including malformed ones.
	ToolCalls int `json:"tool_calls"`
	// ToolSuccesses counts calls that ran and returned without error (no traceback).
	ToolSuccesses int `json:"tool_successes"`
	// ToolErrors counts calls that failed: unparsable, unknown tool, bad arguments, the tool
	// returned an error, or a limit stopped it. ToolCalls = ToolSuccesses + ToolErrors.
	ToolErrors int `json:"tool_errors"`
	// ToolCallsDropped counts the calls past the per-message limit (ToolLimits.MaxCalls), not
	// run; ToolTimeouts the calls cancelled or not started because the message's tool time ran
	// out (ToolLimits.Time). Both are included in ToolErrors.
	ToolCallsDropped int `json:"tool_calls_dropped"`
	ToolTimeouts     int `json:"tool_timeouts"`
	// AnswerInToolResult is true when a tool result of this turn contains the ground-truth answer.
	AnswerInToolResult bool `json:"answer_in_tool_result"`
	// ValidActions and InvalidActions count game moves that were / were not understood (the
	// metrics num_valid_actions and num_invalid_actions also count tool calls: NumValidActions).
	ValidActions   int `json:"valid_actions"`
	InvalidActions int `json:"invalid_actions"`
	// Final is true on the turn that gave the final answer (no tool call).
	Final bool `json:"final"`
	// Truncated is true when the episode ended because it ran out of turns.
	Truncated bool `json:"truncated"`
	// Success is set by games on the last turn: goal reached, number guessed.
	Success bool `json:"success"`
	// Reward is an environment reward of this turn (a game's step reward); 0 for most envs.
	Reward float64 `json:"reward"`
}

// NumValidActions counts the turn's valid actions as the num_valid_actions metric does (the
// MT-GRPO scripts' count of code executions): tool calls that ran without error on tool tasks,
// moves understood in games.
func (in TurnInfo) NumValidActions() int { return in.ToolSuccesses + in.ValidActions }

// NumInvalidActions counts the rest: tool calls that failed or were not run, moves not understood.
func (in TurnInfo) NumInvalidActions() int { return in.ToolErrors + in.InvalidActions }

// Tool is a function the model can call. Implementations are safe for concurrent use: one value
// serves every episode.
type Tool interface {
	// Name is the function name the model writes in its call.
	Name() string
	// Description tells the model what the tool does.
	Description() string
	// Parameters is the JSON Schema of the arguments object.
	Parameters() json.RawMessage
	// Call runs the tool. args is the JSON arguments object as the model wrote it. An error is
	// shown to the model as the tool's answer and counted as a failed call; it never ends the
	// episode.
	Call(ctx context.Context, args json.RawMessage) (string, error)
}
