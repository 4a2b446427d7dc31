// Package model is the Llama 3.x, Qwen2 / Qwen2.5 and Qwen3 decoder in Go over package torch: the
// Hugging Face config and checkpoint formats, the forward pass for training (chunked log-probs and
// entropies, optional layer-wise gradient checkpointing) and for generation (a slot-based KV cache),
// and export back to a directory transformers loads. It knows nothing of RL.
//
// # Files
//
//	config.go, generation.go   config.json / generation_config.json (HF names; refusals by field)
//	llama.go, qwen2.go, qwen3.go  one file per architecture: its layer, attention and weight table
//	layers.go, attention.go, rope.go  the shared leaves: Linear, RMSNorm, MLP, RoPE, attention
//	model.go                   Model, the full weight table, Parameters
//	batch.go, forward.go       padded / packed batches; Hidden, Logits, LogProbs
//	train.go                   Train / Pass.Backward: kept or recomputed head, gradient checkpointing
//	kvcache.go, generate.go    KVCache (slots), Extend / Prefill / Decode, Fork
//	fused.go, static.go        q/k/v and gate/up laid out back to back; StaticDecoder, the decode
//	                           step in one call (CUDA graphs on CUDA)
//	load.go, export.go, init.go, presets.go  HF directories in and out, random init, presets
//	lora.go                    LoRA adapters on the linear layers: PEFT's init, scale and names
//	peft.go, fingerprint.go    PEFT adapter directories in and out; a base model's fingerprint
//
// # Architectures
//
// Qwen2 is Llama plus a bias on q, k and v; Qwen3 is Llama plus RMSNorms on q and k (per head,
// before RoPE) and a head_dim of its own. These differences are written out in each file rather
// than switched by flags; only the leaf layers are shared. RoPE uses HF's rotate-half convention,
// with llama3 frequency scaling when config.json asks for it; yarn, dynamic and other RoPE types,
// sliding-window attention and activations other than SiLU are refused with an error naming the
// field.
//
// # Threads, lifetime, errors
//
// Everything that touches tensors runs on the torch thread (inside torch.Run). A Model owns its
// weights in a long-lived scope (Close frees them), a KVCache its buffers; the tensors a call returns
// belong to the caller's current scope. Bad input (config fields, checkpoint tensors, token ids,
// slots) is an error naming what is wrong; torch failures come back as errors, never as panics.
//
// # Training (the trainer's API)
//
//	b, _ := model.NewBatch(seqs, packed)                  // per-token tensors are [rows, cols]
//	b.ScoreFrom = promptLens                               // optional: no head work on prompts
//	m.SetTrainable(true)
//	p, _ := m.Train(b, model.ForwardOptions{Temperature: T, Entropy: true, Checkpoint: true})
//	loss := f(p.LogProbs, p.Entropy, b.Tensor(mask), ...)  // any scalar built from them
//	p.Backward(loss)                                       // fills every weight's .grad
//	old, _ := m.LogProbs(b, opts)                          // no-grad scoring (old / reference policy)
//
// LogProbs[r, c] is log p(token | earlier tokens of its sequence) at the token's own position (0 at
// each sequence's first token, before ScoreFrom, and at padding), after dividing the logits by the
// temperature. ForwardOptions.HeadMemoryBudget (default 1 GiB of float32 logits) decides how Train
// handles the vocabulary-sized head: under the budget it is computed once and its graph kept, like
// plain autograd; above it, it runs ChunkTokens rows at a time in the forward pass and again, chunk
// by chunk, in the backward pass, so [tokens, vocab] float32 logits never exist for the whole batch;
// the entropy comes from the same chunks (TestChunkedHeadMatchesKept: both ways agree to 1e-6 in
// float32 over padded, packed and shared-prefix batches).
// The embedding row of config.json's pad_token_id gets no gradient from the lookup, as in
// transformers.
// ForwardOptions.Hidden adds the final hidden states (with gradients in Train) for a value head;
// HiddenOnly then skips the head altogether (a critic's passes).
// Batch.Tensor and Batch.Values move per-token Go values (masks, advantages) in and out of the layout.
//
// # Generation (the rollout engine's API)
//
//	c, _ := m.NewKVCache(slots, maxLen)  // [slots, kv_heads, max_len + 1 (scratch), head_dim] per layer
//	logits, _ := m.Prefill(c, []int{0}, [][]int32{prompt})  // float32 [1, vocab]
//	c.Fork(0, 1, 2, 3)                                       // a GRPO group shares the prompt
//	logits, _ = m.Decode(c, []int{0, 1, 2, 3}, next)         // one token per slot
//	logits, _ = m.Extend(c, []int{4, 1}, [][]int32{newPrompt, {tok}})  // mixed prefill + decode
//	c.Reset(2)                                               // slot free for the next request
//
// # LoRA
//
//	m.AddAdapters(model.LoRAConfig{Rank: 16, Alpha: 32, TargetModules: []string{model.AllLinear}}, seed)
//	m.Parameters()                        // now the adapters only: lora_A / lora_B, float32
//	m.WithoutAdapters(func() { ... })     // the base model (the KL reference), no second copy
//	m.MergeAdapters()                     // W ← W + scale·B·A, for a merged export
//	m.SaveAdapters(dir, base)             // PEFT's adapter_config.json + adapter_model.safetensors
//	a, _ := model.ReadAdapter(dir); m.LoadAdapters(a)   // ours or PEFT's, checked tensor by tensor
//
// Every Linear carries its adapter (Linear.LoRA) and applies it unmerged, so training, scoring and
// generation (Prefill, Decode, Extend) all run the same adapted forward. The base weights stay
// frozen in their dtype. Dropout, when set, applies in Train only; its masks come from the pass's
// seed, so a layer recomputed by gradient checkpointing draws the forward's masks. Export refuses
// a model with adapters (its base weights alone would lose them). An adapter directory names its
// base model and, when this program wrote it, the base's Fingerprint (sampled weight bytes), so
// that an adapter is not applied to other weights by mistake.
//
// Slots are indices the engine manages; each has its own length, and a step may mix slots of any
// lengths and any number of new tokens. Generation multiplies q, k and v (and gate and up) as one
// product each, over weights laid out back to back that remain the parameters (fused.go).
//
//	s, _ := m.NewStaticDecoder(c)               // once per cache; s.Graphs: CUDA graphs (CUDA default)
//	s.Step(tokens, params, mode, out)            // slots 0..n-1 decode one token and sample on the device
//
// The static step computes what Decode and the rollout sampler compute, in one call across the
// binding from preallocated buffers, without host synchronisation until its sampled ids are
// copied back; on CUDA it is captured as graphs per (rows bucket, key-positions bucket, sampling
// mode) and replayed.
package model
