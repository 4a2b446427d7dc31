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
