package rollout

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/mtgrpo/mtgrpo/tokenizer"
	"github.com/mtgrpo/mtgrpo/torch"
)

// EngineConfig tunes the engine (Engine); DriverConfig is the episode driver's.
type EngineConfig struct {
	// Seed seeds the seeds of requests that bring none.
	Seed uint64
	// MaxPrefillTokens bounds the prompt tokens admitted in one step, so that decoding sequences
	// are not stalled by a burst of long prompts (vLLM's max_num_batched_tokens). At least one
	// prompt is admitted per step whatever its length. 0 means 8192.
	MaxPrefillTokens int
	// PassTokens is the cost of one extra forward pass, in padded token positions, when deciding
	// whether a step's prompts and decodes share one pass (their rows are padded to the longest
	// prompt) or run as two. 0 means 256.
	PassTokens int
}

// Engine is the batched generation engine: a queue of requests, a KV cache of slots, and a step
// that runs one forward pass over every active sequence (continuous batching: prompts admitted in
// a step are prefilled in the same pass as the others decode, and a finished sequence's slot goes
// to the next waiting sample at once).
//
// An Engine is driven from the torch thread and is not safe for concurrent use: Submit, Step,
// Abort and Generate are called inside torch.Run.
type Engine struct {
	b     Backend
	tok   *tokenizer.Tokenizer
	cfg   EngineConfig
	rng   *rand.Rand
	stops []int

	waiting []*waiting
	active  []*sequence // by slot; nil = free
	free    []int       // free slots, used from the end
	nextID  int64
	stats   Stats

	// The static step's host buffers, reused (static.go).
	draws  []draw
	tokens []int32
	params []float32
	out    []float64
}

// waiting is a request whose samples are not all admitted yet.
type waiting struct {
	req  *Request
	seed uint64
	next int // next sample index to admit
}

// NewEngine makes an engine over a backend. tok decodes outputs to Result.Text and matches stop
// strings; it may be nil when neither is needed.
func NewEngine(b Backend, tok *tokenizer.Tokenizer, cfg EngineConfig) (*Engine, error) {
	if b == nil {
		return nil, fmt.Errorf("rollout: nil backend")
	}
	if b.Slots() <= 0 || b.MaxLen() <= 1 {
		return nil, fmt.Errorf("rollout: backend has %d slots of %d tokens", b.Slots(), b.MaxLen())
	}
	if cfg.MaxPrefillTokens <= 0 {
		cfg.MaxPrefillTokens = 8192
	}
	if cfg.PassTokens <= 0 {
		cfg.PassTokens = 256
	}
	e := &Engine{b: b, tok: tok, cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, 0x726f6c6c)),
		stops: b.StopTokenIDs(), active: make([]*sequence, b.Slots())}
	for s := b.Slots() - 1; s >= 0; s-- {
		e.free = append(e.free, s)
	}
	return e, nil
}

// Backend returns the engine's backend.
func (e *Engine) Backend() Backend { return e.b }

// MaxLen is the backend's cache length per slot: the longest context plus output of one sample.
func (e *Engine) MaxLen() int { return e.b.MaxLen() }

// Submit queues a request. It fails, naming the field, on a bad request; nothing is queued then.
func (e *Engine) Submit(r *Request) error {
	if err := e.check(r); err != nil {
		return err
	}
	seed := e.rng.Uint64()
	if r.Sampling.Seed != nil {
		seed = *r.Sampling.Seed
	}
	e.nextID++
	r.id, r.submitted = e.nextID, time.Now()
	e.waiting = append(e.waiting, &waiting{req: r, seed: seed})
	return nil
}

// Idle reports whether nothing is queued or running.
func (e *Engine) Idle() bool { return len(e.waiting) == 0 && e.Running() == 0 }

// Running is the number of sequences in the cache.
func (e *Engine) Running() int { return e.b.Slots() - len(e.free) }

// Waiting is the number of samples not yet admitted.
func (e *Engine) Waiting() int {
	n := 0
	for _, w := range e.waiting {
		n += w.req.samples() - w.next
	}
	return n
}

