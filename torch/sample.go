package torch

/*
#include "shim.h"
*/
import "C"

// SampleMode says which truncations a Sample call computes: SampleGreedy alone (every row takes
// its argmax), or any of SampleSort (some row has top-k or top-p) and SampleMinP (some row has
// min-p); 0 samples without truncation (temperature only, the RL default).
type SampleMode int

const (
	SampleGreedy SampleMode = C.MT_SAMPLE_GREEDY
	SampleSort   SampleMode = C.MT_SAMPLE_SORT
	SampleMinP   SampleMode = C.MT_SAMPLE_MINP
)

// Columns of Sample's per-row settings, float32 [rows, SampleCols]: the temperature (1 for
// greedy rows), top-k (the vocabulary size when off), top-p (2 when off), min-p (0 when off), the
// row's uniform number u in [0, 1), and greedy (1: take the argmax).
const (
	SampleColTemp   = C.MT_SP_TEMP
	SampleColTopK   = C.MT_SP_TOPK
	SampleColTopP   = C.MT_SP_TOPP
	SampleColMinP   = C.MT_SP_MINP
	SampleColU      = C.MT_SP_U
	SampleColGreedy = C.MT_SP_GREEDY
	SampleCols      = C.MT_SP_COLS
)

// SampleOutCols is the width of Sample's result: id, log-prob under the sampled (truncated)
// distribution, log-prob after temperature only, and a finiteness witness (NaN or infinite exactly
// when the row's distribution is undefined).
const SampleOutCols = 4

// Sample draws one token per row of float32 logits [rows, vocab] by inverse-CDF sampling with the
// settings params [rows, SampleCols] (float32, on the logits' device), in one crossing. The result
// is float64 [rows, SampleOutCols]. The semantics (order of the truncations, ties, the two
// log-probabilities) are the rollout sampler's, stated in rollout/sampler.go; the static decode
// step (Decoder) samples with the same code.
func Sample(logits, params *Tensor, mode SampleMode) *Tensor {
	var out C.mt_tensor
	check("Sample", C.mt_sample(logits.handle("Sample"), params.handle("Sample"), C.int(mode), &out))
	return wrap("Sample", out)
}
