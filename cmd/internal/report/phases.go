package report

import (
	"strings"

	rundir "github.com/mtgrpo/mtgrpo/cmd/internal/run"
)

// Phase is a part of a run drawn on its own x-axis: its steps differ in kind and number (800
// warm-up steps would squeeze 30 RL steps into the chart's last few pixels).
type Phase string

const (
	PhaseRL     Phase = "rl"     // the RL steps and their evaluations
	PhaseWarmup Phase = "warmup" // the SFT warm-up and the evaluations before and after it
)

// sftMarker is the metric only SFT steps log.
const sftMarker = "sft/loss"

// View is one phase's records and the steps its x-axis spans, shared by all its charts.
type View struct {
	Phase    Phase
	Records  []rundir.Record
	From, To int
}

// Views splits a run's records by phase, RL first. The warm-up holds the SFT steps (those that
// log sft/loss) and the evaluations up to the last of them; RL holds the steps after it and the
// evaluations from it on: the evaluation after SFT is where RL starts, the SFT step's own
// training metrics are not RL's. Without SFT every record is RL's. A phase without records has
// no view.
func Views(recs []rundir.Record) []View {
	end, warm := -1, false
	for _, r := range recs {
		if _, ok := r.Values[sftMarker]; ok {
			end, warm = max(end, r.Step), true
		}
	}
	rl := View{Phase: PhaseRL}
	wu := View{Phase: PhaseWarmup}
	for _, r := range recs {
		switch {
		case !warm || r.Step > end:
			rl.Records = append(rl.Records, r)
		case r.Step == end:
			wu.Records = append(wu.Records, r)
			if ev := evaluations(r); len(ev.Values) > 0 {
				rl.Records = append(rl.Records, ev)
			}
		default:
			wu.Records = append(wu.Records, r)
		}
	}
	var out []View
	for _, v := range []View{rl, wu} {
		if len(v.Records) == 0 {
			continue
		}
		v.From, v.To = v.Records[0].Step, v.Records[len(v.Records)-1].Step
		out = append(out, v)
	}
	return out
}

// evaluations is the record with only its evaluation metrics.
func evaluations(r rundir.Record) rundir.Record {
	out := rundir.Record{Step: r.Step, Values: rundir.Metrics{}}
	for k, v := range r.Values {
		if strings.HasPrefix(k, "val/") {
			out.Values[k] = v
		}
	}
	return out
}
