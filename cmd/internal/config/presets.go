package config

import (
	"fmt"
	"sort"
	"strings"

	"github.com/mtgrpo/mtgrpo/grpo/algo"
	"github.com/mtgrpo/mtgrpo/rollout"
)

// Preset names.
const (
	PresetGeneral = "general"
	PresetMath    = "math"
	PresetMTGRPO  = "mt-grpo"
)

// presets are the starting points a run picks before its YAML, variables and flags apply. They
// follow the seed projects' shipped configurations: the multi-turn GRPO trainer's base and math
// configs, and MT-GRPO's tool-use setup.
var presets = map[string]struct {
	summary string
	apply   func(*Config)
}{
	PresetGeneral: {"multi-turn GRPO with condensed contexts (task + last 2 steps), 4 trajectories per task, 5 turns, 2048-token contexts",
		func(c *Config) {
			c.Advantage.Estimator = algo.EstMultiTurnGRPO
			c.Rollout.GroupSize, c.Rollout.MaxTurns, c.Rollout.MaxContextTokens = 4, 5, 2048
			c.Rollout.Condenser = rollout.CondenserConfig{Type: rollout.CondenseLastN, KeepLastN: 2}
		}},
	PresetMath: {"the seed's multi-turn math setup: GSM8K-format problems with the python tool (gsm8k_python), up to 7 turns, " +
		"each turn's context the task and the last 3 steps (4096 tokens), 6 trajectories per task, temperature 0.3, top-p 0.95",
		func(c *Config) {
			c.Advantage.Estimator = algo.EstMultiTurnGRPO
			c.Env.Name, c.Env.MaxTurns = "gsm8k_python", 7
			c.Rollout.GroupSize, c.Rollout.MaxTurns, c.Rollout.MaxContextTokens = 6, 7, 4096
			c.Rollout.Sampling.Temperature, c.Rollout.Sampling.TopP, c.Rollout.Sampling.MaxNewTokens = 0.3, 0.95, 1024
			c.Rollout.Condenser = rollout.CondenserConfig{Type: rollout.CondenseLastN, KeepLastN: 3}
		}},
	PresetMTGRPO: {"MT-GRPO turn-level credit on tool use (wiki_qa search tool), 8 trajectories per task, full history, 4 turns",
		func(c *Config) {
			c.Advantage.Estimator, c.Advantage.TurnCoef = algo.EstMTGRPO, 1
			c.Env.Name = "wiki_qa"
			c.Rollout.GroupSize, c.Rollout.MaxTurns, c.Rollout.MaxContextTokens = 8, 4, 4096
			c.Rollout.Condenser = rollout.CondenserConfig{Type: rollout.CondenseFull}
		}},
}

// PresetNames lists the presets, sorted.
func PresetNames() []string {
	var out []string
	for k := range presets {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// PresetSummary is a preset's one-line description ("" for an unknown name).
func PresetSummary(name string) string { return presets[name].summary }

// applyPreset applies a preset to c ("" means general).
func applyPreset(c *Config, name string) error {
	if name == "" {
		name = PresetGeneral
	}
	p, ok := presets[name]
	if !ok {
		return fmt.Errorf("unknown preset %q (%s)", name, strings.Join(PresetNames(), ", "))
	}
	p.apply(c)
	c.Preset = name
	return nil
}
