package env

// Trajectory is a finished episode as the rubric scores it. The rollout builds it: the task, what
// Reset returned, and per turn the assistant's text, what Step returned and the token counts.
type Trajectory struct {
	Task  Task
	Start Start
	Turns []Turn
	// Episode is the episode's index in its rollout batch and Group its GRPO group; End says why
	// it stopped (the rollout's End* values). They name the trajectory in logs and records.
	Episode, Group int
	End            string
}

// Turn is one (context, output) pair of a trajectory.
type Turn struct {
	// Assistant is the assistant's message as generated (decoded).
	Assistant string
	// Result is what Step returned for it.
	Result StepResult
	// ContextTokens is |c_t|: the tokens of the (condensed) context the turn was generated from.
	ContextTokens int
	// OutputTokens is |o_t|: the tokens the model generated.
	OutputTokens int
}

// LastAssistant is the text of the last assistant turn ("" for an empty trajectory).
func (t *Trajectory) LastAssistant() string {
	if len(t.Turns) == 0 {
		return ""
	}
	return t.Turns[len(t.Turns)-1].Assistant
}

// MaxContextTokens is max_t |c_t|, the longest context the trajectory used.
func (t *Trajectory) MaxContextTokens() int {
	m := 0
	for _, tu := range t.Turns {
		if tu.ContextTokens > m {
			m = tu.ContextTokens
		}
	}
	return m
}

// Final is the last turn's info (zero for an empty trajectory).
func (t *Trajectory) Final() TurnInfo {
	if len(t.Turns) == 0 {
		return TurnInfo{}
	}
	return t.Turns[len(t.Turns)-1].Result.Info
}

// Stats sums the trajectory's turn information under the metric names verl users know:
// num_turns, tool_call_counts, tool_successes, tool_errors, num_valid_actions,
// num_invalid_actions, answer_in_tool_result (turns), truncated and success (0 or 1).
func (t *Trajectory) Stats() map[string]float64 {
	m := map[string]float64{"num_turns": float64(len(t.Turns))}
	for _, tu := range t.Turns {
		in := tu.Result.Info
		m["tool_call_counts"] += float64(in.ToolCalls)
		m["tool_successes"] += float64(in.ToolSuccesses)
		m["tool_errors"] += float64(in.ToolErrors)
		m["num_valid_actions"] += float64(in.NumValidActions())
		m["num_invalid_actions"] += float64(in.NumInvalidActions())
		m["answer_in_tool_result"] += b2f(in.AnswerInToolResult)
	}
	m["truncated"] = b2f(t.Final().Truncated)
	m["success"] = b2f(t.Final().Success)
	return m
}
