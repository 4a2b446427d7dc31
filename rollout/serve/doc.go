// Package serve is an OpenAI-compatible chat completions endpoint over the in-process engine, with
// token-exact records of every call: how an agent program written against the OpenAI API is
// trained (env.agent) or tried against a policy by hand (`mtgrpo serve`).
//
// # Files
//
//	wire.go     the API's request and response objects, request checks, OpenAI's error body
//	server.go   routes, API keys and sessions, /v1/models, the reward route
//	chat.go     POST /v1/chat/completions: render, plan, sample, reply
//	stream.go   server-sent events (chat.completion.chunk, data: [DONE])
//	plan.go     token-exact contexts: reuse of an extended call's prompt and output ids
//	record.go   Call (what the trainer trains on) and Session (the calls of one API key)
//	pump.go     the engine's loop on the torch thread, shared by all calls in flight
//	prefix.go   PrefixCache: a backend that keeps finished calls' KV caches for the next call
//	episodes.go Agents: a batch's episodes played by agent programs (or services), trained from
//	            their recorded calls
//	service.go  agent services that call in for episodes: the offer queue and its routes
//
// # Routes
//
//	POST /v1/chat/completions  messages (system, developer, user, assistant, tool; text content
//	                           parts), tools and tool_calls in OpenAI's format (rendered with the
//	                           model's chat template, parsed back from its output), tool_choice
//	                           auto or none, temperature, top_p, max_tokens / max_completion_tokens,
//	                           stop, seed, stream (+ stream_options.include_usage), logprobs
//	                           (sampled tokens only), n = 1, usage with cached_tokens.
//	GET  /v1/models[/{id}]     the served model.
//	POST /v1/mtgrpo/reward     {"reward": r, "metrics": {...}} or {"error": "why"}: the episode's
//	                           reward, reported by the program.
//	POST /v1/mtgrpo/episodes/next, POST /v1/mtgrpo/finish
//	                           an agent service takes an episode and finishes it (service.go).
//
// What cannot be served (n > 1, top_logprobs, penalties, logit_bias, json response formats,
// tool_choice required or named, audio, images, the deprecated functions) is refused with
// OpenAI's error body {"error": {"message", "type", "param", "code"}} naming the field, and so is
// any field OpenAI does not define. Errors carry X-Should-Retry: false so that the openai clients
// do not retry a refused call.
//
// # Sessions and token-exact calls
//
// The API key identifies a session: an episode in training (Server.Open), or any client under
// Config.AnyKey (mtgrpo serve; Config.APIKey restricts it to one key). AnyKey's sessions keep
// their newest calls only, and the server the most recently used sessions, so that a long-running
// server's memory is bounded. Every completed call is a Call: the prompt ids as the engine was given them, the
// sampled ids and their log-probs, the messages and the reply. A call whose messages extend an
// earlier call's messages and reply reuses that call's prompt and output ids as they were
// (plan.go says how the rest is found), so each call trains on exactly what the model saw and
// produced; a call that rewrites history starts a new segment from its own canonical ids. With a
// PrefixCache under the engine, the extended call's KV cache is reused too.
//
// # Driving the engine
//
// Handlers never touch the engine: they queue jobs, and Server.Run, on the torch thread, submits
// them, steps the engine while any call runs (all calls of all sessions in the same batched
// steps) and hands results back. Under Config.Sampling (training, evaluation) the run's sampling
// replaces the requests' temperature, top_p and seed (the trainer recomputes log-probs at the
// run's temperature; the copies of a task in a group must not share a seed): Call.Overridden
// names what was replaced.
package serve
