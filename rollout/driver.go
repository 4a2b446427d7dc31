package rollout

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/mtgrpo/mtgrpo/env"
	"github.com/mtgrpo/mtgrpo/tokenizer"
)

// Generator is what the driver generates with: the Engine, or a scripted fake in tests.
type Generator interface {
	// Submit queues a request; its samples come back from later Steps.
	Submit(r *Request) error
	// Step advances generation and returns the samples that finished.
	Step() ([]*Result, error)
	// Idle reports whether nothing is queued or running.
	Idle() bool
	// Abort drops a request and returns its samples that had already finished.
	Abort(r *Request) []*Result
	// MaxLen is the longest sequence (context and output) one sample can hold, 0 for no limit:
	// the driver ends an episode whose next context does not fit.
	MaxLen() int
	// Stats returns the generator's running counters (zero for generators without an engine);
	// the driver reports the difference over a Run.
	Stats() Stats
}

// Runner plays a batch of episodes to their ends: the Driver, or a runner whose episodes are
// driven from outside (package rollout/serve: agent programs calling the engine).
type Runner interface {
	Run(ctx context.Context, eps []Episode) ([]*Trajectory, *BatchProfile, error)
}

// NewRunner makes the runner of one batch; NewDriverRunner is the Driver's.
type NewRunner func(gen Generator, tok *tokenizer.Tokenizer, cfg DriverConfig) (Runner, error)

// NewDriverRunner is NewDriver as a NewRunner.
func NewDriverRunner(gen Generator, tok *tokenizer.Tokenizer, cfg DriverConfig) (Runner, error) {
	return NewDriver(gen, tok, cfg)
}

// DriverConfig configures multi-turn rollouts.
type DriverConfig struct {
	// Sampling is used for every action turn (Seed is ignored: each request gets a seed derived
	// from Seed, the episode and the turn, so a run is reproducible).
	Sampling Sampling
	// Condenser builds each context (nil: Full).
	Condenser Condenser
	// MaxTurns caps the action turns of an episode (0: 16); the environment's own limit usually
	// ends episodes first.
	MaxTurns int
	// MaxContextTokens ends an episode whose next context is longer (0: only the engine's KV
	// cache length limits it).
	MaxContextTokens int
	// ChatVars are extra chat template variables (e.g. "enable_thinking": false).
	ChatVars map[string]any
	// MaskTruncated gives outputs cut by the length limit loss mask 0 (DAPO's overlong
	// filtering); by default they are trained like any other output.
	MaskTruncated bool
	// Workers bounds the environment, tool, condenser and reward calls running at once (0: 32).
	Workers int
	// MaxOpenEpisodes bounds the episodes open (between Reset and Close) at once: set it to
	// env.Environment.MaxConcurrent for an environment server with a session limit. Episodes
	// beyond it wait for one to finish; the first turns of those admitted at the start share
	// their prefill as usual, later ones are submitted alone. 0: all at once.
	MaxOpenEpisodes int
	// Seed seeds the per-request sampling seeds.
	Seed uint64
	// FirstIndex numbers a Run's episodes from FirstIndex (their sampling seeds, Trajectory.Index,
	// messages): a data-parallel rank that plays episodes [k, k+n) of a global batch passes k and
	// gets the trajectories the whole batch would give those episodes.
	FirstIndex int
	// Debug, when set, receives one line per turn and the batch profile after each Run.
	Debug io.Writer
}

// Episode is one episode to run: a fresh Env (one per episode), its task and its GRPO group.
type Episode struct {
	Env   env.Env
	Task  env.Task
	Group int
}

// Driver runs episodes through a Generator: the multi-turn rollout.
type Driver struct {
	gen Generator
	tok *tokenizer.Tokenizer
	cfg DriverConfig
}

