package rollout

import (
	"fmt"
	"time"

	"github.com/mtgrpo/mtgrpo/env"
)

// Trajectory is one finished episode: what the trainer trains on. Each Turn is its own sample
// (its context masked, its output trained); Reward and the turn rewards come from the
// environment's Rubric.
type Trajectory struct {
	// Index is the episode's position in the Run input; Group its GRPO group.
	Index, Group int
	Task         env.Task
	// Start is what the environment's Reset returned: the opening messages and the tool specs.
	Start env.Start
	Turns []*Turn
	// Score is the Rubric's verdict (Reward, TurnRewards per action turn, TurnReward, Metrics).
	Score  env.Score
	Reward float64
	// End says why the episode stopped: EndDone (the environment ended it), EndMaxTurns,
	// EndContextBudget (the next context did not fit), EndError (Err says what).
	End EndReason
	Err error
	// ActionTurns counts the turns the environment saw (summary turns excluded).
	ActionTurns int
	// MaxContextTokens is max_t |c_t| over action turns (the reward input of condensed-context
	// GRPO); ContextTokens and OutputTokens are totals over all turns.
	MaxContextTokens, ContextTokens, OutputTokens int
	Profile                                       EpisodeProfile
}

// EndReason says how an episode ended.
type EndReason string

// How episodes end.
const (
	EndDone          EndReason = "done"
	EndMaxTurns      EndReason = "max_turns"
	EndContextBudget EndReason = "context_budget"
	EndError         EndReason = "error"
)

// TurnKind says what a turn's output is for.
type TurnKind string

// Turn kinds.
const (
	KindAction  TurnKind = "action"  // the model acts in the environment
	KindSummary TurnKind = "summary" // the model summarises its history (summary condenser)
)

// SpanKind says which side of a turn a span's tokens are on.
type SpanKind string

// Span kinds.
const (
	SpanContext SpanKind = "context" // c_t: what the model was given
	SpanOutput  SpanKind = "output"  // o_t: what it generated
)

// Span is a run of a turn's tokens [Start, End) (indices into Context ++ Output) with the loss mask
// it was declared with when appended.
type Span struct {
	Start, End int
	Kind       SpanKind
	Trained    bool
}

// Turn is one (c_t, o_t) sample.
type Turn struct {
	Kind    TurnKind
	Context []int32 // c_t exactly as the model saw it
	Output  []int32 // o_t exactly as generated (a final stop token included)
	// LogProbs and TemperedLogProbs are the sampler's per-token log-probs of Output (see Result).
	LogProbs, TemperedLogProbs []float32
	Spans                      []Span
	// Text is the decoded output handed to the environment; Finish why generation stopped.
	Text   string
	Finish FinishReason
	// Messages is the context before rendering (what the condenser chose).
	Messages []env.Message
	// Step is what the environment returned (action turns): the parsed assistant message (tool
	// calls), tool results and feedback, Done and Info.
	Step env.StepResult
	// Reward is the Rubric's turn reward of this turn (action turns).
	Reward float64
	Timing TurnTiming
}

// TurnTiming is where a turn's time went.
type TurnTiming struct {
	Condense time.Duration // condenser, chat template and tokenisation (a summary turn: its own)
	Queue    time.Duration // waiting for a slot in the engine
	Generate time.Duration // from submission to the last token (Queue included)
	Env      time.Duration // env.Step: parsing, tools, feedback
}

// ActionTurn is an action turn of a context and the output generated from it, the output trained
// unless trained is false: how turns recorded outside the driver (an agent program's calls) are
// made, with the same spans.
func ActionTurn(context, output []int32, trained bool) *Turn {
	t := &Turn{Kind: KindAction}
	t.appendSpan(context, SpanContext, false)
	t.appendSpan(output, SpanOutput, trained)
	return t
}

// appendSpan adds ids to the turn with the mask they get in training. Every token of a turn goes
// through here, so no span exists without a declared mask.
func (t *Turn) appendSpan(ids []int32, kind SpanKind, trained bool) {
	start := len(t.Context) + len(t.Output)
	if kind == SpanContext {
		t.Context = append(t.Context, ids...)
	} else {
		t.Output = append(t.Output, ids...)
	}
	t.Spans = append(t.Spans, Span{Start: start, End: start + len(ids), Kind: kind, Trained: trained})
}

// Tokens is the sample's sequence: Context followed by Output.
func (t *Turn) Tokens() []int32 {
	return append(append(make([]int32, 0, len(t.Context)+len(t.Output)), t.Context...), t.Output...)
}

// Mask is the loss mask over Tokens (true = trained), from the spans.
func (t *Turn) Mask() []bool {
	m := make([]bool, len(t.Context)+len(t.Output))
	for _, s := range t.Spans {
		for i := s.Start; i < s.End; i++ {
			m[i] = s.Trained
		}
	}
	return m
}

// Trained reports whether any token of the turn is trained.
func (t *Turn) Trained() bool {
	for _, s := range t.Spans {
		if s.Trained && s.End > s.Start {
			return true
		}
	}
	return false
}

// EpisodeProfile sums an episode's time by phase.
type EpisodeProfile struct {
	Generate, Queue, Env, Condense, Reward, Reset time.Duration
	Wall                                          time.Duration
}

// SumProfiles adds up the phases of the trajectories' profiles (Wall stays 0: episodes overlap).
func SumProfiles(trajs []*Trajectory) EpisodeProfile {
	var sum EpisodeProfile
	for _, t := range trajs {
		q := t.Profile
		sum.Generate += q.Generate
		sum.Queue += q.Queue
		sum.Env += q.Env
		sum.Condense += q.Condense
		sum.Reward += q.Reward
		sum.Reset += q.Reset
	}
	return sum
}

// Sample is a turn laid out for training: the sequence, where scoring starts, the loss mask and
// the sampler's log-probs, all indexed by token position.
type Sample struct {
	// IDs is Context followed by Output.
	IDs []int32
	// ScoreFrom is the first position whose log-prob the trainer needs (len(Context)): earlier
	// tokens are context and never trained.
	ScoreFrom int
	// Mask[i] is true where token i is trained (from the turn's spans).
	Mask []bool
	// LogProbs[i] is the sampler's log-prob of IDs[i] after temperature only (what the trainer
	// recomputes with the same temperature); 0 before ScoreFrom.
	LogProbs []float32
}

// Sample returns the turn as one training sample. The sampler's log-probs are placed at their
// tokens' positions, as model.Output lays out the trainer's.
func (t *Turn) Sample() Sample {
	ids := t.Tokens()
	lp := make([]float32, len(ids))
	copy(lp[len(t.Context):], t.TemperedLogProbs)
	return Sample{IDs: ids, ScoreFrom: len(t.Context), Mask: t.Mask(), LogProbs: lp}
}

// Failures counts the failed episodes of trajs (Err set) and says why: the first failure's error,
// and how many others there were. It is "" when none failed.
func Failures(trajs []*Trajectory) (int, string) {
	n := 0
	var first error
	for _, tr := range trajs {
		if tr.Err != nil {
			if n == 0 {
				first = tr.Err
			}
			n++
		}
	}
	switch n {
	case 0:
		return 0, ""
	case 1:
		return 1, first.Error()
	}
	return n, fmt.Sprintf("%v (and %d more)", first, n-1)
}