// Stats returns the engine's counters since it was made, with the static step's CUDA graph
// counters when the backend has them.
func (e *Engine) Stats() Stats {
	s := e.stats
	if g, ok := e.b.(interface{ DecoderStats() torch.DecoderStats }); ok {
		d := g.DecoderStats()
		s.GraphCaptures, s.GraphCaptureTime, s.GraphPoolBytes = int(d.Captures), d.CaptureTime, d.PoolBytes
	}
	return s
}

// Abort ends every sample of r, queued or running, with FinishAbort and returns their results.
func (e *Engine) Abort(r *Request) []*Result {
	now := time.Now()
	var out []*Result
	for i := 0; i < len(e.waiting); i++ {
		if w := e.waiting[i]; w.req == r {
			for k := w.next; k < r.samples(); k++ {
				out = append(out, &Result{Request: r, Sample: k, Finish: FinishAbort, PromptTokens: len(r.Prompt),
					Total: now.Sub(r.submitted)})
			}
			e.waiting = append(e.waiting[:i], e.waiting[i+1:]...)
			i--
		}
	}
	for _, q := range e.active {
		if q != nil && q.req == r {
			out = append(out, q.result(e, FinishAbort, "", now))
			e.release(q)
		}
	}
	_ = e.compact() // on a failed copy the holes stay: slower steps, same results
	return out
}

// Generate submits reqs, steps until all of them are done and returns the results per request,
// in sample order. Other requests already queued run too; their results are dropped.
func (e *Engine) Generate(reqs []*Request) ([][]*Result, error) {
	out := make([][]*Result, len(reqs))
	index := map[*Request]int{}
	for i, r := range reqs {
		if err := e.check(r); err != nil { // all or nothing: no request stays queued on an error
			return nil, fmt.Errorf("request %d: %w", i, err)
		}
	}
	for i, r := range reqs {
		if err := e.Submit(r); err != nil {
			return nil, fmt.Errorf("request %d: %w", i, err)
		}
		index[r] = i
		out[i] = make([]*Result, r.samples())
	}
	left := 0
	for _, r := range reqs {
		left += r.samples()
	}
	for left > 0 {
		done, err := e.Step()
		if err != nil {
			return nil, err
		}
		for _, res := range done {
			if i, ok := index[res.Request]; ok {
				out[i][res.Sample] = res
				left--
			}
		}
	}
	return out, nil
}

// release frees a sequence's slot.
func (e *Engine) release(q *sequence) {
	e.b.Reset(q.slot)
	e.active[q.slot] = nil
	e.free = append(e.free, q.slot)
}

// compact keeps the running sequences in slots 0..n-1: the sequence in the highest busy slot moves
// into each hole that finished sequences left below it (Backend.Fork copies its cache, once), and
// the free slots are handed out lowest first. Every step's slots then form one ascending run, which
// the model reads from the cache in place; with holes it would gather the step's rows out of every
// layer's cache on every step (model.Extend), a copy as large as the attention's own reads. A
// failed copy leaves the engine as it was (holes cost speed, not correctness).
func (e *Engine) compact() error {
	lo, hi := 0, len(e.active)-1
	for {
		for lo < len(e.active) && e.active[lo] != nil {
			lo++
		}
		for hi >= 0 && e.active[hi] == nil {
			hi--
		}
		if lo >= hi {
			break
		}
		q := e.active[hi]
		if err := e.b.Fork(hi, lo); err != nil {
			return err
		}
		e.b.Reset(hi)
		e.active[lo], e.active[hi], q.slot = q, nil, lo
		e.stats.Moves++
	}
	e.free = e.free[:0]
	for s := len(e.active) - 1; s >= 0 && e.active[s] == nil; s-- {
		e.free = append(e.free, s)
	}
	return nil
}

// Step runs one forward pass: it feeds every running sequence its last sampled token, prefills
// newly admitted prompts in the same pass, samples one token for every sequence and returns the
// samples that finished. It returns nothing when the engine is idle. An error (a failing forward
// pass) leaves the engine unusable.
func (e *Engine) Step() (done []*Result, err error) {
	err = torch.Do(func() error {
		var err error
		done, err = e.step()
		return err
	})
	return done, err
}
