// Package rollout turns a model, a tokenizer and environments into trajectories: a batched
// generation engine over a slot-based KV cache, and the multi-turn driver that runs episodes
// through it with condensed contexts.
//
// # Engine
//
// Engine runs requests (a prompt, N samples, Sampling settings) on a Backend (ModelBackend wraps
// model.Model and its KV cache; MockModel computes logits in Go for tests). Each Step is one
// forward pass over every running sequence; prompts admitted in that step are prefilled in the
// same pass (continuous batching), the N samples of a request share one prefill (the prompt's
// cache is copied into their slots), and a finished sequence's slot goes to the next waiting
// sample. Sampling runs on the device with one small device→host copy per step: the sampled ids
// and their log-probabilities (see sampler.go for which distributions). The engine is driven from
// the torch thread:
//
//	b, _ := rollout.NewModelBackend(m, 64, 4096, tok.EOSIDs()...)
//	e, _ := rollout.NewEngine(b, tok, rollout.Config{Seed: 1})
//	out, _ := e.Generate([]*rollout.Request{{Prompt: ids, N: 8,
//		Sampling: rollout.Sampling{Temperature: 1, MaxNewTokens: 512}}})
//	// out[0][i].Tokens, .LogProbs, .Text, .Finish
package rollout
