package rollout

// Sampling on the device. Deviations and choices, stated here as style asks:
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

// Columns of the per-row parameter block uploaded once per step.
const (
	colTemp = iota
	colTopK
	colTopP
	colMinP
	colU
	colGreedy
	numCols
)

// sampleRows samples one token per row of logits [rows, vocab] (float32) on the logits' device and
// copies the ids and log-probs to the host in one transfer. Run on the torch thread.
func sampleRows(logits *torch.Tensor, rows []draw) []drawn {
	s := torch.NewScope()
	defer s.Close()
	var out *torch.Tensor
	torch.NoGrad(func() {
		if allGreedy(rows) {
			out = sampleGreedy(logits)
		} else {
			out = sampleGeneral(logits, rows)
		}
	})
	host := out.Float64s() // [rows, outCols]: id, logProb, temperedLogProb, finiteness witness
	res := make([]drawn, len(rows))
	for i := range res {
		h := host[outCols*i : outCols*(i+1)]
		res[i] = drawn{id: int32(h[0]), logProb: float32(h[1]), temperedLogProb: float32(h[2]),
			finite: !math.IsNaN(h[3]) && !math.IsInf(h[3], 0)}
	}
	return res
}

// outCols is the width of the block sampleRows copies to the host.
const outCols = 4

func allGreedy(rows []draw) bool {
	for _, r := range rows {
		if !r.s.greedy() {
			return false
		}
	}
	return true
}

// sampleGreedy: argmax; log p = logit − logsumexp (no [rows, vocab] log-softmax is kept).
func sampleGreedy(logits *torch.Tensor) *torch.Tensor {
	id := logits.Argmax(1, true)
	lse := logits.LogSumExp(true, 1)
	lpT := logits.Gather(1, id).Sub(lse)
	return torch.Cat([]*torch.Tensor{id.ToDType(torch.Float64), torch.ZerosLike(lpT).ToDType(torch.Float64),
		lpT.ToDType(torch.Float64), lse.ToDType(torch.Float64)}, 1)
}

// params lays the rows' settings out as a [rows, numCols] float32 block: off values are chosen
// so that the masks below keep everything (top_k = vocab, top_p threshold 2, min_p 0).
func params(rows []draw, vocab int) []float32 {
	p := make([]float32, len(rows)*numCols)
	for i, r := range rows {
		q := p[i*numCols : (i+1)*numCols]
		q[colTemp], q[colTopK], q[colTopP], q[colMinP], q[colU] = float32(r.s.temperature()), float32(vocab), 2, float32(r.s.MinP), float32(min(r.u, maxU))
		if r.s.TopK > 0 && r.s.TopK < vocab {
			q[colTopK] = float32(r.s.TopK)
		}
		if r.s.TopP > 0 && r.s.TopP < 1 {
			q[colTopP] = float32(r.s.TopP)
		}
		if r.s.greedy() {
			q[colTemp], q[colGreedy] = 1, 1
		}
	}
	return p
}

func sampleGeneral(logits *torch.Tensor, rows []draw) *torch.Tensor {
	B, V := int64(len(rows)), logits.Size(1)
	dev := logits.Device()
	prm := torch.FromSlice(params(rows, int(V)), B, numCols).ToDevice(dev)
	col := func(c int64) *torch.Tensor { return prm.Narrow(1, c, 1) } // [B, 1]
	logp := logits.Div(col(colTemp)).LogSoftmax(1)
	p := logp.Exp()

	// w: the kept probabilities (unnormalised), in sorted order when top-k/top-p need it; order
	// maps a position of w back to a token id (nil: w is in vocabulary order).
	var w, order *torch.Tensor
	if anySort(rows) {
		sp, si := p.Sort(1, true)
		// top-k keeps every token at least as likely as the k-th, ties included, as transformers'
		// TopKLogitsWarper and vLLM do (ties are common among bfloat16 logits).
		kth := sp.Gather(1, col(colTopK).SubScalar(1).ToDType(torch.Int64)) // [B, 1]
		keep := sp.Ge(kth)
		spk := sp.Mul(keep.ToDType(torch.Float32))
		// top-p: keep a token while the mass strictly before it is below p of the top-k mass; the
		// first token always stays (its mass before is 0).
		before := spk.Cumsum(1).Sub(spk)
		keep = keep.And(before.Lt(col(colTopP).Mul(spk.Sum(true, 1))))
		if anyMinP(rows) {
			keep = keep.And(sp.Ge(col(colMinP).Mul(sp.Narrow(1, 0, 1))))
		}
		w, order = sp.Mul(keep.ToDType(torch.Float32)), si
	} else if anyMinP(rows) {
		keep := p.Ge(col(colMinP).Mul(p.Max(true, 1)))
		w = p.Mul(keep.ToDType(torch.Float32))
	} else {
		w = p // no truncation: the RL default, and the fewest passes over [rows, vocab]
	}

	// Inverse CDF: the first position whose running mass exceeds u·total (its own mass is then
	// > 0: the running sum only grows where w does). Rounding in the scan can leave no such
	// position when u is within float error of 1: take the mode then.
	cum := w.Cumsum(1)
	total := cum.Narrow(1, V-1, 1)
	cond := cum.Gt(col(colU).Mul(total))
	pick := torch.Where(cond.Any(true, 1), cond.ToDType(torch.Float32).Argmax(1, true), w.Argmax(1, true))
	lp := w.Gather(1, pick).Log().Sub(total.Log())
	id := pick
	if order != nil {
		id = order.Gather(1, pick)
	}
	greedy := col(colGreedy).GtScalar(0.5)
	id = torch.Where(greedy, logits.Argmax(1, true), id)
	lp = lp.MaskedFill(greedy, 0)
	lpT := logp.Gather(1, id)
	return torch.Cat([]*torch.Tensor{id.ToDType(torch.Float64), lp.ToDType(torch.Float64), lpT.ToDType(torch.Float64),
		total.ToDType(torch.Float64)}, 1)
}

func anyMinP(rows []draw) bool {
	for _, r := range rows {
		if !r.s.greedy() && r.s.MinP > 0 {
			return true
		}
	}
	return false
}

func anySort(rows []draw) bool {
	for _, r := range rows {
		if r.s.sortNeeded() {
			return true
		}
	}
	return false
}
