package rollout

import (
	"fmt"
	"strings"
	"time"

	"github.com/mtgrpo/mtgrpo/env"
)

// The episode state machine. Each phase is either work on a worker goroutine (reset, condense,
// env, score) or a request in the generator (generate, summarize); a phase's continuation, run on
// the driving goroutine, moves the episode to the next phase:
//
//	reset ──► condense ──► generate ──► env ──► condense ─ … ─► score ──► done
//	             │  ▲                     │
//	             ▼  │                     └─► score (env done, max turns)
//	          summarize
//
// Any phase can end the episode early (an error, a context over the budget), always through
// score, which closes the Env.
type phase int

const (
	phaseReset phase = iota
	phaseCondense
	phaseGenerate
	phaseSummarize
	phaseEnv
	phaseScore
	phaseDone
)

var phaseNames = [...]string{"reset", "condense", "generate", "summarize", "env", "score", "done"}

func (p phase) String() string { return phaseNames[p] }

// next lists the legal transitions.
var next = map[phase][]phase{
	phaseReset:     {phaseCondense, phaseScore},
	phaseCondense:  {phaseGenerate, phaseSummarize, phaseScore},
	phaseGenerate:  {phaseEnv, phaseScore},
	phaseSummarize: {phaseCondense, phaseScore},
	phaseEnv:       {phaseCondense, phaseScore},
	phaseScore:     {phaseDone},
}

// episode is one episode in flight.
type episode struct {
	r       *run
	idx     int
	in      Episode
	phase   phase
	start   env.Start
	hist    History
	rend    *Renderer
	traj    *Trajectory
	turn    *Turn // the turn being generated
	plan    Plan  // the plan behind the summary being written
	actions int   // action turns completed
	turns   []env.Turn
	started time.Time
	// admitted is set when the episode starts (run.admit): an episode waiting for a slot under
	// MaxOpenEpisodes does not hold back the shared first turns.
	admitted bool
}

// to moves the episode to phase p, refusing transitions the machine does not have.
func (ep *episode) to(p phase) {
	for _, q := range next[ep.phase] {
		if q == p {
			ep.phase = p
			return
		}
	}
	ep.r.err = fmt.Errorf("rollout: internal error: episode %d cannot go from %s to %s", ep.idx, ep.phase, p)
}

func (ep *episode) reset() {
	ep.phase = phaseReset
	ctx, e, task := ep.r.ctx, ep.in.Env, ep.in.Task
	ep.r.work(func() func() {
		t0 := time.Now()
		var start env.Start
		err := guard("env reset", func() (err error) { start, err = e.Reset(ctx, task); return err })
		var rend *Renderer
		if err == nil {
			rend, err = NewRenderer(ep.r.d.tok, start.Tools, ep.r.d.cfg.ChatVars)
		}
		dur := time.Since(t0)
		return func() {
			ep.traj.Profile.Reset = dur
			if err != nil {
				ep.fail(fmt.Errorf("reset: %w", err))
				return
			}
			ep.start, ep.rend = start, rend
			ep.traj.Start = start
			ep.hist = History{Task: start.Messages, Tools: start.Tools}
			ep.condense()
		}
	})
}

// condense builds the next context on a worker.
func (ep *episode) condense() {
	ep.to(phaseCondense)
	c, h, rend := ep.r.d.cfg.Condenser, ep.hist, ep.rend // h: a copy; the worker never sees later edits
	h.Steps = append([]Step(nil), ep.hist.Steps...)
	ep.r.work(func() func() {
		t0 := time.Now()
		var p Plan
		err := guard("condenser "+c.Name(), func() (err error) { p, err = c.Condense(&h, rend); return err })
		dur := time.Since(t0)
		return func() {
			ep.traj.Profile.Condense += dur
			switch {
			case err != nil && isBudget(err):
				ep.end(EndContextBudget, nil)
			case err != nil:
				ep.fail(fmt.Errorf("condense: %w", err))
			case p.Summarize != nil:
				ep.summarize(p, dur)
			default:
				ep.generate(p, dur)
			}
		}
	})
}

// limit is the longest context the episode may use (0: none).
func (ep *episode) limit() int {
	lim := ep.r.d.cfg.MaxContextTokens
	if n := ep.r.d.gen.MaxLen(); n > 0 {
		if c := n - 1; lim == 0 || c < lim {
			lim = c
		}
	}
	return lim
}

// generate starts an action turn: the context span (mask 0) is appended, then the request goes to
// the generator (held back on the first turn, see run.holding).
func (ep *episode) generate(p Plan, condense time.Duration) {
	if lim := ep.limit(); lim > 0 && len(p.IDs) > lim {
		ep.end(EndContextBudget, nil)
		return
	}
	ep.to(phaseGenerate)
	ep.turn = &Turn{Kind: KindAction, Messages: p.Messages, Timing: TurnTiming{Condense: condense}}
	ep.turn.appendSpan(p.IDs, SpanContext, false)
	if ep.r.holding {
		ep.r.ready = append(ep.r.ready, ep)
		return
	}
	if err := ep.r.submit(ep.request(), []*episode{ep}); err != nil {
		ep.fail(err)
	}
}

// request is the current turn's request; its seed depends only on the run's seed, the episode
// and the turn.
func (ep *episode) request() *Request {
	s := ep.r.d.cfg.Sampling
	s.Seed = Seed(mixSeed(ep.r.d.cfg.Seed, uint64(ep.idx), uint64(len(ep.traj.Turns))))
	if ep.turn.Kind == KindSummary {
		s.MaxNewTokens, s.StopStrings = ep.plan.SummaryMaxTokens, nil
	}
	return &Request{Prompt: ep.turn.Context, Sampling: s,
		Turn: &TurnTag{Task: ep.in.Task, Messages: ep.turn.Messages, Kind: ep.turn.Kind}}
}

