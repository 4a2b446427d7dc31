package memplan

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// rows are the lines of a plan's table: a label and the bytes of each plan.
var rows = []struct {
	label string
	bytes func(Plan) int64
}{
	{"weights", func(p Plan) int64 { return p.Weights }},
	{"LoRA adapters (fp32)", func(p Plan) int64 { return p.Adapters }},
	{"gradients", func(p Plan) int64 { return p.Grads }},
	{"master weights (fp32)", func(p Plan) int64 { return p.Masters }},
	{"AdamW moments (fp32)", func(p Plan) int64 { return p.Moments }},
	{"gradient buckets / gather buffer", func(p Plan) int64 { return p.Comm }},
	{"reference model", func(p Plan) int64 { return p.Reference }},
	{"critic (all its state)", func(p Plan) int64 { return p.Critic }},
	{"KV cache", func(p Plan) int64 { return p.KVCache }},
	{"decode step: CUDA graph pool (est.)", func(p Plan) int64 { return p.GraphPool }},
	{"= persistent", Plan.Persistent},
	{"activations, checkpointing off (est.)", func(p Plan) int64 { return p.ActivationsPlain }},
	{"activations, checkpointing on (est.)", func(p Plan) int64 { return p.ActivationsCkpt }},
	{"head: whole logits up to (budget)", Plan.HeadBudget},
	{"head: largest logits tensor (fp32)", func(p Plan) int64 { return p.Logits }},
	{"head: logits at the pass's peak", func(p Plan) int64 { return mul(p.LogitsCopies, p.Logits) }},
	{"AdamW step's fp32 gradients", func(p Plan) int64 { return p.StepGrads }},
	{"gathered weights (training)", func(p Plan) int64 { return p.Gathered }},
	{"gathered copy (rollout)", func(p Plan) int64 { return p.GatheredForRollout }},
	{"= peak, training", Plan.TrainPeak},
	{"= peak, rollout", Plan.RolloutPeak},
}

// labelWidth pads the labels, which the right-aligned table would otherwise push right.
const labelWidth = 38

// WriteTable writes plans side by side (one column each, headed by heads) and a last line that
// says, for each, whether it fits. The peak counts the activations as configured and the logits
// chunk LogitsCopies times.
func WriteTable(w io.Writer, heads []string, plans []Plan) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%-*s\t%s\t\n", labelWidth, "per rank", strings.Join(heads, "\t"))
	for _, r := range rows {
		cells := make([]string, len(plans))
		for i, p := range plans {
			cells[i] = FormatBytes(r.bytes(p))
		}
		fmt.Fprintf(tw, "%-*s\t%s\t\n", labelWidth, r.label, strings.Join(cells, "\t"))
	}
	cells := make([]string, len(plans))
	for i, p := range plans {
		cells[i] = verdict(p)
	}
	fmt.Fprintf(tw, "%-*s\t%s\t\n", labelWidth, "fits", strings.Join(cells, "\t"))
	return tw.Flush()
}

// verdict is a plan's one-word answer: "yes", "NO" or "?" (the device's memory unknown).
func verdict(p Plan) string {
	switch {
	case p.Peak() == Beyond || p.Run.Device != 0 && !p.Fits():
		return "NO"
	case p.Run.Device == 0:
		return "?"
	}
	return "yes"
}
