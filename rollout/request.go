package rollout

import (
	"fmt"
	"time"

	"github.com/mtgrpo/mtgrpo/env"
)

// Request asks for N continuations of one prompt. The N samples share the prompt's prefill: it
// runs once and its KV cache is copied into the other samples' slots.
type Request struct {
	// Prompt is the context's token ids (already rendered with the chat template).
	Prompt []int32
	// N is the number of samples (0 means 1).
	N int
	// Sampling holds the request's sampling settings.
	Sampling Sampling
	// Tag is the caller's, returned untouched in each Result.
	Tag any
	// Turn says what the driver's request is for (nil for other callers; the engine ignores it).
	Turn *TurnTag
	// OnToken, when set, is called on the engine's goroutine with each token a sample draws, as
	// it is drawn (streaming responses). It must return at once and never call the engine.
	OnToken func(sample int, id int32)

	id        int64
	submitted time.Time
}

// TurnTag is what one of the driver's requests is generated for, for generators that answer from
// it rather than from the token ids (Scripted.Turn). Copies of a task that share
// a first request share its tag.
type TurnTag struct {
	Task env.Task
	// Messages is the context before rendering (the condenser's choice); Kind is KindAction or
	// KindSummary.
	Messages []env.Message
	Kind     TurnKind
}

// FinishReason says why a sequence ended.
type FinishReason string

// Finish reasons.
const (
	// FinishEOS: a stop token id was sampled (it is the output's last token).
	FinishEOS FinishReason = "eos"
	// FinishStop: the decoded text matched a stop string.
	FinishStop FinishReason = "stop"
	// FinishLength: MaxNewTokens, or the KV cache's length, was reached.
	FinishLength FinishReason = "length"
	// FinishAbort: the request was aborted (Engine.Abort).
	FinishAbort FinishReason = "abort"
)

// Result is one finished sample.
type Result struct {
	Request *Request
	// Sample is the index of this sample within the request (0..N-1).
	Sample int
	// Tokens are the generated ids, including a final stop token.
	Tokens []int32
	// LogProbs[i] is log p(Tokens[i]) under the distribution it was sampled from (after
	// temperature and top-k/top-p/min-p truncation; 0 for greedy). TemperedLogProbs[i] is after
	// temperature only (what the trainer recomputes). See sampler.go.
	LogProbs         []float32
	TemperedLogProbs []float32
	// Text is the decoded output without special tokens, cut before a matched stop string unless
	// Sampling.IncludeStopString ("" when the engine has no tokenizer).
	Text string
	// Finish says why the sample ended; StopString is the matched stop string (FinishStop).
	Finish     FinishReason
	StopString string
	// PromptTokens is len(Request.Prompt).
	PromptTokens int
	// Queued is the time from Submit to the prefill, FirstToken from Submit to the first token,
	// Total from Submit to the end.
	Queued, FirstToken, Total time.Duration
}

func (r *Request) samples() int {
	if r.N <= 0 {
		return 1
	}
	return r.N
}

// check validates a request against the engine.
func (e *Engine) check(r *Request) error {
	if r == nil {
		return fmt.Errorf("rollout: nil request")
	}
	if len(r.Prompt) == 0 {
		return fmt.Errorf("rollout: request has an empty prompt")
	}
	if n := len(r.Prompt); n >= e.b.MaxLen() {
		return fmt.Errorf("rollout: prompt of %d tokens leaves no room in the KV cache of %d tokens per sequence", n, e.b.MaxLen())
	}
	V := e.b.Vocab()
	for i, id := range r.Prompt {
		if id < 0 || int(id) >= V {
			return fmt.Errorf("rollout: prompt token %d: id %d is outside the vocabulary [0, %d)", i, id, V)
		}
	}
	if err := r.Sampling.Validate(); err != nil {
		return fmt.Errorf("rollout: %w", err)
	}
	if len(r.Sampling.StopStrings) > 0 && e.tok == nil {
		return fmt.Errorf("rollout: stop strings need an engine with a tokenizer")
	}
	return nil
}
