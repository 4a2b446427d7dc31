package rollout

import (
	"fmt"
	"time"

	"github.com/mtgrpo/mtgrpo/torch"
)

// Stats are the engine's counters.
type Stats struct {
	Steps         int           // forward passes
	PrefillTokens int           // prompt tokens run through the model
	DecodeTokens  int           // generated tokens fed back (one per running sequence per step)
	Generated     int           // tokens sampled
	Forks         int           // slots filled by copying a prompt's cache instead of a prefill
	Moves         int           // running sequences moved to a lower slot to keep the busy slots 0..n-1
	SplitSteps    int           // steps run as two passes (decodes, then prompts)
	MaxBatch      int           // most sequences in one step
	StaticSteps   int           // steps run as one static decode step (static.go)
	Forward       time.Duration // in Backend.Extend (and Fork), and static steps whole (their sampling included)
	Sample        time.Duration // sampling and the device→host copy (other steps)
	// The static step's CUDA graphs (running totals, not per Run): captures, the time they took
	// and the bytes their memory pool added.
	GraphCaptures    int
	GraphCaptureTime time.Duration
	GraphPoolBytes   int64
}

// stepPlan is one step's forward pass: the slots and their new tokens, which logits row each
// sampled sequence reads, and the prompt caches to copy after the pass.
type stepPlan struct {
	slots  []int
	tokens [][]int32
	rows   []int64     // logits row per sampled sequence
	seqs   []*sequence // the sequences sampled, in rows order
	forks  []fork
	prompt int // prompt tokens in this step
}

type fork struct {
	src  int
	dsts []int
}

func (e *Engine) step() ([]*Result, error) {
	p := &stepPlan{}
	for _, q := range e.active {
		if q != nil {
			p.add(q.slot, []int32{q.next}, q)
		}
	}
	decode := len(p.slots)
	e.admit(p, time.Now())
	if len(p.slots) == 0 {
		return nil, nil
	}
	s := torch.NewScope()
	defer s.Close()

	t0 := time.Now()
	got, sampled, err := e.run(p, decode)
	if err != nil {
		return nil, err
	}
	t2 := time.Now()
	if err := checkFinite(e.stats.Steps+1, p.seqs, got); err != nil {
		return nil, err
	}

	e.stats.Steps++
	e.stats.PrefillTokens += p.prompt
	e.stats.DecodeTokens += decode
	e.stats.Generated += len(got)
	e.stats.MaxBatch = max(e.stats.MaxBatch, len(p.seqs))
	e.stats.Forward += sampled.Sub(t0)
	e.stats.Sample += t2.Sub(sampled)

	var done []*Result
	for i, q := range p.seqs {
		if why, stop, end := q.accept(got[i], t2); end {
			done = append(done, q.result(e, why, stop, t2))
			e.release(q)
		}
	}
	if len(done) > 0 {
		if err := e.compact(); err != nil {
			return nil, err
		}
	}
	return done, nil
}

// run computes the step's tokens: in one static step when every row decodes one token in slots
// 0..n-1 and the backend has one (static.go), else as the forward pass and then the sampler. It
// returns when the forward pass ended (the static step's sampling is part of it).
func (e *Engine) run(p *stepPlan, decode int) ([]drawn, time.Time, error) {
	if sd, ok := e.b.(DecodeStepper); ok && decode == len(p.slots) && contiguous(p.slots) && sd.StaticOn() {
		got, err := e.staticStep(sd, p)
		return got, time.Now(), err
	}
	logits, err := e.forward(p, decode)
	if err != nil {
		return nil, time.Time{}, err
	}
	for _, f := range p.forks {
		if err := e.b.Fork(f.src, f.dsts...); err != nil {
			return nil, time.Time{}, err
		}
	}
	t1 := time.Now()
	if len(p.rows) != len(p.slots) {
		logits = logits.IndexSelect(0, torch.FromSlice(p.rows).ToDevice(logits.Device()))
	}
	draws := make([]draw, len(p.seqs))
	for i, q := range p.seqs {
		draws[i] = draw{s: &q.req.Sampling, u: q.rng.Float64()}
	}
	return sampleRows(logits, draws), t1, nil
}

