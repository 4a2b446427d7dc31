package extreward

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/mtgrpo/mtgrpo/env"
	"github.com/mtgrpo/mtgrpo/internal/untrusted"
)

// Reward is an external reward function: env.ExternalReward over a command or an HTTP endpoint.
// Safe for concurrent use; at most Config.Concurrency calls run at once.
type Reward struct {
	cfg   Config
	sem   chan struct{}
	batch *batcher // type http with BatchSize > 1
}

var _ env.ExternalReward = (*Reward)(nil)

// New checks cfg and makes the reward function. Nothing is started until the first score.
func New(cfg Config) (*Reward, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r := &Reward{cfg: cfg.withDefaults()}
	r.sem = make(chan struct{}, r.cfg.Concurrency)
	if r.cfg.Type == HTTP && r.cfg.BatchSize > 1 {
		r.batch = &batcher{r: r}
	}
	return r, nil
}

// Func is the reward as a rubric entry, with the configured name, weight and gate.
func (r *Reward) Func() env.ExternalFunc {
	return env.ExternalFunc{Name: r.cfg.Name, Weight: r.cfg.weight(), Gate: r.cfg.Gate, Reward: r}
}

// Apply returns e scored with this reward as Config.Combine says (replace or add).
func (r *Reward) Apply(e *env.Environment) *env.Environment {
	f := r.Func()
	replace := r.cfg.Combine == Replace
	return e.WithRubric(func(base *env.Rubric) *env.Rubric {
		c := *base
		if replace {
			c.Funcs = make([]env.RewardFunc, len(base.Funcs))
			for i, fn := range base.Funcs {
				fn.Weight, fn.Gate = 0, false
				c.Funcs[i] = fn
			}
		}
		c.External = append(append([]env.ExternalFunc(nil), base.External...), f)
		return &c
	})
}

// Score implements env.ExternalReward: one trajectory, sent as its env.TrajectoryRecord.
func (r *Reward) Score(ctx context.Context, t *env.Trajectory) (env.ExternalScore, error) {
	rec := env.NewTrajectoryRecord(t)
	if r.batch != nil {
		return r.batch.score(ctx, &rec)
	}
	out, err := r.call(ctx, []*env.TrajectoryRecord{&rec})
	if err != nil {
		return env.ExternalScore{}, err
	}
	return out[0], nil
}

// ScoreBatch scores ts, Concurrency calls at a time (BatchSize trajectories per POST), and
// returns the scores in order. The error joins one line per failed trajectory.
func (r *Reward) ScoreBatch(ctx context.Context, ts []*env.Trajectory) ([]env.ExternalScore, error) {
	recs := make([]*env.TrajectoryRecord, len(ts))
	for i, t := range ts {
		rec := env.NewTrajectoryRecord(t)
		recs[i] = &rec
	}
	size := 1
	if r.cfg.Type == HTTP {
		size = r.cfg.BatchSize
	}
	out := make([]env.ExternalScore, len(ts))
	errs := make([]error, len(ts))
	var wg sync.WaitGroup
	for lo := 0; lo < len(recs); lo += size {
		hi := min(lo+size, len(recs))
		wg.Add(1)
		go func() {
			defer wg.Done()
			scores, err := r.call(ctx, recs[lo:hi])
			if err != nil {
				errs[lo] = err
				return
			}
			copy(out[lo:hi], scores)
		}()
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// call scores recs in one call (one program run, one POST) under the concurrency limit.
func (r *Reward) call(ctx context.Context, recs []*env.TrajectoryRecord) ([]env.ExternalScore, error) {
	select {
	case r.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, r.errorf(recs, "%w", ctx.Err())
	}
	defer func() { <-r.sem }()
	if r.cfg.Type == Command {
		s, err := r.runCommand(ctx, recs[0])
		if err != nil {
			return nil, r.errorf(recs, "%w", err)
		}
		return []env.ExternalScore{s}, nil
	}
	out, err := r.post(ctx, recs)
	if err != nil {
		return nil, r.errorf(recs, "%w", err)
	}
	return out, nil
}

// errorf names the trajectories (task and episode) and the function in an error.
func (r *Reward) errorf(recs []*env.TrajectoryRecord, format string, a ...any) error {
	names := make([]string, len(recs))
	for i, rec := range recs {
		names[i] = fmt.Sprintf("task %s (episode %d)", rec.TaskID, rec.Episode)
	}
	what := "trajectory of " + names[0]
	if len(names) > 1 {
		what = "batch of " + strings.Join(names, ", ")
	}
	return fmt.Errorf("%s reward %s: %s: %w", r.cfg.Type, r.where(), what, fmt.Errorf(format, a...))
}

func (r *Reward) where() string {
	if r.cfg.Type == Command {
		return fmt.Sprintf("%q", strings.Join(r.cfg.Command, " "))
	}
	return r.cfg.URL
}

// answer is the JSON a reward function prints: a bare number, or this object.
type answer struct {
	Reward      *float64           `json:"reward"`
	TurnRewards []float64          `json:"turn_rewards"`
	Metrics     map[string]float64 `json:"metrics"`
}

// parseAnswer reads one answer for rec, naming the field at fault.
func parseAnswer(raw []byte, rec *env.TrajectoryRecord) (env.ExternalScore, error) {
	raw = bytes.TrimSpace(raw)
	var n float64
	if err := json.Unmarshal(raw, &n); err == nil {
		return env.ExternalScore{Reward: n}, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return env.ExternalScore{}, fmt.Errorf("the answer is not a number or a JSON object: %s", excerpt(raw))
	}
	var unknown []string
	for k := range fields {
		if k != "reward" && k != "turn_rewards" && k != "metrics" {
			unknown = append(unknown, fmt.Sprintf("%q", k))
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return env.ExternalScore{}, fmt.Errorf("unknown field %s in the answer (want reward, turn_rewards, metrics)", strings.Join(unknown, ", "))
	}
	var a answer
	for _, f := range []struct {
		name string
		dst  any
	}{{"reward", &a.Reward}, {"turn_rewards", &a.TurnRewards}, {"metrics", &a.Metrics}} {
		if v, ok := fields[f.name]; ok {
			if err := json.Unmarshal(v, f.dst); err != nil {
				return env.ExternalScore{}, fmt.Errorf("field %q: %s is not %s", f.name, excerpt(v), kind(f.name))
			}
		}
	}
	if a.Reward == nil {
		return env.ExternalScore{}, fmt.Errorf("field \"reward\" is missing from the answer %s", excerpt(raw))
	}
	s := env.ExternalScore{Reward: *a.Reward, TurnRewards: a.TurnRewards, Metrics: a.Metrics}
	if s.TurnRewards != nil && len(s.TurnRewards) != len(rec.Turns) {
		return s, fmt.Errorf("field \"turn_rewards\" has %d values for %d turns", len(s.TurnRewards), len(rec.Turns))
	}
	return s, nil
}

func kind(field string) string {
	switch field {
	case "reward":
		return "a number"
	case "turn_rewards":
		return "a list of numbers"
	}
	return "an object of numbers"
}

// marshal encodes v as JSON without escaping <, > and & (tool-call markup stays readable for
// the reward function's author).
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// excerpt shows the start of what a server answered (package untrusted: escaped, quoted).
func excerpt(b []byte) string { return untrusted.Quote(b, 200) }
