package env

// TrajectoryRecord is a finished episode as JSON: what an external reward function receives
// (docs/rewards.md).
//
// Messages is the whole conversation in the Hugging Face chat shape: the opening messages
// (system, prompt), then per turn the assistant's message as parsed (prose and tool_calls) and
// what the environment answered (tool results, feedback). Turns[i].Messages is the half-open
// range [start, end) of turn i in Messages, its assistant message first; Turns[i].Text is what
// the model wrote, markup included.
//
// Reward, TurnRewards, Metrics and Error stay empty in what a reward function receives.
type TrajectoryRecord struct {
	TaskID      string         `json:"task_id"`
	Episode     int            `json:"episode"`
	Group       int            `json:"group"`
	DataSource  string         `json:"data_source,omitempty"`
	Ability     string         `json:"ability,omitempty"`
	GroundTruth string         `json:"ground_truth"`
	ExtraInfo   map[string]any `json:"extra_info,omitempty"`
	Tools       []ToolSpec     `json:"tools,omitempty"`
	Messages    []Message      `json:"messages"`
	Turns       []TurnRecord   `json:"turns"`
	// ContextTokens and OutputTokens sum |c_t| and |o_t| over the turns; MaxContextTokens is
	// max_t |c_t|.
	ContextTokens    int    `json:"context_tokens"`
	OutputTokens     int    `json:"output_tokens"`
	MaxContextTokens int    `json:"max_context_tokens"`
	End              string `json:"end,omitempty"`

	Reward      *float64           `json:"reward,omitempty"`
	TurnRewards []float64          `json:"turn_rewards,omitempty"`
	Metrics     map[string]float64 `json:"metrics,omitempty"`
	// Error is why a failed episode failed (a sample only; failed episodes are not scored).
	Error string `json:"error,omitempty"`
}

// TurnRecord is one assistant turn of a TrajectoryRecord.
type TurnRecord struct {
	// Messages is [start, end) in TrajectoryRecord.Messages: the assistant message, then the
	// tool results and feedback that answered it.
	Messages      [2]int   `json:"messages"`
	Text          string   `json:"text"`
	ContextTokens int      `json:"context_tokens"`
	OutputTokens  int      `json:"output_tokens"`
	Done          bool     `json:"done"`
	Info          TurnInfo `json:"info"`
}

// NewTrajectoryRecord builds the record of t.
func NewTrajectoryRecord(t *Trajectory) TrajectoryRecord {
	r := TrajectoryRecord{
		Episode: t.Episode, Group: t.Group, End: t.End, TaskID: t.Task.ID, DataSource: t.Task.DataSource, Ability: t.Task.Ability,
		GroundTruth: t.Task.GroundTruth, ExtraInfo: t.Task.Extra, Tools: t.Start.Tools,
		Messages: append([]Message{}, t.Start.Messages...), Turns: []TurnRecord{},
	}
	for _, tu := range t.Turns {
		start := len(r.Messages)
		a := tu.Result.Assistant
		if a.Role == "" { // an env that did not parse the message: keep the text as it was
			a = Text(RoleAssistant, tu.Assistant)
		}
		r.Messages = append(r.Messages, a)
		r.Messages = append(r.Messages, tu.Result.Messages...)
		r.Turns = append(r.Turns, TurnRecord{Messages: [2]int{start, len(r.Messages)}, Text: tu.Assistant,
			ContextTokens: tu.ContextTokens, OutputTokens: tu.OutputTokens, Done: tu.Result.Done, Info: tu.Result.Info})
		r.ContextTokens += tu.ContextTokens
		r.OutputTokens += tu.OutputTokens
	}
	r.MaxContextTokens = t.MaxContextTokens()
	return r
}
