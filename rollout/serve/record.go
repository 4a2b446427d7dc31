package serve

import (
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/mtgrpo/mtgrpo/env"
	"github.com/mtgrpo/mtgrpo/rollout"
)

// Call is one chat completion as the engine served it: what the trainer trains on.
type Call struct {
	// Index is the call's position in its session; Segment the segment it belongs to (calls of
	// one segment extend one another); Extends the index of the call whose ids it reuses (-1:
	// it starts a segment).
	Index, Segment, Extends int
	// Prompt is the context's ids exactly as the engine was given them; its first Reused ids are
	// the extended call's prompt and output (and the end token the template closes an output
	// with when the model did not write one), taken as they were, not re-encoded.
	Prompt []int32
	Reused int
	// Output, LogProbs and TemperedLogProbs are what the engine sampled (rollout.Result).
	Output                     []int32
	LogProbs, TemperedLogProbs []float32
	Finish                     rollout.FinishReason
	// Text is the decoded output; Reply the assistant message returned (content and parsed tool
	// calls, with the ids given to them).
	Text  string
	Reply env.Message
	// Messages and Tools are the request's, as the chat template rendered them.
	Messages []env.Message
	Tools    []env.ToolSpec
	// Overridden lists the request's sampling fields that the run's settings replaced.
	Overridden   []string
	Queue, Total time.Duration

	base      []int32 // canonical ids of Messages + Reply without a generation prompt (lazy)
	baseOnce  sync.Once
	fullStops int // stop ids in the canonical render of Messages with the generation prompt
}

// maxCandidates bounds the calls of a session that a new call may extend (the newest ones).
const maxCandidates = 16

// Session is the calls of one API key: one episode in training, one client in `mtgrpo serve`.
// It is safe for concurrent use.
type Session struct {
	Key string
	lim Limits
	// keep, when > 0, bounds the calls kept to the newest keep (a session of mtgrpo serve, which
	// nobody trains on); 0 keeps every call (an episode).
	keep int

	mu       sync.Mutex
	calls    []*Call
	count    int // calls completed, kept or not
	segments int
	tokens   int  // sampled tokens so far
	inflight int  // calls being generated
	closed   bool // the episode is over: calls are refused
	limited  string
	reward   *Reward
	done     chan struct{}  // closed by Close
	aborts   map[int]func() // aborts the calls in flight, by admission number
	admitted int
}

// Limits bound one session: calls, sampled tokens (0: none).
type Limits struct {
	MaxCalls  int
	MaxTokens int
}

// Reward is what a program reported for its episode on the reward route.
type Reward struct {
	Reward  float64
	Metrics map[string]float64
	Error   string
}

func newSession(key string, lim Limits) *Session {
	return &Session{Key: key, lim: lim, done: make(chan struct{}), aborts: map[int]func(){}}
}

// Calls returns the completed calls in the order they finished.
func (s *Session) Calls() []*Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

// Reward returns the reward reported on the reward route (nil: none).
func (s *Session) Reward() *Reward {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reward
}

// Limited names the limit the session ran into ("" if none).
func (s *Session) Limited() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.limited
}

// Done is closed when the session is closed.
func (s *Session) Done() <-chan struct{} { return s.done }

// Close ends the session: calls in flight are aborted and later ones refused.
func (s *Session) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	aborts := s.aborts
	s.aborts = nil
	s.mu.Unlock()
	close(s.done)
	for _, a := range aborts {
		a()
	}
}

// admit checks the session's limits for a new call and counts it in flight; maxNew is lowered to
// the tokens left. The returned number identifies the call to finish.
func (s *Session) admit(maxNew *int, abort func()) (int, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return 0, &apiError{Status: 409, Message: "the episode of this API key is over", Type: typeInvalid, Code: strp(codeEnded)}
	case s.lim.MaxCalls > 0 && s.count+s.inflight >= s.lim.MaxCalls:
		s.limited = "max_calls"
		return 0, &apiError{Status: 429, Message: "this episode made its limit of " + itoa(s.lim.MaxCalls) + " calls (env.agent.max_calls)",
			Type: typeInvalid, Code: strp(codeLimit)}
	case s.lim.MaxTokens > 0 && s.tokens >= s.lim.MaxTokens:
		s.limited = "max_tokens"
		return 0, &apiError{Status: 429, Message: "this episode sampled its limit of " + itoa(s.lim.MaxTokens) + " tokens (env.agent.max_tokens)",
			Type: typeInvalid, Code: strp(codeLimit)}
	}
	if s.lim.MaxTokens > 0 {
		*maxNew = min(*maxNew, s.lim.MaxTokens-s.tokens)
	}
	s.inflight++
	s.admitted++
	s.aborts[s.admitted] = abort
	return s.admitted, nil
}

// finish records a completed call (c nil: the call failed or was aborted).
func (s *Session) finish(id int, c *Call) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inflight--
	delete(s.aborts, id)
	if c == nil {
		return
	}
	c.Index = s.count
	s.count++
	if c.Extends < 0 {
		c.Segment = s.segments
		s.segments++
	}
	s.tokens += len(c.Output)
	s.calls = append(s.calls, c)
	if s.keep > 0 && len(s.calls) > s.keep {
		s.calls = slices.Delete(s.calls, 0, len(s.calls)-s.keep)
	}
}

// busy says whether a call of the session is being generated.
func (s *Session) busy() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inflight > 0
}

// candidates are the newest completed calls, newest first.
func (s *Session) candidates() []*Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.calls)
	out := make([]*Call, 0, min(n, maxCandidates))
	for i := n - 1; i >= 0 && len(out) < maxCandidates; i-- {
		out = append(out, s.calls[i])
	}
	return out
}

func itoa(n int) string { return strconv.Itoa(n) }
