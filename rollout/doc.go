// Package rollout turns a model, a tokenizer and environments into trajectories: a batched
// generation engine over a slot-based KV cache, and the multi-turn driver that runs episodes
// through it with condensed contexts.
//
// # Files
//
//	engine.go, step.go, sequence.go, request.go  the engine: queue, scheduling, stops, results
//	sampling.go, sampler.go   per-request sampling settings; sampling on the device
//	backend.go, mock.go       the model behind the engine (ModelBackend) and a Go-logits mock
//	static.go                 decode steps as one static step (CUDA graphs on CUDA)
//	driver.go, episode.go     the multi-turn driver and its per-episode state machine
//	history.go, condense.go, summary.go  histories, rendering, condensers
//	condense_config.go        the condenser by name and settings (a run's rollout.condenser: section)
//	trajectory.go, profile.go  what the trainer gets; where the time went
//	scripted.go               a Generator that answers from a policy function (tests)
//
// # Engine
//
// Engine runs requests (a prompt, N samples, Sampling settings) on a Backend. Each Step is one
// forward pass over every running sequence (two when one pass would pad many decoding rows to a
// long prompt's width): prompts admitted in that step are prefilled beside the decoding sequences
// (continuous batching), the samples of a request admitted together share one prefill (the
// prompt's cache is copied into their slots), and a finished sequence's slot goes to the next
// waiting sample. Sampling runs on the device, with one small device→host copy per step: the
// sampled ids, their log-probabilities and a per-row finiteness witness, so logits that are NaN or
// infinite (NaN weights, an overflow) end the step with an error naming it, never a sampled token. Result.LogProbs are under the distribution actually
// sampled (after temperature and top-k/top-p/min-p truncation, 0 for greedy tokens);
// Result.TemperedLogProbs after temperature only, what the trainer recomputes (sampler.go says
// why both). A seeded request draws the same tokens whatever else shares its batch. Sequences end
// on a stop token (kept as the last output token), a stop string (matched on the incrementally
// decoded text, across token boundaries) or the length limit. Sampling's zero value samples at
// temperature 1; greedy decoding is Greedy: true (a Temperature of 0 means 1, not greedy).
//
// A step in which every running sequence decodes one token (no prompt admitted, the usual step)
// runs as one static step on a ModelBackend: the forward pass and the sampling in one call across
// the binding from preallocated buffers (model.StaticDecoder), replayed from CUDA graphs on CUDA
// (SetCUDAGraphs, rollout.cuda_graphs). It draws what the op-by-op path draws; the engine keeps
// its running sequences in slots 0..n-1, which the static step requires.
//
// The engine runs on the torch thread:
//
//	err := torch.Run(func() error {
//		b, _ := rollout.NewModelBackend(m, 64, 4096, tok.EOSIDs()...)  // 64 slots of 4096 tokens
//		defer b.Close()
//		e, _ := rollout.NewEngine(b, tok, rollout.EngineConfig{Seed: 1})
//		out, err := e.Generate([]*rollout.Request{{Prompt: ids, N: 8,
//			Sampling: rollout.Sampling{Temperature: 1, MaxNewTokens: 512}}})
//		// out[0][i].Tokens, .LogProbs, .TemperedLogProbs, .Text, .Finish
//		return err
//	})
//
// Submit and Step drive it incrementally (Step returns the samples that finished).
//
// # Multi-turn driver (the trainer's API)
//
// Driver.Run plays episodes through a Generator (the Engine). Each episode is an explicit state
// machine (episode.go): reset → condense → generate → env → condense … → score. The Condenser
// builds c_t from the history (Full, LastN, TokenBudget, Summary); the Renderer applies the chat
// template with the environment's tool specs; the engine generates o_t; env.Step runs on a worker
// goroutine while other episodes keep generating (the driver waits on workers only when there is
// nothing to generate). Episodes end when the environment says so, after MaxTurns, or when the next
// context exceeds MaxContextTokens or the KV cache. The copies of a task in a GRPO group share
// their first request (one prefill, N samples).
//
//	err := torch.Run(func() error {
//		d, _ := rollout.NewDriver(engine, tok, rollout.DriverConfig{
//			Sampling:  rollout.Sampling{Temperature: 1, MaxNewTokens: 512},
//			Condenser: rollout.LastN{N: 2}, MaxContextTokens: 4096, Seed: step})
//		var eps []rollout.Episode
//		for g, task := range tasks {
//			for range groupSize {
//				eps = append(eps, rollout.Episode{Env: environment.New(), Task: task, Group: g})
//			}
//		}
//		trajs, prof, err := d.Run(ctx, eps)
//		for _, tr := range trajs {        // tr.Reward, tr.Score (TurnReward, Metrics), tr.Group
//			if tr.Err != nil { continue }     // End == EndError: an env or reward failure, not trainable
//			for _, turn := range tr.Turns {  // one training sample per turn
//				ids, mask := turn.Tokens(), turn.Mask()  // c_t masked, o_t trained
//				_ = turn.LogProbs                        // sampler log-probs of turn.Output
//			}
//		}
//		log(prof.Report())
//		return err
//	})
//
// An environment behind a server with a session limit (env.Environment.MaxConcurrent, an OpenEnv
// server) is run with DriverConfig.MaxOpenEpisodes set to it: episodes beyond it start as others
// finish.
//
// Every span of a turn is appended with its loss mask declared (Turn.Spans): the context span is
// never trained; the output span is trained unless it is a summary with Summary.Train unset, or
// cut by the length limit under DriverConfig.MaskTruncated. The Rubric receives per turn the
// decoded text, the environment's answer and the token counts |c_t| and |o_t|, so context-length
// rewards (1/max_t|c_t|) see the condensed contexts; summary turns are not environment turns and
// do not count towards max_t|c_t|.
package rollout
