// Package config is a run's resolved configuration: one struct (Config) whose fields are the
// YAML keys, built in one order — defaults, a preset (general, math, mt-grpo), YAML files,
// environment variables (MODEL, BATCH_SIZE, LR, ...), then flags and --set key=value — and
// printed and saved with the run.
//
//	c, err := config.Resolve(config.Sources{Preset: "math", Files: []string{"configs/x.yaml"},
//		Overrides: []config.Override{{Key: "optim.lr", Value: "2e-6", Where: "--lr"}}})
//	g, _ := c.Trainer()      // grpo.Config
//	e, _ := c.EnvConfig(log) // env.Config
//
// Every source may use the native layout or other projects' keys: Families holds one
// translation table per project (verl's ppo_trainer, TRL's GRPOConfig and verifiers,
// align-anything's multi-turn PPO, the MT-GRPO scripts, the multi-turn GRPO seed), each row a
// foreign key and the native key it sets, a value translation, or why it has no effect (a
// warning) or is refused; docs/config.md's sections are generated from them. Nothing is guessed:
// an unknown key, a value of the wrong type or out of range is an Error naming the key and where
// it was given (file and line, $VARIABLE, or the flag), every such error of every source is
// reported at once (Errors), and Validate reports a bad value found after merging at the place it
// was last set (Origin), refusing settings that cannot have their effect and warning of harmless
// ones that have none (Warnings).
//
// The trainer's sections are the trainer's own types, declared once with their YAML keys,
// defaults and checks: advantage (algo.AdvConfig), reward, loss, optim, update, dapo, critic and
// profiling (grpo's), rollout beside condenser and slots (grpo.RolloutConfig with
// rollout.Sampling inlined), rollout.condenser (rollout.CondenserConfig) and env beside name and
// python (env.Config, inlined). The trainer's defaults are grpo.Defaults, their ranges are
// checked by grpo.Config.Validate, whose KeyError this package places at the key's origin; this
// package bounds their sizes only. The rest is the program's: model, run_dir, data, train, eval,
// sft, dist, init, rollout.slots, env.name and env.python (sandbox limits in megabytes). Trainer
// fills in what a section holds as a value only: the condenser built from its section, the KV
// length's default, and greedy decoding for rollout.temperature 0.
//
// Files: config.go (the struct and Defaults), presets.go, yaml.go (the strict decoder),
// foreign.go (the tables' types and look-up), translate.go (applying foreign keys, Errors),
// values.go (value translations), verl.go, trl.go, seed.go (the families), effects.go (combined
// keys, implied settings, no-op checks, dataset rows), env.go (environment variables), resolve.go
// (the order, Set, saved configs, printing), validate.go, convert.go (the trainer's, environment's,
// rollout's and sandbox's settings from the sections).
package config
