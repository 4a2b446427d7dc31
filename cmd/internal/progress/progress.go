// Package progress draws progress bars (vbauerster/mpb) for loading, rollouts, training steps and
// export when the output is a terminal, and nothing otherwise: logs and pipes get the run's log
// lines instead. Every method is safe on a nil or switched-off value, so callers never branch.
package progress

import (
	"io"
	"os"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
	"golang.org/x/term"
)

// Unit is what a bar counts, for its counter decoration.
type Unit int

const (
	Count Unit = iota // plain numbers: steps, episodes, tokens
	Bytes             // sizes, shown in KiB/MiB/GiB
)

// Bars is a set of bars drawn together below the program's output.
type Bars struct {
	p *mpb.Progress
}

// New draws on f when it is a terminal and MTGRPO_PROGRESS is not "0"; otherwise it draws nothing.
func New(f *os.File) *Bars {
	if f == nil || os.Getenv("MTGRPO_PROGRESS") == "0" || !term.IsTerminal(int(f.Fd())) {
		return &Bars{}
	}
	return newOn(f, 0)
}

// newOn draws on w whatever it is (tests pass a buffer and a fixed width).
func newOn(w io.Writer, width int) *Bars {
	// Auto refresh: mpb refreshes on its own only when it sees a terminal itself.
	opts := []mpb.ContainerOption{mpb.WithOutput(w), mpb.WithRefreshRate(150 * time.Millisecond), mpb.WithAutoRefresh()}
	if width > 0 {
		opts = append(opts, mpb.WithWidth(width))
	}
	return &Bars{p: mpb.New(opts...)}
}

// On reports whether bars are drawn.
func (b *Bars) On() bool { return b != nil && b.p != nil }

// Bar adds a bar of total units (0 when unknown yet: see Bar.SetTotal).
func (b *Bars) Bar(label string, total int64, u Unit) *Bar {
	if !b.On() {
		return nil
	}
	counter := decor.CountersNoUnit("%d / %d", decor.WCSyncWidth)
	if u == Bytes {
		counter = decor.Counters(decor.SizeB1024(0), "% .1f / % .1f", decor.WCSyncWidth)
	}
	bar := b.p.AddBar(total,
		mpb.PrependDecorators(decor.Name(label, decor.WCSyncSpaceR), counter),
		mpb.AppendDecorators(decor.Percentage(decor.WCSyncSpace), decor.Elapsed(decor.ET_STYLE_GO, decor.WCSyncSpace)),
		mpb.BarRemoveOnComplete(),
	)
	return &Bar{b: bar}
}

// Wait lets the bars draw their last state and stops drawing. Finish every bar first.
func (b *Bars) Wait() {
	if b.On() {
		b.p.Wait()
	}
}

// Bar is one progress bar.
type Bar struct {
	b *mpb.Bar
}

// Add advances the bar by n.
func (b *Bar) Add(n int64) {
	if b != nil {
		b.b.IncrInt64(n)
	}
}

// SetTotal changes the total (work found on the way, e.g. the turns of multi-turn episodes).
func (b *Bar) SetTotal(n int64) {
	if b != nil {
		b.b.SetTotal(n, false)
	}
}

// Done completes the bar (also when the work stopped early) and removes it.
func (b *Bar) Done() {
	if b != nil {
		b.b.SetTotal(-1, true)
	}
}

// Load follows model loading (it satisfies model.Progress): a bar of bytes per Start.
type Load struct {
	Bars *Bars
	bar  *Bar
}

func (l *Load) Start(label string, total int64) { l.bar = l.Bars.Bar(label, total, Bytes) }
func (l *Load) Add(n int64)                     { l.bar.Add(n) }
func (l *Load) Done()                           { l.bar.Done() }
