package rollout

import (
	"fmt"
	"strings"
	"time"
)

// BatchProfile is where one Run's time went. Generation runs on the driving goroutine; the other
// phases run on workers, concurrently with it and with each other, so their sums can exceed Wall.
type BatchProfile struct {
	Wall                                             time.Duration
	Episodes, ActionTurns, SummaryTurns              int
	ContextTokens, OutputTokens                      int
	Engine                                           Stats         // the generator's counters for this Run (Engine only)
	WaitingOnWorkers                                 time.Duration // the driver idle: nothing to generate until an env, tool or condenser finishes
	Generate, Queue, Env, Condense, Reward, Reset    time.Duration // summed over episodes
	EndDone, EndMaxTurns, EndContextBudget, EndError int
}

func (r *run) profile(trajs []*Trajectory) *BatchProfile {
	sum := SumProfiles(trajs)
	p := &BatchProfile{Wall: time.Since(r.start), Episodes: len(trajs), WaitingOnWorkers: r.blocked,
		Generate: sum.Generate, Queue: sum.Queue, Env: sum.Env, Condense: sum.Condense, Reward: sum.Reward, Reset: sum.Reset}
	now := r.d.gen.Stats()
	p.Engine = Stats{Steps: now.Steps - r.stats0.Steps, PrefillTokens: now.PrefillTokens - r.stats0.PrefillTokens,
		DecodeTokens: now.DecodeTokens - r.stats0.DecodeTokens, Generated: now.Generated - r.stats0.Generated,
		Forks: now.Forks - r.stats0.Forks, MaxBatch: now.MaxBatch, Forward: now.Forward - r.stats0.Forward,
		Sample: now.Sample - r.stats0.Sample}
	for _, t := range trajs {
		for _, tu := range t.Turns {
			if tu.Kind == KindSummary {
				p.SummaryTurns++
			} else {
				p.ActionTurns++
			}
		}
		p.ContextTokens += t.ContextTokens
		p.OutputTokens += t.OutputTokens
		switch t.End {
		case EndDone:
			p.EndDone++
		case EndMaxTurns:
			p.EndMaxTurns++
		case EndContextBudget:
			p.EndContextBudget++
		default:
			p.EndError++
		}
	}
	return p
}

// Report is a readable summary: totals, per-turn means and the engine's share of the wall time.
func (p *BatchProfile) Report() string {
	var b strings.Builder
	turns := max(1, p.ActionTurns+p.SummaryTurns)
	fmt.Fprintf(&b, "rollout: %d episodes, %d action turns, %d summary turns in %v (ends: %d done, %d max_turns, %d context_budget, %d error)\n",
		p.Episodes, p.ActionTurns, p.SummaryTurns, p.Wall.Round(time.Millisecond), p.EndDone, p.EndMaxTurns, p.EndContextBudget, p.EndError)
	fmt.Fprintf(&b, "  tokens: %d context, %d output (%.1f output tokens/s)\n", p.ContextTokens, p.OutputTokens,
		float64(p.OutputTokens)/max(p.Wall.Seconds(), 1e-9))
	row := func(name string, d time.Duration, per int) {
		fmt.Fprintf(&b, "  %-22s %12v total %12v per turn\n", name, d.Round(time.Microsecond), (d / time.Duration(max(1, per))).Round(time.Microsecond))
	}
	row("generate (per sample)", p.Generate, turns)
	row("  of which queued", p.Queue, turns)
	row("env + tools", p.Env, p.ActionTurns)
	row("condense + template", p.Condense, turns)
	row("reward + close", p.Reward, p.Episodes)
	row("reset", p.Reset, p.Episodes)
	row("driver waiting on envs", p.WaitingOnWorkers, turns)
	if e := p.Engine; e.Steps > 0 {
		fmt.Fprintf(&b, "  engine: %d steps, %d prompt + %d decode tokens, %d sampled, %d prefix copies, max batch %d; forward %v, sampling %v\n",
			e.Steps, e.PrefillTokens, e.DecodeTokens, e.Generated, e.Forks, e.MaxBatch, e.Forward.Round(time.Millisecond),
			e.Sample.Round(time.Millisecond))
	}
	return b.String()
}
