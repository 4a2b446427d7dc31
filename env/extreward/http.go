package extreward

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/mtgrpo/mtgrpo/env"
	"github.com/mtgrpo/mtgrpo/internal/untrusted"
)

var client = &http.Client{}

// post sends recs in one POST (an object for one record when BatchSize is 1, else an array) and
// reads one answer per record. Failures without an answer (connection errors, 5xx, timeouts)
// are retried Retries times with a doubling pause; a 4xx or a malformed answer is not.
func (r *Reward) post(ctx context.Context, recs []*env.TrajectoryRecord) ([]env.ExternalScore, error) {
	var body []byte
	var err error
	if r.cfg.BatchSize > 1 {
		body, err = marshal(recs)
	} else {
		body, err = marshal(recs[0])
	}
	if err != nil {
		return nil, fmt.Errorf("encoding the trajectory: %w", err)
	}
	pause := 100 * time.Millisecond
	for attempt := 0; ; attempt++ {
		raw, err, retry := r.postOnce(ctx, body)
		if err == nil {
			return r.answers(raw, recs)
		}
		if !retry || attempt >= r.cfg.Retries || ctx.Err() != nil {
			if attempt > 0 {
				err = fmt.Errorf("%w (after %d tries)", err, attempt+1)
			}
			return nil, err
		}
		select {
		case <-time.After(pause):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		pause *= 2
	}
}

// postOnce is one POST under the timeout; retry says whether trying again may help.
func (r *Reward) postOnce(ctx context.Context, body []byte) (raw []byte, err error, retry bool) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return nil, err, false
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("no answer within %v", r.cfg.Timeout), true
		}
		return nil, err, true
	}
	defer resp.Body.Close()
	raw, err = io.ReadAll(io.LimitReader(resp.Body, maxOutput+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("reading the answer: %w", err), true
	case len(raw) > maxOutput:
		return nil, fmt.Errorf("the answer is over %d bytes", maxOutput), false
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("HTTP %s: %s", untrusted.Text(resp.Status), excerpt(bytes.TrimSpace(raw))), resp.StatusCode >= 500
	}
	return raw, nil, false
}

// answers splits a response into one score per record.
func (r *Reward) answers(raw []byte, recs []*env.TrajectoryRecord) ([]env.ExternalScore, error) {
	if r.cfg.BatchSize <= 1 {
		s, err := parseAnswer(raw, recs[0])
		return []env.ExternalScore{s}, err
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("a batch's answer must be a JSON array: %s", excerpt(raw))
	}
	if len(list) != len(recs) {
		return nil, fmt.Errorf("%d answers for a batch of %d", len(list), len(recs))
	}
	out := make([]env.ExternalScore, len(recs))
	for i, a := range list {
		s, err := parseAnswer(a, recs[i])
		if err != nil {
			return nil, fmt.Errorf("answer [%d] (task %s): %w", i, recs[i].TaskID, err)
		}
		out[i] = s
	}
	return out, nil
}

// batcher gathers the Score calls that arrive within BatchWait of the first (trajectories that
// finish together) into POSTs of up to BatchSize records.
type batcher struct {
	r       *Reward
	mu      sync.Mutex
	pending []*job
	timer   *time.Timer
}

type job struct {
	ctx   context.Context
	rec   *env.TrajectoryRecord
	score env.ExternalScore
	err   error
	done  chan struct{}
}

func (b *batcher) score(ctx context.Context, rec *env.TrajectoryRecord) (env.ExternalScore, error) {
	j := &job{ctx: ctx, rec: rec, done: make(chan struct{})}
	b.mu.Lock()
	b.pending = append(b.pending, j)
	switch {
	case len(b.pending) >= b.r.cfg.BatchSize:
		b.flushLocked()
	case len(b.pending) == 1:
		b.timer = time.AfterFunc(b.r.cfg.BatchWait, b.flush)
	}
	b.mu.Unlock()
	select {
	case <-j.done:
		return j.score, j.err
	case <-ctx.Done():
		return env.ExternalScore{}, b.r.errorf([]*env.TrajectoryRecord{rec}, "%w", ctx.Err())
	}
}

func (b *batcher) flush() {
	b.mu.Lock()
	b.flushLocked()
	b.mu.Unlock()
}

// flushLocked sends what is pending as one batch, on its own goroutine.
func (b *batcher) flushLocked() {
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
	jobs := b.pending
	b.pending = nil
	if len(jobs) == 0 {
		return
	}
	go func() {
		recs := make([]*env.TrajectoryRecord, len(jobs))
		for i, j := range jobs {
			recs[i] = j.rec
		}
		// The batch serves several callers: it runs until the first of their contexts ends.
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		for _, j := range jobs {
			stop := context.AfterFunc(j.ctx, cancel)
			defer stop()
		}
		scores, err := b.r.call(ctx, recs)
		for i, j := range jobs {
			if err != nil {
				j.err = err
			} else {
				j.score = scores[i]
			}
			close(j.done)
		}
	}()
}
