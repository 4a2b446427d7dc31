package memplan

// The activations a training pass keeps for its backward, counted from what the code's autograd
// graph saves (model/layers.go, the shim's composite RMSNorm, RoPE, SiluMul and attention; the
// decoder layers of Llama, Qwen2 and Qwen3 alike), per token and layer, in bytes, with d the
// weights' size, q = heads·head_dim, kv = kv_heads·head_dim, h = hidden, i = intermediate:
//
//	the layer's input, held for the residual            h·d
//	two RMSNorms: the normalised values and the output   2 · 2h·d
//	  and the input in float32 (in float32 weights: the input itself, counted above for the
//	  first norm; the attention's residual sum for the second)   4h (d = 4), 2 · 4h (d = 2)
//	attention, by kernel (Run.Attention):
//	  flash (CUDA, bfloat16/float16; grouped heads read in place): q, k, v after RoPE, the
//	    output, its merged copy (o_proj's input): (3q + 2kv)·d, and the log-sum-exp heads·4
//	  expanded (CUDA, float32: memory-efficient with k and v repeated to every head): (5q)·d +
//	    heads·4
//	  math (the CPU): the scaled queries, k and v repeated, the merged output: 4q·d, and the
//	    softmax's [heads, len] probabilities: heads·len·d, len the sequence's length (at most
//	    Run.MaxLen)
//	MLP: gate, up, silu(gate), silu(gate)·up            4i·d
//
// RoPE's rotation and the residual adds save nothing large. Besides the layers, a pass holds
// the last layer's output (the head's input) and RoPE's angles, (h + 2·head_dim)·d a token.
// TestMemoryPlanMatchesTrainingPeak (grpo/shard) measures a real update's tensor bytes on the CPU
// against the plan; the flash and expanded rows are the kernels' documented saved tensors, not
// measured here.
//
// For a pass of T tokens (update.micro_tokens): without checkpointing every layer keeps its
// share, T·(L·A + extra); with layer-wise checkpointing (model.ForwardOptions.Checkpoint) each
// layer keeps only its input and one layer at a time is recomputed: T·(L·h·d + A + extra).
func activations(r Run, tokens int64) (plain, ckpt int64) {
	m, d := r.Model, r.DTypeBytes
	h, i := int64(m.Hidden), int64(m.Intermediate)
	heads := int64(m.Heads)
	q, kv := mul(heads, int64(m.HeadDim)), mul(int64(m.KVHeads), int64(m.HeadDim))
	norms := add(mul(5, h, d), mul(4, h))
	if d < 4 {
		norms = add(norms, mul(4, h))
	}
	var attn int64
	switch r.Attention {
	case AttentionFlash:
		attn = add(mul(add(mul(3, q), mul(2, kv)), d), mul(heads, 4))
	case AttentionExpanded:
		attn = add(mul(5, q, d), mul(heads, 4))
	default:
		attn = add(mul(4, q, d), mul(heads, int64(max(1, r.MaxLen)), d))
	}
	a := add(norms, attn, mul(4, i, d))
	extra := mul(add(h, mul(2, int64(m.HeadDim))), d)
	l := int64(m.Layers)
	return mul(tokens, add(mul(l, a), extra)), mul(tokens, add(mul(l, h, d), a, extra))
}

// logits is the largest float32 [rows, vocab] tensor of the head in a pass of tokens tokens, and
// how many of that size exist at once at the pass's peak (model.ForwardOptions.HeadMemoryBudget),
// as measured with the tensors' bytes (scripts/bench/head_peak.sh, docs/bench/grpo.md). When the
// pass's logits fit budget they are kept whole with their graph: after the forward pass the
// log-probabilities and the entropies' probabilities, and in the backward two more, the
// gradient of the log-probabilities and log_softmax's: four (3.9 measured). Beyond it the head
// runs in chunks of max(1, 64 Mi / vocab) rows (model.ForwardOptions.chunk), and a chunk's
// forward (logits, log-probabilities, probabilities and their product for the entropies; the
// logits go first) or its recompute in the backward holds three (2.9 measured).
func logits(m Model, tokens, budget int64) (bytes, copies int64) {
	v := int64(m.Vocab)
	if whole := mul(tokens, v, 4); whole <= headBudget(budget) {
		return whole, 4
	}
	rows := min(tokens, max(1, headChunkBytes/v))
	return mul(rows, v, 4), 3
}

// headBudget is the bytes of logits a pass keeps whole for Run.HeadBudget b: b, none for −1 (the
// head always in chunks), DefaultHeadBudget for 0.
func headBudget(b int64) int64 {
	switch b {
	case 0:
		return DefaultHeadBudget
	case -1:
		return 0
	}
	return b
}

// HeadBudget is the most bytes of float32 logits the plan's passes keep whole (0: the head always
// in chunks).
func (p Plan) HeadBudget() int64 { return headBudget(p.Run.HeadBudget) }