// forward runs the step's rows through the model: in one pass, or, when one pass would pad many
// decoding rows to a long prompt's width, in two (the decoding rows first, then the prompts), so
// that a decode row never costs more than a prompt's worth of padding.
func (e *Engine) forward(p *stepPlan, decode int) (*torch.Tensor, error) {
	if decode == 0 || decode == len(p.slots) {
		return e.b.Extend(p.slots, p.tokens)
	}
	cols := 0
	for _, t := range p.tokens[decode:] {
		cols = max(cols, len(t))
	}
	prefill := len(p.slots) - decode
	if len(p.slots)*cols <= prefill*cols+decode+e.cfg.PassTokens {
		return e.b.Extend(p.slots, p.tokens)
	}
	a, err := e.b.Extend(p.slots[:decode], p.tokens[:decode])
	if err != nil {
		return nil, err
	}
	b, err := e.b.Extend(p.slots[decode:], p.tokens[decode:])
	if err != nil {
		return nil, err
	}
	e.stats.SplitSteps++
	return torch.Cat([]*torch.Tensor{a, b}, 0), nil
}

func (p *stepPlan) add(slot int, tokens []int32, q *sequence) {
	p.slots = append(p.slots, slot)
	p.tokens = append(p.tokens, tokens)
	p.rows = append(p.rows, int64(len(p.slots)-1))
	p.seqs = append(p.seqs, q)
}

// admit moves waiting samples into free slots, first come first served, within the step's prompt
// token budget (at least one prompt per step). The samples of a request admitted together share
// one prefill: the prompt runs in the first sample's slot and is copied into the others after the
// pass; all of them sample their first token from that prompt's logits row. The prompts take the
// lowest free slots and their copies the slots above them, so that the pass's rows (running
// sequences, then prompts) are one ascending run of slots.
func (e *Engine) admit(p *stepPlan, now time.Time) {
	type group struct {
		w *waiting
		k int // samples admitted
	}
	var groups []group
	free := len(e.free)
	for _, w := range e.waiting {
		n := len(w.req.Prompt)
		if free == 0 || p.prompt > 0 && p.prompt+n > e.cfg.MaxPrefillTokens {
			break
		}
		k := min(w.req.samples()-w.next, free)
		groups = append(groups, group{w, k})
		free -= k
		p.prompt += n
	}
	leaders := make([]*sequence, len(groups))
	first := len(p.rows) // logits row of the first prompt
	for i, g := range groups {
		leaders[i] = e.start(g.w, now)
		e.b.Reset(leaders[i].slot)
		p.add(leaders[i].slot, g.w.req.Prompt, leaders[i])
	}
	for i, g := range groups {
		if g.k == 1 {
			continue
		}
		row, f := p.rows[first+i], fork{src: leaders[i].slot}
		for range g.k - 1 {
			q := e.start(g.w, now)
			f.dsts = append(f.dsts, q.slot)
			p.rows = append(p.rows, row)
			p.seqs = append(p.seqs, q)
		}
		p.forks = append(p.forks, f)
		e.stats.Forks += g.k - 1
	}
	for len(e.waiting) > 0 && e.waiting[0].next == e.waiting[0].req.samples() {
		e.waiting = e.waiting[1:]
	}
}

// start makes w's next sample a running sequence in the lowest free slot.
func (e *Engine) start(w *waiting, now time.Time) *sequence {
	slot := e.free[len(e.free)-1]
	e.free = e.free[:len(e.free)-1]
	q := newSequence(e, w.req, w.next, slot, w.seed, now)
	e.active[slot] = q
	w.next++
	return q
}

// checkFinite fails a step whose logits define no distribution for some sequence (NaN weights or
// an overflow in the forward pass), naming the step, how many sequences and the first of them.
func checkFinite(step int, seqs []*sequence, got []drawn) error {
	bad, first := 0, -1
	for i, d := range got {
		if !d.finite {
			bad++
			if first < 0 {
				first = i
			}
		}
	}
	if bad == 0 {
		return nil
	}
	q := seqs[first]
	return fmt.Errorf("rollout: step %d: the model's logits are NaN or infinite for %d of %d sequences "+
		"(first: request %d sample %d at output token %d); the weights or the forward pass are not finite",
		step, bad, len(got), q.req.id, q.sample, len(q.tokens))
}
