package serve

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/mtgrpo/mtgrpo/env"
	"github.com/mtgrpo/mtgrpo/env/agent"
	"github.com/mtgrpo/mtgrpo/env/sandbox"
	"github.com/mtgrpo/mtgrpo/rollout"
	"github.com/mtgrpo/mtgrpo/tokenizer"
)

// Agents plays episodes through agent programs (env.agent): each episode's program is started
// with the endpoint's base URL and a key of its own (or, with env.agent.service, the episode is
// handed to an agent service that calls in: service.go), its calls are served by the engine in
// the same batched steps as every other episode's, and the trajectory is built from its recorded
// calls, one turn per call. A program (or service) that crashes, hangs, never calls or reports no
// usable reward fails its episode (Trajectory.Err says why); the batch goes on.
type Agents struct {
	srv      *Server
	cache    *PrefixCache
	programs *sandbox.Programs
	cfg      agent.Config
	baseURL  string
}

// NewAgents makes the agent runner over srv, whose endpoint programs reach at baseURL (".../v1").
// programs runs them (nil with cfg.Service, which also opens srv's service routes).
func NewAgents(srv *Server, cache *PrefixCache, programs *sandbox.Programs, cfg agent.Config, baseURL string) (*Agents, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if !cfg.Service && programs == nil {
		return nil, fmt.Errorf("serve: agent programs need a runner (sandbox.Programs)")
	}
	if cfg.Service {
		srv.mu.Lock()
		srv.svc = newService(cfg.ServiceKey)
		srv.mu.Unlock()
	}
	return &Agents{srv: srv, cache: cache, programs: programs, cfg: cfg, baseURL: baseURL}, nil
}

// Runner is the rollout.NewRunner of the agent runner: the batch's sampling, seed and episode
// numbering come from dc, as the driver's do.
func (a *Agents) Runner(gen rollout.Generator, _ *tokenizer.Tokenizer, dc rollout.DriverConfig) (rollout.Runner, error) {
	if gen == nil {
		return nil, fmt.Errorf("serve: the agent runner needs a generator")
	}
	if err := dc.Sampling.Validate(); err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	return &batch{a: a, dc: dc, gen: gen}, nil
}

type batch struct {
	a   *Agents
	dc  rollout.DriverConfig
	gen rollout.Generator // the engine, or the trainer's wrapper of it
}

// Run plays eps: the programs run on their own goroutines while this one (the torch thread)
// serves their calls; it returns when every program has ended.
func (b *batch) Run(ctx context.Context, eps []rollout.Episode) ([]*rollout.Trajectory, *rollout.BatchProfile, error) {
	a := b.a
	sp := b.dc.Sampling
	a.srv.setSampling(&sp, b.dc.Seed, b.dc.ChatVars)
	a.srv.pump.gen = b.gen // the pump is not running between batches
	start, stats0 := time.Now(), b.gen.Stats()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	limit := len(eps)
	for _, n := range []int{a.cfg.MaxConcurrent, b.dc.MaxOpenEpisodes} {
		if n > 0 {
			limit = min(limit, n)
		}
	}
	sem := make(chan struct{}, max(limit, 1))
	trajs := make([]*rollout.Trajectory, len(eps))
	var wg sync.WaitGroup
	for i, ep := range eps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			trajs[i] = b.episode(ctx, b.dc.FirstIndex+i, ep)
		}()
	}
	stop := make(chan struct{})
	go func() { wg.Wait(); close(stop) }()
	err := a.srv.Run(ctx, stop)
	if err != nil {
		cancel()
		<-stop
	}
	if a.cache != nil {
		a.cache.Clear() // the weights change before the next batch
	}
	if err != nil {
		return nil, nil, err
	}
	return trajs, profile(trajs, start, stats0, b.gen.Stats()), nil
}

