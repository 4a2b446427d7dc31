package rollout

import (
	"math/rand/v2"
	"strings"
	"time"

	"github.com/mtgrpo/mtgrpo/tokenizer"
)

// sequence is one sample in flight: its slot, what it generated so far and its stop state.
type sequence struct {
	req    *Request
	sample int
	slot   int
	rng    *rand.Rand // the sample's own stream: (seed, sample)
	maxNew int
	stopID map[int32]bool

	tokens     []int32
	lp, lpT    []float32
	next       int32 // the last sampled token, fed to the model in the next step
	admitted   time.Time
	firstToken time.Time

	// Stop strings: the text decoded so far (special tokens skipped) and the longest stop string.
	dec     *tokenizer.DecodeStream
	text    strings.Builder
	maxStop int
}

func newSequence(e *Engine, r *Request, sample, slot int, seed uint64, now time.Time) *sequence {
	s := &r.Sampling
	q := &sequence{req: r, sample: sample, slot: slot, rng: rand.New(rand.NewPCG(seed, uint64(sample))),
		maxNew: min(s.maxNew(), e.b.MaxLen()-len(r.Prompt)), admitted: now}
	if !s.IgnoreEOS {
		ids := s.StopTokenIDs
		if ids == nil {
			ids = e.stops
		}
		q.stopID = make(map[int32]bool, len(ids))
		for _, id := range ids {
			q.stopID[int32(id)] = true
		}
	}
	if len(s.StopStrings) > 0 {
		q.dec = e.tok.NewDecodeStream(true)
		for _, st := range s.StopStrings {
			q.maxStop = max(q.maxStop, len(st))
		}
	}
	return q
}

// accept appends a sampled token and reports whether the sequence ended, and why.
func (q *sequence) accept(d drawn, now time.Time) (FinishReason, string, bool) {
	if len(q.tokens) == 0 {
		q.firstToken = now
	}
	q.tokens = append(q.tokens, d.id)
	q.lp = append(q.lp, d.logProb)
	q.lpT = append(q.lpT, d.temperedLogProb)
	q.next = d.id
	if q.req.OnToken != nil {
		q.req.OnToken(q.sample, d.id)
	}
	if q.stopID[d.id] {
		return FinishEOS, "", true
	}
	if q.dec != nil {
		if stop, ok := q.matchStop(q.dec.Next(int(d.id))); ok {
			return FinishStop, stop, true
		}
	}
	if len(q.tokens) >= q.maxNew {
		return FinishLength, "", true
	}
	return "", "", false
}

// matchStop adds newly decoded text and looks for a stop string that ends inside it (it may start
// in text decoded from earlier tokens). On a match the text is cut before (or, with
// IncludeStopString, after) the earliest match.
func (q *sequence) matchStop(chunk string) (string, bool) {
	if chunk == "" {
		return "", false
	}
	from := max(0, q.text.Len()-q.maxStop+1)
	q.text.WriteString(chunk)
	all := q.text.String()
	at, which := -1, ""
	for _, st := range q.req.Sampling.StopStrings {
		if i := strings.Index(all[from:], st); i >= 0 && (at < 0 || from+i < at) {
			at, which = from+i, st
		}
	}
	if at < 0 {
		return "", false
	}
	end := at
	if q.req.Sampling.IncludeStopString {
		end = at + len(which)
	}
	q.text.Reset()
	q.text.WriteString(all[:end])
	return which, true
}

// result builds the finished sample.
func (q *sequence) result(e *Engine, why FinishReason, stop string, now time.Time) *Result {
	r := &Result{Request: q.req, Sample: q.sample, Tokens: q.tokens, LogProbs: q.lp, TemperedLogProbs: q.lpT,
		Finish: why, StopString: stop, PromptTokens: len(q.req.Prompt),
		Queued: q.admitted.Sub(q.req.submitted), Total: now.Sub(q.req.submitted)}
	if !q.firstToken.IsZero() {
		r.FirstToken = q.firstToken.Sub(q.req.submitted)
	}
	switch {
	case why == FinishStop:
		r.Text = q.text.String()
	case e.tok != nil:
		ids := make([]int, len(q.tokens))
		for i, id := range q.tokens {
			ids[i] = int(id)
		}
		r.Text = e.tok.Decode(ids, true)
	}
	return r
}