// summarize asks the model for a summary of the history (phase summarize).
func (ep *episode) summarize(p Plan, condense time.Duration) {
	if lim := ep.limit(); lim > 0 && len(p.SummaryIDs) > lim {
		ep.end(EndContextBudget, nil)
		return
	}
	ep.to(phaseSummarize)
	ep.plan = p
	ep.turn = &Turn{Kind: KindSummary, Messages: p.Summarize, Timing: TurnTiming{Condense: condense}}
	ep.turn.appendSpan(p.SummaryIDs, SpanContext, false)
	if err := ep.r.submit(ep.request(), []*episode{ep}); err != nil {
		ep.fail(err)
	}
}

// generated takes a finished sample: the output span is appended with its mask, then the
// environment steps (action) or the summary enters the history (summary).
func (ep *episode) generated(res *Result) {
	t := ep.turn
	trained := !(ep.r.d.cfg.MaskTruncated && res.Finish == FinishLength)
	if t.Kind == KindSummary {
		trained = trained && ep.plan.TrainSummary
	}
	t.appendSpan(res.Tokens, SpanOutput, trained)
	t.LogProbs, t.TemperedLogProbs = res.LogProbs, res.TemperedLogProbs
	t.Text, t.Finish = res.Text, res.Finish
	t.Timing.Queue, t.Timing.Generate = res.Queued, res.Total
	ep.traj.Turns = append(ep.traj.Turns, t)
	ep.traj.Profile.Generate += res.Total
	ep.traj.Profile.Queue += res.Queued
	if t.Kind == KindSummary {
		ep.hist.Summary = strings.TrimSpace(res.Text)
		ep.hist.Summarized = ep.plan.SummaryCovers
		ep.condense()
		return
	}
	ep.step(t)
}

// step hands the output to the environment on a worker.
func (ep *episode) step(t *Turn) {
	ep.to(phaseEnv)
	ctx, e, text := ep.r.ctx, ep.in.Env, t.Text
	ep.r.work(func() func() {
		t0 := time.Now()
		var res env.StepResult
		err := guard("env step", func() (err error) { res, err = e.Step(ctx, text); return err })
		dur := time.Since(t0)
		return func() {
			t.Timing.Env = dur
			ep.traj.Profile.Env += dur
			if err != nil {
				ep.fail(fmt.Errorf("env step: %w", err))
				return
			}
			t.Step = res
			ep.hist.Steps = append(ep.hist.Steps, Step{Assistant: res.Assistant, Results: res.Messages})
			ep.turns = append(ep.turns, env.Turn{Assistant: text, Result: res, ContextTokens: len(t.Context),
				OutputTokens: len(t.Output)})
			ep.actions++
			ep.debugTurn(t)
			switch {
			case res.Done:
				ep.end(EndDone, nil)
			case ep.actions >= ep.r.d.cfg.MaxTurns:
				ep.end(EndMaxTurns, nil)
			default:
				ep.condense()
			}
		}
	})
}

func (ep *episode) fail(err error) { ep.end(EndError, fmt.Errorf("episode %d: %w", ep.idx, err)) }

// end stops the episode and scores it on a worker (errors skip the rubric); the Env is closed.
func (ep *episode) end(why EndReason, err error) {
	ep.to(phaseScore)
	ep.traj.End, ep.traj.Err = why, err
	ctx, e, traj := ep.r.ctx, ep.in.Env, &env.Trajectory{Task: ep.in.Task, Start: ep.start, Turns: ep.turns,
		Episode: ep.idx, Group: ep.in.Group, End: string(why)}
	ep.r.work(func() func() {
		t0 := time.Now()
		var score env.Score
		var serr error
		if err == nil {
			serr = guard("reward", func() (err error) { score, err = e.Rubric().ScoreContext(ctx, traj); return err })
		}
		_ = guard("env close", e.Close)
		dur := time.Since(t0)
		return func() {
			ep.traj.Profile.Reward = dur
			if serr != nil {
				ep.traj.End, ep.traj.Err = EndError, fmt.Errorf("episode %d: reward: %w", ep.idx, serr)
			}
			ep.finish(score)
		}
	})
}

// finish fills the trajectory's totals.
func (ep *episode) finish(score env.Score) {
	ep.to(phaseDone)
	tr := ep.traj
	tr.Score, tr.Reward = score, score.Reward
	k := 0
	for _, t := range tr.Turns {
		tr.ContextTokens += len(t.Context)
		tr.OutputTokens += len(t.Output)
		if t.Kind != KindAction {
			continue
		}
		tr.ActionTurns++
		tr.MaxContextTokens = max(tr.MaxContextTokens, len(t.Context))
		if k < len(score.TurnRewards) {
			t.Reward = score.TurnRewards[k]
		}
		k++
	}
	tr.Profile.Wall = time.Since(ep.started)
	ep.r.left--
	ep.r.open--
	ep.r.admit()
}

func (ep *episode) debugTurn(t *Turn) {
	w := ep.r.d.cfg.Debug
	if w == nil {
		return
	}
	fmt.Fprintf(w, "episode %d turn %d: context %d output %d (%s) condense %v queue %v generate %v env %v\n",
		ep.idx, ep.actions, len(t.Context), len(t.Output), t.Finish, t.Timing.Condense, t.Timing.Queue,
		t.Timing.Generate, t.Timing.Env)
}

// guard runs environment, tool, condenser or reward code on a worker and turns a panic in it into
// an error naming what panicked: the episode then ends with EndError and the rest of the batch
// goes on, instead of the whole run crashing on one bad output.
func guard(what string, f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s panicked: %v", what, r)
		}
	}()
	return f()
}