// episode runs one program and builds its trajectory.
func (b *batch) episode(ctx context.Context, idx int, ep rollout.Episode) *rollout.Trajectory {
	a := b.a
	tr := &rollout.Trajectory{Index: idx, Group: ep.Group, Task: ep.Task, End: rollout.EndDone}
	t0 := time.Now()
	defer func() { tr.Profile.Wall = time.Since(t0) }()
	defer ep.Env.Close()
	fail := func(format string, args ...any) *rollout.Trajectory {
		tr.End, tr.Err = rollout.EndError, fmt.Errorf("episode %d (task %s): %s", idx, ep.Task.ID, fmt.Sprintf(format, args...))
		return tr
	}
	start, err := ep.Env.Reset(ctx, ep.Task)
	if err != nil {
		return fail("reset: %v", err)
	}
	tr.Start = start
	key := NewKey()
	sess := a.srv.Open(key, Limits{MaxCalls: a.cfg.MaxCalls, MaxTokens: a.cfg.MaxTokens}, mix(b.dc.Seed, uint64(idx)))
	in := agent.Input{Task: ep.Task, Messages: start.Messages, Tools: start.Tools, Episode: idx, Group: ep.Group}
	var (
		out      agent.Outcome
		runErr   error
		finished *Reward // the service's, with its finish
		why      string
	)
	if a.cfg.Service {
		finished, why = b.playService(ctx, sess, agent.Episode{Input: in, BaseURL: a.baseURL, APIKey: key})
	} else {
		out, runErr = agent.Run(ctx, a.programs, a.cfg, in, a.baseURL, key)
	}
	a.srv.Drop(key)
	calls := sess.Calls()
	b.addTurns(tr, calls)
	who := "agent service"
	if !a.cfg.Service {
		who = "agent program " + a.cfg.Command[0]
		why = programFailure(out, runErr)
	}
	if why == "" && len(calls) == 0 {
		why = "made no chat completion call (is OPENAI_BASE_URL read?)" + stderrTail(out.Result.Stderr)
	}
	if why != "" {
		return fail("%s: %s", who, why)
	}
	switch sess.Limited() {
	case "max_calls":
		tr.End = rollout.EndMaxTurns
	case "max_tokens":
		tr.End = rollout.EndContextBudget
	}
	score, err := b.score(ctx, ep, idx, calls, sess, finished, out)
	if err != nil {
		return fail("%s: %v", who, err)
	}
	b.finish(tr, calls, score)
	return tr
}

// score is the episode's reward: the task's (a replay of the calls), or the one the program or
// service reported (with the finish, on the reward route, or on the last output line).
func (b *batch) score(ctx context.Context, ep rollout.Episode, idx int, calls []*Call, sess *Session, finished *Reward, out agent.Outcome) (env.Score, error) {
	var score env.Score
	if b.a.cfg.RewardFrom() == agent.FromTask {
		s, err := replay(ctx, ep, idx, calls)
		if err != nil {
			return score, fmt.Errorf("task reward: %v", err)
		}
		return s, nil
	}
	rw := finished
	if rw == nil {
		rw = sess.Reward()
	}
	switch {
	case rw != nil && rw.Error != "":
		return score, fmt.Errorf("reported an error: %s", rw.Error)
	case rw != nil:
		score.Reward, score.Metrics = rw.Reward, map[string]float64{}
		for k, v := range rw.Metrics {
			score.Metrics["reward/"+k] = v
		}
	case out.LineReward != nil:
		score.Reward = *out.LineReward
	case out.LineError != nil:
		return score, out.LineError
	case b.a.cfg.Service:
		return score, fmt.Errorf("reported no reward (with its finish, {\"reward\": r}, or on POST $OPENAI_BASE_URL/mtgrpo/reward)")
	default:
		return score, fmt.Errorf("reported no reward (POST $OPENAI_BASE_URL/mtgrpo/reward, or {\"reward\": r} as the last line of output)")
	}
	return score, nil
}

// programFailure says why a program's run cannot be trained on ("" when it can).
func programFailure(out agent.Outcome, err error) string {
	r := out.Result
	tail := stderrTail(r.Stderr)
	switch {
	case err != nil:
		return err.Error()
	case r.TimedOut:
		return fmt.Sprintf("ran past its time limit (env.agent.time) and was killed after %v%s", r.Duration.Round(time.Millisecond), tail)
	case r.OutOfMemory:
		return "ran past its memory limit (env.agent.memory_mb) and was killed" + tail
	case r.Signal != "":
		return "was killed by signal " + r.Signal + tail
	case r.ExitCode != 0:
		return fmt.Sprintf("exited with status %d%s", r.ExitCode, tail)
	}
	return ""
}

// stderrTail is the end of a program's stderr, for its failure's cause ("" if none).
func stderrTail(stderr string) string {
	tail := strings.TrimSpace(stderr)
	if len(tail) > 500 {
		tail = "…" + tail[len(tail)-500:]
	}
	if tail != "" {
		tail = "; stderr: " + tail
	}
	return tail
}