// NewDriver checks the configuration and makes a driver.
func NewDriver(gen Generator, tok *tokenizer.Tokenizer, cfg DriverConfig) (*Driver, error) {
	if gen == nil || tok == nil {
		return nil, fmt.Errorf("rollout: the driver needs a generator and a tokenizer")
	}
	if err := cfg.Sampling.Validate(); err != nil {
		return nil, fmt.Errorf("rollout: driver: %w", err)
	}
	if cfg.MaxTurns < 0 || cfg.MaxContextTokens < 0 || cfg.Workers < 0 || cfg.MaxOpenEpisodes < 0 || cfg.FirstIndex < 0 {
		return nil, fmt.Errorf("rollout: driver: max_turns %d, max_context_tokens %d, workers %d, max_open_episodes %d, first_index %d must be >= 0",
			cfg.MaxTurns, cfg.MaxContextTokens, cfg.Workers, cfg.MaxOpenEpisodes, cfg.FirstIndex)
	}
	if cfg.Condenser == nil {
		cfg.Condenser = Full{}
	}
	if cfg.MaxTurns == 0 {
		cfg.MaxTurns = 16
	}
	if cfg.Workers == 0 {
		cfg.Workers = 32
	}
	return &Driver{gen: gen, tok: tok, cfg: cfg}, nil
}

// Run plays every episode to its end and returns their trajectories in input order, with the
// batch's profile. It runs on the goroutine that drives the generator (the torch thread for the
// Engine): environments, tools, condensers and rewards run on worker goroutines, and the driver
// only waits for them when the generator has nothing to do. A cancelled ctx aborts the batch.
func (d *Driver) Run(ctx context.Context, eps []Episode) ([]*Trajectory, *BatchProfile, error) {
	r := &run{d: d, ctx: ctx, events: make(chan func(), len(eps)+1), sem: make(chan struct{}, d.cfg.Workers),
		byReq: map[*Request][]*episode{}, owed: map[*Request]int{}, holding: true, start: time.Now()}
	r.stats0 = d.gen.Stats()
	for i, in := range eps {
		if in.Env == nil {
			return nil, nil, fmt.Errorf("rollout: episode %d has no Env", i)
		}
		idx := d.cfg.FirstIndex + i
		r.eps = append(r.eps, &episode{r: r, idx: idx, in: in, traj: &Trajectory{Index: idx, Group: in.Group, Task: in.Task}})
	}
	r.left = len(eps)
	r.admit()
	if err := r.loop(); err != nil {
		r.abort()
		return nil, nil, err
	}
	out := make([]*Trajectory, len(r.eps))
	for i, ep := range r.eps {
		out[i] = ep.traj
	}
	prof := r.profile(out)
	if d.cfg.Debug != nil {
		fmt.Fprint(d.cfg.Debug, prof.Report())
	}
	return out, prof, nil
}

// run is one Run's state, owned by the driving goroutine.
type run struct {
	d        *Driver
	ctx      context.Context
	events   chan func() // continuations from workers, applied on the driving goroutine
	sem      chan struct{}
	inflight int
	eps      []*episode
	left     int
	byReq    map[*Request][]*episode
	owed     map[*Request]int // samples of a request not yet delivered (they finish in any order)
	// holding collects the first turns until every episode has its first context, so that the
	// copies of one task (same context) share one request and one prefill.
	holding bool
	ready   []*episode
	err     error
	start   time.Time
	stats0  Stats
	// admitted counts the episodes started so far (they start in input order); open those not
	// yet finished. MaxOpenEpisodes bounds open.
	admitted, open int
	blocked        time.Duration // time the driver waited on workers with nothing to generate
}

// admit starts waiting episodes while fewer than MaxOpenEpisodes are open.
func (r *run) admit() {
	for r.admitted < len(r.eps) && (r.d.cfg.MaxOpenEpisodes == 0 || r.open < r.d.cfg.MaxOpenEpisodes) {
		ep := r.eps[r.admitted]
		r.admitted++
		r.open++
		ep.admitted, ep.started = true, time.Now()
		ep.reset()
	}
}

// work runs fn on a worker goroutine; the continuation it returns runs on the driving goroutine.
func (r *run) work(fn func() func()) {
	r.inflight++
	go func() {
		r.sem <- struct{}{}
		next := fn()
		<-r.sem
		r.events <- next
	}()
}

