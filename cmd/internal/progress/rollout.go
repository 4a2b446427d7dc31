package progress

import "github.com/mtgrpo/mtgrpo/rollout"

// Generations wraps the generator a rollout driver runs on so that a bar counts finished
// generations (one per action turn of each episode). The driver submits turns as episodes go on,
// so the total grows with every submission. With no bar the generator is returned as it is.
func Generations(g rollout.Generator, bar *Bar) rollout.Generator {
	if bar == nil {
		return g
	}
	return &counted{Generator: g, bar: bar}
}

// Phases wraps a generator that serves several phases one after the other (a training run's
// steps and evaluations): each Begin draws a new bar counting that phase's generations, End
// removes it. Between phases, generations are not counted.
type Phases struct {
	counted
	bars *Bars
}

// NewPhases wraps g; with bars off it still works, drawing nothing.
func NewPhases(g rollout.Generator, bars *Bars) *Phases {
	return &Phases{counted: counted{Generator: g}, bars: bars}
}

// Begin starts counting a phase on a bar labelled label.
func (p *Phases) Begin(label string) {
	p.bar.Done()
	p.bar, p.submitted = p.bars.Bar(label, 0, Count), 0
}

// End completes the phase's bar.
func (p *Phases) End() {
	p.bar.Done()
	p.bar = nil
}

type counted struct {
	rollout.Generator
	bar       *Bar
	submitted int64
}

func (c *counted) Submit(r *rollout.Request) error {
	if err := c.Generator.Submit(r); err != nil {
		return err
	}
	c.submitted += int64(max(r.N, 1))
	c.bar.SetTotal(c.submitted)
	return nil
}

func (c *counted) Step() ([]*rollout.Result, error) {
	res, err := c.Generator.Step()
	c.bar.Add(int64(len(res)))
	return res, err
}

func (c *counted) Abort(r *rollout.Request) []*rollout.Result {
	res := c.Generator.Abort(r)
	c.bar.Add(int64(len(res)))
	return res
}
