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
// YAML files may use the native layout or the seed projects' keys (verl's multi-turn GRPO
// trainer, MT-GRPO, RAGEN's multi-turn PPO: algorithm.adv_estimator, multiturn_trajectory.*,
// train_cfgs.*, ...), which SeedKeys maps onto native keys. Nothing is guessed: an unknown key,
// a value of the wrong type or out of range is an Error naming the key and where it was given
// (file and line, $VARIABLE, or the flag), and Validate reports a bad value found after merging
// at the place it was last set (Origin).
//
// Files: config.go (the struct and Defaults), presets.go, yaml.go (the strict decoder),
// seed.go (the seed keys), env.go (environment variables), resolve.go (the order, Set, saved
// configs, printing), validate.go, convert.go (to grpo, env, rollout and sandbox settings).
package config
