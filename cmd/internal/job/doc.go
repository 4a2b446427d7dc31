// Package job runs what `mtgrpo train`, `eval` and `demo` do, from a resolved configuration
// (package config): it opens the run directory, the environment (with its MCP, OpenEnv and
// external reward parts), the tasks, the models and the trainer, then runs
//
//	eval (step 0) → SFT steps on the environment's demonstrations → boundary checkpoint →
//	RL steps (rollout, update, metrics, samples; eval every N; checkpoint every N) →
//	final checkpoint → exported model (RUN/model) → report page → summary
//
// A run's steps are numbered across both phases: steps 1..sft.steps are SFT steps (sft/*
// metrics), the RL steps follow. A checkpoint (checkpoint.go) holds the policy as a model
// directory, the trainer's State (optimizer moments and master weights, the critic), and the
// position: steps done, phase, trainer Progress and the data position. The trainer's randomness
// depends only on the seed and its step count, the tasks on the data position, and the
// demonstrations are scripted, so a run resumed from any checkpoint continues exactly as if it
// had never stopped (on the CPU, bit for bit: the CLI's kill-and-resume test).
//
// A signal on Options.Stop ends the run after the current step with a checkpoint (StoppedError).
// Everything here runs on the torch thread.
package job
