// Package config is a run's resolved configuration: one struct (Config) whose fields are the
// YAML keys, built in one order — defaults, a preset (general, math, mt-grpo), YAML files,
// environment variables (MODEL, BATCH_SIZE, LR, ...), then flags and --set key=value — and
// printed and saved with the run.
//
//	c, err := config.Resolve(config.Sources{Preset: "math", Files: []string{"configs/x.yaml"},
//		Overrides: []config.Override{{Key: "optim.lr", Value: "2e-6", Where: "--lr"}}})
//	g, _ := c.Trainer()      // grpo.Config
//	e := c.EnvConfig(log)    // env.Config
//
// Every source may use the native layout or other projects' keys: Families holds one
// translation table per project (verl's ppo_trainer, TRL's GRPOConfig and verifiers,
// OpenRLHF's train_ppo_ray, align-anything's multi-turn PPO, the MT-GRPO scripts, the multi-turn GRPO seed), each row a
// foreign key and the native key it sets, a value translation, or why it has no effect (a
// warning) or is refused; docs/config.md's sections are generated from them. Nothing is guessed:
// an unknown key, a value of the wrong type or out of range is an Error naming the key and where
// it was given (file and line, $VARIABLE, or the flag), every such error of every source is
// reported at once (Errors), and Validate reports a bad value found after merging at the place it
// was last set (Origin), refusing settings that cannot have their effect and warning of harmless
// ones that have none (Warnings).
//
// The sections are their packages' own types, declared once with their YAML keys, defaults and
// checks: advantage (algo.AdvConfig), reward, loss, optim, update, dapo, critic, profiling, sft
// (grpo.SFTConfig) and eval (grpo.EvalConfig, beside eval.before) are grpo's; rollout is
// grpo.RolloutConfig with rollout.Sampling inlined, beside the condenser's section
// (rollout.CondenserConfig) and slots; env is env.Config inlined beside name, python
// (sandbox.Settings, in megabytes) and agent (agent.Config); init is modelinit.Spec. Named values
// (estimators, schedules, condensers, guarantees) decode themselves (encoding.TextUnmarshaler).
// Each key's range is declared once, in its owner's Validate (grpo.Config.Validate, ValidateSFT,
// EvalConfig.Validate, rollout's, env's, the sandbox's), whose setting.KeyError this package
// places at the key's origin; the trainer's rules (bi-level GAE needs a critic, the warm-up's
// schedule over its steps) live there too. The rest is the program's: model, run_dir, data,
// train, dist, rollout.slots, eval.before and env.name. Trainer fills in what a section holds as
// a value only: the condenser built from its section and greedy decoding for rollout.temperature
// 0.
//
// Files: config.go (the struct and Defaults), presets.go, yaml.go (the strict decoder),
// foreign.go (the tables' types and look-up), translate.go (applying foreign keys, Errors),
// values.go (value translations), verl.go, verl_derive.go, verl_machinery.go, trl.go,
// trl_args.go, openrlhf.go, seed.go (the families; keys shared by TRL and OpenRLHF are one row
// in both, a key with two meanings in two families panics at start-up), effects.go
// (combined keys, implied settings, warnings of settings without effect, dataset rows), env.go
// (environment variables), resolve.go (the order, Set, saved configs, printing), validate.go,
// numbers.go (finite values as read), convert.go (the trainer's, environment's, rollout's and
// sandbox's settings from the sections).
package config
