package rollout

// Sampling on the device (torch.Sample: one crossing, and the same code inside the static decode
// step, so that an eager step and a replayed CUDA graph draw alike). Deviations and choices, stated
// here as style asks:
//
//   - Order of the warpers is transformers': temperature, then top-k (tokens tied with the k-th
//     stay), then top-p (on the top-k distribution renormalised), then min-p (relative to the most
//     likely token). vLLM applies
//     min-p before top-k/top-p; the two orders agree whenever min-p alone or top-k/top-p alone is
//     set.
//   - A token is drawn by inverse-CDF sampling with one uniform number per row, drawn on the host
//     from the request's own PCG stream. The draw therefore depends only on the request's seed and
//     the logits, never on which other sequences share the batch or on the device's generator.
//   - Two log-probabilities come back with each token. LogProb is under the distribution actually
//     sampled: after temperature AND truncation (top-k/top-p/min-p), renormalised; it is the
//     behaviour policy's log-probability that importance weights need, and 0 for greedy tokens
//     (a point mass). TemperedLogProb is after temperature only, without truncation: what the
//     trainer recomputes with model.ForwardOptions{Temperature} (verl and vLLM's default logprobs
//     are this one). With no truncation (the RL default) the two are equal. Greedy rows use
//     temperature 1 for TemperedLogProb.
//   - Each row also returns a finiteness witness in the same copy: the log-sum-exp of its logits
//     (greedy) or the total kept probability mass (sampling). Either is NaN or infinite exactly
//     when the row's distribution is undefined (a NaN or +Inf logit, or every logit −Inf), and
//     finite otherwise, so NaN weights fail the step instead of sampling token 0 with NaN
//     log-probabilities; −Inf logits of masked tokens are fine.

import (
	"math"

	"github.com/mtgrpo/mtgrpo/torch"
)

// draw is one row to sample: its settings and its uniform number u in [0, 1).
type draw struct {
	s *Sampling
	u float64
}

// drawn is one sampled token with its two log-probabilities; finite is false when the row's
// logits define no distribution (NaN or +Inf, or all −Inf), and then the rest is meaningless.
type drawn struct {
	id              int32
	logProb         float32
	temperedLogProb float32
	finite          bool
}

// maxU is the largest float32 below 1: a float64 u just below 1 must not round up to 1.
const maxU = 1 - 1.0/(1<<24)

// sampleRows samples one token per row of logits [rows, vocab] (float32) on the logits' device
// (torch.Sample, one crossing) and copies the ids and log-probs to the host in one transfer. Run
// on the torch thread.
func sampleRows(logits *torch.Tensor, rows []draw) []drawn {
	s := torch.NewScope()
	defer s.Close()
	prm := torch.FromSlice(params(rows, int(logits.Size(1))), int64(len(rows)), torch.SampleCols).ToDevice(logits.Device())
	var out *torch.Tensor
	torch.NoGrad(func() { out = torch.Sample(logits, prm, sampleMode(rows)) })
	return readDrawn(out.Float64s(), len(rows))
}

// readDrawn reads n rows of torch.Sample's result block (torch.SampleOutCols values each: id,
// log-prob, tempered log-prob, finiteness witness).
func readDrawn(host []float64, n int) []drawn {
	res := make([]drawn, n)
	for i := range res {
		h := host[torch.SampleOutCols*i : torch.SampleOutCols*(i+1)]
		res[i] = drawn{id: int32(h[0]), logProb: float32(h[1]), temperedLogProb: float32(h[2]),
			finite: !math.IsNaN(h[3]) && !math.IsInf(h[3], 0)}
	}
	return res
}

// sampleMode is the truncations the rows need: greedy when every row is, else sorting for top-k
// and top-p and the min-p mask only when some row asks for them (the fewest passes over [rows,
// vocab]).
func sampleMode(rows []draw) torch.SampleMode {
	greedy, sort, minp := true, false, false
	for _, r := range rows {
		greedy = greedy && r.s.greedy()
		sort = sort || r.s.sortNeeded()
		minp = minp || !r.s.greedy() && r.s.MinP > 0
	}
	if greedy {
		return torch.SampleGreedy
	}
	var m torch.SampleMode
	if sort {
		m |= torch.SampleSort
	}
	if minp {
		m |= torch.SampleMinP
	}
	return m
}

// params lays the rows' settings out as torch.Sample's [rows, torch.SampleCols] float32 block: off
// values are chosen so that the masks keep everything (top_k = vocab, top_p threshold 2, min_p 0).
func params(rows []draw, vocab int) []float32 {
	p := make([]float32, len(rows)*torch.SampleCols)
	fillParams(p, rows, vocab)
	return p
}

// fillParams is params into p (len(rows)*torch.SampleCols values).
func fillParams(p []float32, rows []draw, vocab int) {
	for i, r := range rows {
		q := p[i*torch.SampleCols : (i+1)*torch.SampleCols]
		clear(q)
		q[torch.SampleColTemp], q[torch.SampleColTopK], q[torch.SampleColTopP] = float32(r.s.temperature()), float32(vocab), 2
		q[torch.SampleColMinP], q[torch.SampleColU] = float32(r.s.MinP), float32(min(r.u, maxU))
		if r.s.TopK > 0 && r.s.TopK < vocab {
			q[torch.SampleColTopK] = float32(r.s.TopK)
		}
		if r.s.TopP > 0 && r.s.TopP < 1 {
			q[torch.SampleColTopP] = float32(r.s.TopP)
		}
		if r.s.greedy() {
			q[torch.SampleColTemp], q[torch.SampleColGreedy] = 1, 1
		}
	}
}