// addTurns makes one trained turn per call, in the order the calls finished.
func (b *batch) addTurns(tr *rollout.Trajectory, calls []*Call) {
	for _, c := range calls {
		trained := !(b.dc.MaskTruncated && c.Finish == rollout.FinishLength)
		t := rollout.ActionTurn(c.Prompt, c.Output, trained)
		t.LogProbs, t.TemperedLogProbs = c.LogProbs, c.TemperedLogProbs
		t.Text, t.Finish, t.Messages = c.Text, c.Finish, c.Messages
		t.Step = env.StepResult{Assistant: c.Reply}
		t.Timing.Queue, t.Timing.Generate = c.Queue, c.Total
		tr.Turns = append(tr.Turns, t)
		tr.Profile.Generate += c.Total
		tr.Profile.Queue += c.Queue
	}
}

// finish fills the trajectory's score and totals.
func (b *batch) finish(tr *rollout.Trajectory, calls []*Call, score env.Score) {
	tr.Score, tr.Reward = score, score.Reward
	if tr.Score.Metrics == nil {
		tr.Score.Metrics = map[string]float64{}
	}
	segments, reused, over := 0, 0, 0
	for k, t := range tr.Turns {
		tr.ContextTokens += len(t.Context)
		tr.OutputTokens += len(t.Output)
		tr.ActionTurns++
		tr.MaxContextTokens = max(tr.MaxContextTokens, len(t.Context))
		if k < len(score.TurnRewards) {
			t.Reward = score.TurnRewards[k]
		}
		segments = max(segments, calls[k].Segment+1)
		reused += calls[k].Reused
		if len(calls[k].Overridden) > 0 {
			over++
		}
	}
	tr.Score.Metrics["agent/calls"] = float64(len(calls))
	tr.Score.Metrics["agent/segments"] = float64(segments)
	tr.Score.Metrics["agent/reused_tokens"] = float64(reused)
	tr.Score.Metrics["agent/sampling_overridden"] = float64(over)
}

// replay scores the episode with the task's environment: the model's outputs of the chain of
// calls that ends with the last call are stepped through a fresh episode, whose rubric scores
// them. Turn rewards go to the calls of that chain.
func replay(ctx context.Context, ep rollout.Episode, idx int, calls []*Call) (env.Score, error) {
	var chain []int
	for k := len(calls) - 1; k >= 0; k = calls[k].Extends {
		chain = append([]int{k}, chain...)
	}
	start, err := ep.Env.Reset(ctx, ep.Task)
	if err != nil {
		return env.Score{}, err
	}
	traj := &env.Trajectory{Task: ep.Task, Start: start, Episode: idx, Group: ep.Group, End: string(rollout.EndDone)}
	for _, k := range chain {
		c := calls[k]
		res, err := ep.Env.Step(ctx, c.Text)
		if err != nil {
			return env.Score{}, err
		}
		traj.Turns = append(traj.Turns, env.Turn{Assistant: c.Text, Result: res, ContextTokens: len(c.Prompt), OutputTokens: len(c.Output)})
		if res.Done {
			break
		}
	}
	score, err := ep.Env.Rubric().ScoreContext(ctx, traj)
	if err != nil {
		return env.Score{}, err
	}
	turns := make([]float64, len(calls))
	for i, k := range chain[:min(len(chain), len(score.TurnRewards))] {
		turns[k] = score.TurnRewards[i]
	}
	score.TurnRewards = turns
	return score, nil
}

// profile is the batch's profile, as the driver reports it.
func profile(trajs []*rollout.Trajectory, start time.Time, s0, s1 rollout.Stats) *rollout.BatchProfile {
	sum := rollout.SumProfiles(trajs)
	p := &rollout.BatchProfile{Wall: time.Since(start), Episodes: len(trajs), Generate: sum.Generate, Queue: sum.Queue,
		Engine: rollout.Stats{Steps: s1.Steps - s0.Steps, PrefillTokens: s1.PrefillTokens - s0.PrefillTokens,
			DecodeTokens: s1.DecodeTokens - s0.DecodeTokens, Generated: s1.Generated - s0.Generated, Forks: s1.Forks - s0.Forks,
			MaxBatch: s1.MaxBatch, Forward: s1.Forward - s0.Forward, Sample: s1.Sample - s0.Sample}}
	for _, t := range trajs {
		p.ActionTurns += len(t.Turns)
		p.ContextTokens += t.ContextTokens
		p.OutputTokens += t.OutputTokens
		switch t.End {
		case rollout.EndDone:
			p.EndDone++
		case rollout.EndMaxTurns:
			p.EndMaxTurns++
		case rollout.EndContextBudget:
			p.EndContextBudget++
		case rollout.EndError:
			p.EndError++
		}
	}
	return p
}
