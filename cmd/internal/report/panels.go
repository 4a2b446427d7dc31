package report

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	rundir "github.com/mtgrpo/mtgrpo/cmd/internal/run"
)

// YAxis says how a panel's y-axis is fitted to what it shows.
type YAxis int

const (
	// YData spans the values drawn (losses, rewards, entropy: they may be negative).
	YData YAxis = iota
	// YFromZero runs from 0 to the largest value (counts, sizes, times, norms).
	YFromZero
	// YRate is [0, 1] (shares, accuracies, pass rates); a value outside it widens the axis to
	// the data's range rather than being drawn off the chart.
	YRate
)

// Panel is one chart: the series it draws, chosen from the run's metric names, and the phase
// whose steps it shows. Every series of a panel is one quantity on one y-axis.
type Panel struct {
	Title, Unit string
	Phase       Phase
	// Keys are metric names drawn when present; Prefixes add every metric starting with one
	// (and ending with Suffix, when set).
	Keys, Prefixes []string
	Suffix         string
	// Exclude drops names the prefixes would take.
	Exclude []string
	Y       YAxis
	// Stacked draws the series as stacked areas (parts of a whole, such as time per phase).
	Stacked bool
	// OmitZero leaves out series that are 0 at every step: the quantity is switched off (KL
	// without a KL term). A panel left with no series is not drawn.
	OmitZero bool
}

// Panels are the charts of a report, in page order: the RL phase's, then the warm-up's. Names
// follow verl and TRL; a panel whose metrics a run does not log is left out. Evaluations (val/)
// are drawn as markers, training steps as lines.
var Panels = []Panel{
	{Title: "Reward", Phase: PhaseRL, Keys: []string{"critic/score/mean", "critic/score/max", "critic/score/min", "val/score"}},
	{Title: "Accuracy", Phase: PhaseRL, Y: YRate, Keys: []string{"train/accuracy", "train/accuracy_strict", "val/accuracy",
		"val/accuracy_strict", "val/format"}, Prefixes: []string{"val/pass@"}},
	{Title: "KL to the reference", Phase: PhaseRL, OmitZero: true, Keys: []string{"actor/kl_loss", "actor/kl"}},
	{Title: "Entropy", Phase: PhaseRL, Keys: []string{"actor/entropy"}},
	{Title: "Policy loss", Phase: PhaseRL, Keys: []string{"actor/pg_loss"}},
	{Title: "Gradient norm", Phase: PhaseRL, Y: YFromZero, Keys: []string{"actor/grad_norm"}},
	{Title: "Clip fraction", Phase: PhaseRL, Y: YRate, OmitZero: true, Keys: []string{"actor/pg_clipfrac", "actor/pg_clipfrac_lower"}},
	{Title: "Lengths", Phase: PhaseRL, Unit: "tokens", Y: YFromZero, Keys: []string{"response_length/mean", "response_length/max",
		"prompt_length/mean", "context/max_tokens/mean"}},
	{Title: "Turns", Phase: PhaseRL, Unit: "per episode", Y: YFromZero, Keys: []string{"num_turns/mean", "num_turns/max",
		"num_turns/min", "val/num_turns/mean"}},
	{Title: "Tool calls", Phase: PhaseRL, Unit: "per episode", Y: YFromZero, Keys: []string{"tool_call_counts/mean",
		"train/num_valid_actions", "val/tool_call_counts/mean", "val/num_valid_actions/mean"}},
	{Title: "Tool calls that ran", Phase: PhaseRL, Unit: "share of episodes", Y: YRate, Keys: []string{"tool_success/mean",
		"val/tool_success/mean"}},
	{Title: "Turn rewards", Phase: PhaseRL, Keys: []string{"train/turn_reward", "val/critic/turn_reward/mean"},
		Prefixes: []string{"turn_reward/", "val/turn_reward/"}, Suffix: "/mean"},
	{Title: "Throughput", Phase: PhaseRL, Unit: "tokens/s", Y: YFromZero, Keys: []string{"perf/throughput"}},
	{Title: "Time per phase", Phase: PhaseRL, Unit: "s", Prefixes: []string{"timing_s/"}, Exclude: []string{"timing_s/step"}, Stacked: true},

	{Title: "Warm-up loss", Phase: PhaseWarmup, Y: YFromZero, Keys: []string{"sft/loss"}},
	{Title: "Warm-up gradient norm", Phase: PhaseWarmup, Y: YFromZero, Keys: []string{"actor/grad_norm"}},
	{Title: "Warm-up evaluation", Phase: PhaseWarmup, Y: YRate, Keys: []string{"val/format", "val/accuracy",
		"val/accuracy_strict", "val/turn_reward/tool_success/mean"}, Prefixes: []string{"val/pass@"}},
}

// Series are one metric's points over steps. Marks draws them as markers (evaluations, a few
// steps apart) rather than a line.
type Series struct {
	Name  string
	Steps []float64
	Value []float64
	Marks bool
}

// evaluation reports whether a metric is an evaluation's.
func evaluation(name string) bool { return strings.HasPrefix(name, "val/") }

// names are the panel's metrics present in recs, in a stable order: Keys as listed, then prefix
// matches sorted by name.
func (p Panel) names(recs []rundir.Record) []string {
	present := map[string]bool{}
	for _, r := range recs {
		for k := range r.Values {
			present[k] = true
		}
	}
	var names []string
	taken := map[string]bool{}
	for _, k := range p.Keys {
		if present[k] && !taken[k] {
			names, taken[k] = append(names, k), true
		}
	}
	var extra []string
	for k := range present {
		if taken[k] || slices.Contains(p.Exclude, k) || !strings.HasSuffix(k, p.Suffix) {
			continue
		}
		for _, pre := range p.Prefixes {
			if strings.HasPrefix(k, pre) {
				extra, taken[k] = append(extra, k), true
				break
			}
		}
	}
	sort.Strings(extra)
	return append(names, extra...)
}

// seriesOf collects the panel's series from recs (the records of its phase).
func (p Panel) seriesOf(recs []rundir.Record) []Series {
	var out []Series
	for _, n := range p.names(recs) {
		s := Series{Name: n, Marks: evaluation(n)}
		clipped, nonzero := 0, false
		for _, r := range recs {
			v, ok := r.Values[n]
			if !ok {
				continue
			}
			if math.Abs(v) > drawLimit { // NaN cannot come from JSON
				v, clipped = math.Copysign(drawLimit, v), clipped+1
			}
			nonzero = nonzero || v != 0
			s.Steps = append(s.Steps, float64(r.Step))
			s.Value = append(s.Value, v)
		}
		if p.OmitZero && !nonzero {
			continue
		}
		if clipped > 0 {
			s.Name = fmt.Sprintf("%s (%d clipped to ±%g)", n, clipped, drawLimit)
		}
		out = append(out, s)
	}
	return out
}

// drawLimit bounds the values a chart draws: beyond it a chart's axis range and ticks overflow
// (1.7e308 is valid JSON). Larger values are drawn at the limit and the series says how many.
const drawLimit = 1e15
