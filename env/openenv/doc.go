// Package openenv runs environments served over OpenEnv's protocol (meta-pytorch/OpenEnv) as
// mtgrpo environments: `env: openenv` with the servers' base URLs.
//
//	environment, err := openenv.Open(openenv.Config{URLs: []string{"http://127.0.0.1:8000"},
//		MaxSessions: 8, ActionField: "message", ObservationField: "prompt"})
//	// rollout.DriverConfig{MaxOpenEpisodes: environment.MaxConcurrent, …}
//
// The wire format matched is that of OpenEnv's server and client at commit 685de411 (May 2026):
// src/openenv/core/env_server/http_server.py (routes /reset, /step, /ws and the WebSocket
// message loop), src/openenv/core/env_server/types.py (ResetRequest, StepRequest, StepResponse,
// WSResetMessage, WSStepMessage, WSErrorResponse, error codes), serialization.py
// (serialize_observation: observation fields without reward, done and metadata) and
// src/openenv/core/env_client.py (one WebSocket per client, {"type": "close"} on disconnect).
// wire.go spells it out.
//
// Transports. Current OpenEnv servers create a fresh environment for every plain HTTP /reset or
// /step request; state lives only in a WebSocket session (GET /ws), one environment per
// connection, at most max_concurrent_envs at once (then an error message with code
// CAPACITY_REACHED). So the default transport, websocket, opens one session per episode, and
// Config.MaxSessions (the server's max_concurrent_envs) times the URLs bounds the episodes open
// at once. The http transport posts /reset and /step to servers that keep one environment per
// process (OpenEnv's first releases, and servers written that way): a pool of URLs, one episode
// per URL at a time.
//
// An episode's session ends with the goodbye, then a wait (at most closeWait) for the server to
// close the connection, which OpenEnv's server does after it has released the session: when
// Close (or the last Step) returns, the session is free on the server unless the server took
// longer than that, and the next episode's reset is not refused at capacity (session.go says
// why closing from this side would not do).
//
// An episode: Reset takes a free session (waiting at most SlotWait), resets with the task's seed
// and an episode_id; the opening messages are the system prompt, the task's prompt and the reset
// observation as a user message. Each Step sends {ActionField: the model's message} (what
// follows a closing </think>) and turns the answer into the next user (or tool) message, the
// step's reward into the turn's reward (TurnInfo.Reward) and done into the end of the episode;
// MaxTurns ends it otherwise. The trajectory reward is the final step's reward or the sum of
// them (Config.Reward); an external reward function (package env/extreward) can replace it.
//
// Failures never hang a run: every request has RequestTimeout; a reset that failed without an
// answer, with a 5xx or because the server was at capacity is retried on a new session, Retries
// times with a doubling pause; a step is never retried (the server's state after it is unknown):
// a slow, failing, malformed or dropped step is an error naming the task, the step and the
// server, which ends that episode as failed while the others go on.
//
// The tests run testdata/server.py (Python standard library only), an OpenEnv-compatible word
// guessing server with flags that make it slow, fail, answer malformed JSON or drop connections.
// docs/openenv.md has the YAML form.
package openenv