func (r *run) loop() error {
	for r.left > 0 {
		if err := r.ctx.Err(); err != nil {
			return err
		}
		if err := r.drain(false); err != nil {
			return err
		}
		r.flushFirstTurns()
		if r.err != nil {
			return r.err
		}
		if !r.d.gen.Idle() {
			res, err := r.d.gen.Step()
			if err != nil {
				return fmt.Errorf("rollout: generation: %w", err)
			}
			for _, x := range res {
				r.deliver(x)
			}
			continue
		}
		if r.left == 0 {
			break
		}
		if r.inflight == 0 && len(r.ready) == 0 {
			return fmt.Errorf("rollout: internal error: %d episodes unfinished with no work in flight", r.left)
		}
		t0 := time.Now()
		err := r.drain(true)
		r.blocked += time.Since(t0)
		if err != nil {
			return err
		}
	}
	return r.err
}

// drain applies the workers' continuations that are ready; with block it first waits for one.
func (r *run) drain(block bool) error {
	if block && r.inflight > 0 {
		select {
		case f := <-r.events:
			r.inflight--
			f()
		case <-r.ctx.Done():
			return r.ctx.Err()
		}
	}
	for {
		select {
		case f := <-r.events:
			r.inflight--
			f()
		default:
			return nil
		}
	}
}

// abort ends a failed or cancelled Run: requests are withdrawn, workers awaited, envs closed.
func (r *run) abort() {
	for req := range r.byReq {
		r.d.gen.Abort(req)
	}
	for r.inflight > 0 {
		<-r.events
		r.inflight--
	}
	for _, ep := range r.eps {
		ep.in.Env.Close() // Close is idempotent, and harmless on an Env never reset
	}
}

// deliver hands a finished sample to its episode.
func (r *run) deliver(res *Result) {
	eps, ok := r.byReq[res.Request]
	if !ok || res.Sample >= len(eps) {
		r.err = fmt.Errorf("rollout: internal error: a result for an unknown request")
		return
	}
	ep := eps[res.Sample]
	if r.owed[res.Request]--; r.owed[res.Request] == 0 {
		delete(r.byReq, res.Request)
		delete(r.owed, res.Request)
	}
	ep.generated(res)
}

// submit sends one request for the episodes eps (sample i belongs to eps[i]).
func (r *run) submit(req *Request, eps []*episode) error {
	req.N = len(eps)
	if err := r.d.gen.Submit(req); err != nil {
		return err
	}
	r.byReq[req], r.owed[req] = eps, len(eps)
	return nil
}

// flushFirstTurns submits the held first turns once no episode is still building its first
// context: episodes with identical contexts go into one request of N samples.
func (r *run) flushFirstTurns() {
	if !r.holding {
		return
	}
	for _, ep := range r.eps {
		if ep.admitted && (ep.phase == phaseReset || ep.phase == phaseCondense && ep.actions == 0 && ep.traj.Turns == nil) {
			return
		}
	}
	r.holding = false
	// Workers finish the first contexts in any order: group in episode order, so that each
	// request's seed (its first episode's) and the sample each episode gets do not depend on it.
	slices.SortFunc(r.ready, func(a, b *episode) int { return a.idx - b.idx })
	groups := map[string][]*episode{}
	var order []string
	for _, ep := range r.ready {
		k := idsKey(ep.turn.Context)
		if groups[k] == nil {
			order = append(order, k)
		}
		groups[k] = append(groups[k], ep)
	}
	r.ready = nil
	for _, k := range order {
		g := groups[k]
		req := g[0].request()
		if err := r.submit(req, g); err != nil {
			for _, ep := range g {
				ep.fail(err)
			}
		}
	}
}

func idsKey(ids []int32) string {
	b := make([]byte, 4*len(ids))
	for i, id := range ids {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(id))
	}
	return string(b)
}

// mixSeed derives a request seed (splitmix64 over the inputs).
func mixSeed(xs ...uint64) uint64 {
	h := uint64(0x9e3779b97f4a7c15)
	for _, x := range xs {
		h ^= x + 0x9e3779b97f4a7c15 + (h << 6) + (h >> 2)
		h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9
		h = (h ^ (h >> 27)) * 0x94d049bb133111eb
		h ^= h >> 31
	}
	return h
}

// errBudget reports a context over the driver's or the cache's limit.
func errBudget(n, limit int) error {
	return fmt.Errorf("rollout: %w: %d tokens, limit %d", ErrContextBudget, n, limit)
}

func isBudget(err error) bool { return errors.Is(err, ErrContextBudget) }
