package memplan

// The activations a training pass keeps for its backward are an estimate: what autograd saves for
// one decoder layer of the llama family (Llama, Qwen2, Qwen3 alike), per token, in elements of the
// weights' dtype, with q = heads·head_dim, kv = kv_heads·head_dim, h = hidden, i = intermediate:
//
//	input_layernorm          its input and output                         2h
//	q, k, v projections      their outputs, and again after q/k norm+RoPE 2(q + 2kv)
//	attention                its output (o_proj's input)                   q
//	post_attention_layernorm its input and output                          2h
//	MLP                      gate, up, silu(gate), silu(gate)·up           4i
//
// A = 4h + 3q + 4kv + 4i per token and layer (the RMSNorms' float32 inverse norms, SDPA's
// log-sum-exp and the residual adds are left out: a few elements per token). Flash or
// memory-efficient attention keeps no [T, T] scores; the CPU's math attention does, briefly.
//
// For a pass of T tokens (update.micro_tokens): without checkpointing every layer keeps A, so
// T·d·(L·A + 2h) with the embedding's output and the final norm's input; with layer-wise
// checkpointing (model.ForwardOptions.Checkpoint) each layer keeps only its input, h, and one
// layer at a time is recomputed: T·d·(L·h + A + 2h).
func activations(m Model, d, tokens int64) (plain, ckpt int64) {
	h, i := int64(m.Hidden), int64(m.Intermediate)
	q, kv := mul(int64(m.Heads), int64(m.HeadDim)), mul(int64(m.KVHeads), int64(m.HeadDim))
	a := add(mul(4, h), mul(3, q), mul(4, kv), mul(4, i))
	l := int64(m.Layers)
	return mul(tokens, d, add(mul(l, a), mul(2, h))), mul(tokens, d, add(mul(l, h), a, mul(2, h)))
}

// logits is the largest float32 [rows, vocab] tensor of the head in a pass of tokens tokens, and
// how many exist at once in its backward (model.ForwardOptions.HeadMemoryBudget): when the pass's
// logits fit budget they are kept whole (three of them briefly in the backward: the
// log-probabilities, their gradient and the softmax); beyond it the head is recomputed in chunks
// of max(1, 64 Mi / vocab) rows (model.ForwardOptions.chunk), three of them at once likewise.
func logits(m Model, tokens, budget int64) (bytes, copies int64) {
	if budget == 0 {
		budget = DefaultHeadBudget
	}
	v := int64(m.Vocab)
	if whole := mul(tokens, v, 4); budget > 0 && whole <= budget {
		return whole, 3
	}
	rows := min(tokens, max(1, headChunkBytes/v))
	return mul(rows, v, 4), 3
}
