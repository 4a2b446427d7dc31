// Package extreward computes rewards outside the process: a program that reads one trajectory as
// JSON on stdin and prints its scores (type command), or an HTTP endpoint that answers a POST of
// the same JSON (type http). Users keep the reward functions they wrote in Python for verl or TRL.
//
//	r, err := extreward.New(extreward.Config{Type: extreward.Command,
//		Command: []string{"python3", "reward.py"}, Timeout: 10 * time.Second, Concurrency: 8})
//	environment = r.Apply(environment)  // its episodes are scored by reward.py
//
// What is sent is env.TrajectoryRecord: the conversation (messages with tool calls), turn
// boundaries, token counts, the ground truth and the task's extra_info; the run directory's
// trajectory samples have the same shape. The answer is a bare number or
// {"reward": 1.0, "turn_rewards": [..one per turn..], "metrics": {"name": 0.5}}; docs/rewards.md
// has the full shape and copy-paste examples.
//
// Every call is bounded: Timeout per program run or POST (the program's whole process group is
// killed), Concurrency calls at once, a megabyte of answer. An HTTP POST that got no answer (a
// connection error, a 5xx, a timeout) is tried Retries more times; nothing else is retried. An
// error names the function, the trajectory (task and episode) and the field of the answer at
// fault, and the rollout marks that episode as failed rather than training on a made-up reward.
//
// Batching: ScoreBatch scores a list of trajectories Concurrency calls at a time. Over HTTP with
// BatchSize > 1 the body is a JSON array of records and the answer an array of answers in the
// same order; the Score calls the rollout makes as episodes finish are gathered into such
// batches when they arrive within BatchWait of each other.
//
// Apply puts the function on an environment: by default (Combine: replace) it is the trajectory
// reward and the environment's own functions are only reported; with add it is summed with them.
package extreward
