package progress

import (
	"fmt"
	"sync"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
)

// Steps is the bar of a run's steps, one phase at a time: the phase's name (sft, rl), the step
// as the run numbers it (the log's "step:" lines, checkpoints), how much of the phase is done, and
// the time the phase has left at the mean pace of its steps so far. A phase's steps are alike (an RL
// step may take a hundred SFT steps), so each phase has its own bar and pace. Safe on nil.
type Steps struct {
	bars *Bars
	bar  *mpb.Bar
	last time.Time
	pace *pace
}

// pace is a phase's mean step time over the steps this process ran (the bar's goroutine reads it).
type pace struct {
	mu    sync.Mutex
	n     int
	total time.Duration
}

func (p *pace) add(d time.Duration) {
	p.mu.Lock()
	p.n, p.total = p.n+1, p.total+d
	p.mu.Unlock()
}

// left is the time left for steps more steps at the mean pace ("ETA -" before the first).
func (p *pace) left(steps int64) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n == 0 {
		return "ETA -"
	}
	return "ETA " + (p.total / time.Duration(p.n) * time.Duration(steps)).Round(time.Second).String()
}

// Steps adds a run's step bar; Phase draws it.
func (b *Bars) Steps() *Steps {
	if !b.On() {
		return nil
	}
	return &Steps{bars: b}
}

// Phase starts a phase of n steps, numbered first+1 to first+n in the run, of which done are
// already done (a resumed run). The previous phase's bar is removed.
func (s *Steps) Phase(name string, first, n, done int) {
	if s == nil {
		return
	}
	s.Done()
	step := decor.Any(func(st decor.Statistics) string {
		return fmt.Sprintf("step %d / %d", int64(first)+st.Current, first+n)
	}, decor.WCSyncWidth)
	p := &pace{}
	eta := decor.Any(func(st decor.Statistics) string { return p.left(st.Total - st.Current) }, decor.WCSyncSpace)
	s.bar = s.bars.p.AddBar(int64(n),
		mpb.PrependDecorators(decor.Name(name, decor.WCSyncSpaceR), step),
		mpb.AppendDecorators(decor.Percentage(decor.WCSyncSpace), eta),
		mpb.BarRemoveOnComplete(),
	)
	s.pace = p
	s.bar.SetCurrent(int64(min(done, n)))
	s.last = time.Now()
}

// Step marks a step done and feeds its time to the estimate.
func (s *Steps) Step() {
	if s == nil || s.bar == nil {
		return
	}
	now := time.Now()
	s.pace.add(now.Sub(s.last))
	s.bar.Increment()
	s.last = now
}

// Done completes the phase's bar (also when the phase stopped early) and removes it.
func (s *Steps) Done() {
	if s == nil || s.bar == nil {
		return
	}
	s.bar.SetTotal(-1, true)
	s.bar = nil
}
