package report

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	rundir "github.com/mtgrpo/mtgrpo/cmd/internal/run"
)

// Panel is one chart: the series it draws, chosen from the run's metric names.
type Panel struct {
	Title, Unit string
	// Keys are metric names drawn when present; Prefixes add every metric starting with one.
	Keys, Prefixes []string
	// Exclude drops names the prefixes would take.
	Exclude []string
	// Stacked draws the series as stacked areas (parts of a whole, such as time per phase).
	Stacked bool
}

// Panels are the charts of a report, in page order. Names follow verl and TRL; a panel whose
// metrics a run does not log is left out.
var Panels = []Panel{
	{Title: "Reward", Keys: []string{"critic/score/mean", "critic/score/max", "critic/score/min", "critic/rewards/mean", "val/score"}},
	{Title: "Accuracy", Keys: []string{"train/accuracy", "train/accuracy_strict", "val/accuracy", "val/accuracy_strict", "val/format",
		"reward/accuracy", "reward/accuracy_strict", "val/accuracy_lenient"}, Prefixes: []string{"val/pass@"}},
	{Title: "SFT warm-up", Keys: []string{"sft/loss"}},
	{Title: "KL", Keys: []string{"actor/kl_loss", "actor/ppo_kl", "actor/kl"}},
	{Title: "Entropy", Keys: []string{"actor/entropy"}},
	{Title: "Policy loss", Keys: []string{"actor/pg_loss", "actor/pg_clipfrac", "actor/grad_norm"}},
	{Title: "Lengths", Unit: "tokens", Keys: []string{"response_length/mean", "response_length/max", "prompt_length/mean", "context/max_tokens/mean"}},
	{Title: "Turns", Keys: []string{"num_turns/mean", "num_turns/max", "num_turns/min"}},
	{Title: "Tool calls", Keys: []string{"tool_call_counts/mean", "turn_reward/tool_success/mean", "turn_reward/answer_in_result/mean",
		"turn_reward/partial_product/mean", "val/turn_reward/tool_success/mean"}, Prefixes: []string{"tool_calls/"}},
	{Title: "Throughput", Unit: "tokens/s", Keys: []string{"perf/throughput"}},
	{Title: "Time per phase", Unit: "s", Prefixes: []string{"timing_s/"}, Exclude: []string{"timing_s/step"}, Stacked: true},
}

// Series are one metric's points over steps.
type Series struct {
	Name  string
	Steps []float64
	Value []float64
}

// seriesOf collects the panel's metrics from records, in a stable order: Keys as listed, then
// prefix matches sorted by name.
func (p Panel) seriesOf(recs []rundir.Record) []Series {
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
		if taken[k] || slices.Contains(p.Exclude, k) {
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
	names = append(names, extra...)
	out := make([]Series, 0, len(names))
	for _, n := range names {
		s := Series{Name: n}
		clipped := 0
		for _, r := range recs {
			if v, ok := r.Values[n]; ok {
				if math.Abs(v) > drawLimit { // NaN cannot come from JSON
					v, clipped = math.Copysign(drawLimit, v), clipped+1
				}
				s.Steps = append(s.Steps, float64(r.Step))
				s.Value = append(s.Value, v)
			}
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
