package serve

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/mtgrpo/mtgrpo/rollout"
)

// pump drives the engine for the HTTP handlers. Handlers queue jobs and aborts without blocking;
// run, on the torch thread, submits them, steps the engine while anything runs, and hands each
// finished sample back to its job. All calls in flight are served by the same batched steps.
type pump struct {
	gen   rollout.Generator
	cache *PrefixCache // nil: no KV reuse

	mu    sync.Mutex
	queue []op
	wake  chan struct{} // one pending wake-up
}

type op struct {
	j     *job
	abort bool
}

// job is one call's request and where its result goes.
type job struct {
	req    *rollout.Request
	done   chan jobResult // buffered: the pump never blocks on it
	stream *tokenStream   // nil unless streaming
}

type jobResult struct {
	res *rollout.Result
	err error
}

// errAborted ends a job whose request was withdrawn (client gone, episode over, run stopped).
var errAborted = errors.New("the call was aborted")

func newPump(gen rollout.Generator, cache *PrefixCache) *pump {
	return &pump{gen: gen, cache: cache, wake: make(chan struct{}, 1)}
}

func (p *pump) push(o op) {
	p.mu.Lock()
	p.queue = append(p.queue, o)
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// submit queues a job; its result comes on j.done.
func (p *pump) submit(j *job) { p.push(op{j: j}) }

// abort withdraws a job (a no-op once it finished).
func (p *pump) abort(j *job) { p.push(op{j: j, abort: true}) }

func (p *pump) take() []op {
	p.mu.Lock()
	defer p.mu.Unlock()
	q := p.queue
	p.queue = nil
	return q
}

// run serves jobs until stop is closed or ctx ends; what is still running then is aborted. An
// engine error ends it (the engine is unusable after one): every job gets the error. Torch
// thread only.
func (p *pump) run(ctx context.Context, stop <-chan struct{}) error {
	live := map[*rollout.Request]*job{}
	defer func() {
		for r, j := range live {
			p.gen.Abort(r)
			p.forget(j)
			j.done <- jobResult{err: errAborted}
		}
	}()
	for {
		for _, o := range p.take() {
			p.apply(o, live)
		}
		if !p.gen.Idle() {
			res, err := p.gen.Step()
			if err != nil {
				for r, j := range live {
					j.done <- jobResult{err: fmt.Errorf("serve: generation: %w", err)}
					delete(live, r)
				}
				return fmt.Errorf("serve: generation: %w", err)
			}
			for _, r := range res {
				if j, ok := live[r.Request]; ok {
					delete(live, r.Request)
					j.done <- jobResult{res: r}
				}
			}
			continue
		}
		select {
		case <-p.wake:
		case <-stop:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (p *pump) apply(o op, live map[*rollout.Request]*job) {
	j := o.j
	if o.abort {
		if _, ok := live[j.req]; ok {
			p.gen.Abort(j.req)
			p.forget(j)
			delete(live, j.req)
			j.done <- jobResult{err: errAborted}
		}
		return
	}
	if p.cache != nil {
		p.cache.Retain(j.req.Prompt)
	}
	if err := p.gen.Submit(j.req); err != nil {
		p.forget(j)
		j.done <- jobResult{err: err}
		return
	}
	live[j.req] = j
}

func (p *pump) forget(j *job) {
	if p.cache != nil {
		p.cache.Forget(j.req.Prompt)
	}
}
