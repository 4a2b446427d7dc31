package config

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/mtgrpo/mtgrpo/grpo/algo"
	"github.com/mtgrpo/mtgrpo/grpo/memplan"
	"github.com/mtgrpo/mtgrpo/model"
)

// The lora: section (model.LoRAConfig) is the policy's adapters: rank 0 means none. verl's
// actor_rollout_ref.model.lora_rank / lora_alpha / target_modules set it directly (verl's defaults
// are the section's); TRL's --use_peft switches it on with TRL's ModelConfig defaults for the
// lora_* fields it does not give.

// PolicyLoRA is the policy's adapter configuration, or nil when the whole model trains.
func (c *Config) PolicyLoRA() *model.LoRAConfig {
	if c.LoRA.Rank == 0 {
		return nil
	}
	l := c.LoRA
	return &l
}

// CriticLoRAConfig is the critic's adapter configuration, or nil when the whole critic trains.
func (c *Config) CriticLoRAConfig() *model.LoRAConfig {
	if c.CriticLoRA.Rank == 0 {
		return nil
	}
	l := c.CriticLoRA
	return &l
}

// checkSection checks a LoRA section (lora or critic_lora) when it asks for adapters, and warns
// of its keys when it does not (rank 0).
func (c *Config) checkSection(key string, l model.LoRAConfig) error {
	if l.Rank == 0 {
		for _, k := range []string{"alpha", "dropout", "target_modules", "use_rslora"} {
			if k := key + "." + k; c.explicit(k) {
				c.warn(fmt.Sprintf("%s: %s has no effect: %s.rank is 0 (no adapters; the whole model trains)", c.Origin(k), k, key))
			}
		}
		return nil
	}
	return c.place(l.Check(key))
}

// validateLoRA checks the lora: and critic_lora: sections and what adapters rule out.
func (c *Config) validateLoRA() error {
	if err := c.checkSection("critic_lora", c.CriticLoRA); err != nil {
		return err
	}
	if c.CriticLoRA.Rank > 0 && c.Advantage.Estimator != algo.EstGAE {
		c.warn(fmt.Sprintf("%s: critic_lora.rank has no effect: there is no critic with advantage.estimator %s (gae trains one)",
			c.Origin("critic_lora.rank"), c.Advantage.Estimator))
	}
	if err := c.checkSection("lora", c.LoRA); err != nil || c.LoRA.Rank == 0 {
		return err
	}
	if c.ZeROStage() == memplan.StageZeRO3 {
		return c.bad("dist.zero_stage", "3 shards the trained weights and gathers them layer by layer; with lora.rank %d (%s) "+
			"they are the adapters and the frozen base stays whole on every rank: use stage 1 or 2", c.LoRA.Rank, c.Origin("lora.rank"))
	}
	if c.Train.ExportDType != "" && c.explicit("train.export_dtype") {
		c.warn(fmt.Sprintf("%s: train.export_dtype has no effect: with lora.rank %d the run exports its adapters, in float32 "+
			"(mtgrpo export --merge --dtype writes a merged model in a dtype)", c.Origin("train.export_dtype"), c.LoRA.Rank))
	}
	return nil
}

// TRL's ModelConfig defaults for the LoRA fields (trl/trainer/model_config.py): r 16, alpha 32,
// dropout 0.05, and no target modules, for which PEFT picks the architecture's default: q_proj and
// v_proj for llama, qwen2 and qwen3 (TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING).
var trlLoRA = []struct{ key, native, def string }{
	{"lora_r", "lora.rank", "16"},
	{"lora_alpha", "lora.alpha", "32"},
	{"lora_dropout", "lora.dropout", "0.05"},
	{"lora_target_modules", "lora.target_modules", "q_proj, v_proj"},
	{"use_rslora", "lora.use_rslora", "false"},
}

// derivePEFT is TRL's use_peft with its lora_* fields: with use_peft true, each sets its native
// key (TRL's default where not given); without it, TRL trains the whole model and each given
// field is warned about by name.
func derivePEFT(c *Config, g given) error {
	use, on := g["use_peft"]
	if on && use.node.Value != "true" {
		on = false
	}
	var errs []error
	for _, k := range trlLoRA {
		v, ok := g[k.key]
		switch {
		case on && ok:
			errs = append(errs, c.Set(k.native, v.node.Value, v.where+" ("+k.key+")"))
		case on:
			errs = append(errs, c.Set(k.native, k.def, use.where+" (use_peft, TRL's default "+k.key+")"))
		case ok && !openrlhfAdapters(g):
			c.warn(fmt.Sprintf("%s: %s has no effect without use_peft=true (TRL's default is false: the whole model trains)", v.where, k.key))
		}
	}
	return joinErrors(errs)
}

// moduleList reads TRL's lora_target_modules as the text of a list: a YAML list, or one string
// (all-linear, or names separated by commas or spaces, as `--lora_target_modules "q_proj v_proj"`).
func moduleList(n *yaml.Node) (string, error) {
	var names []string
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "", nil
		}
		names = strings.FieldsFunc(n.Value, func(r rune) bool { return r == ',' || r == ' ' })
	case yaml.SequenceNode:
		for _, it := range n.Content {
			if it.Kind != yaml.ScalarNode {
				return "", fmt.Errorf("want module names, got %s", kindName(it))
			}
			names = append(names, it.Value)
		}
	default:
		return "", fmt.Errorf("want a module name or a list of them, got %s", kindName(n))
	}
	return strings.Join(names, ", "), nil
}

// ManyValued reports whether a flag of key takes several values, as HfArgumentParser's nargs="+"
// does (`--lora_target_modules q_proj v_proj`): the command line joins them with spaces.
func ManyValued(key string) bool {
	switch key {
	case "lora_target_modules", "target_modules", "eps_clip_low_high", "adam_betas", "dynamic_filtering_reward_range", "reward_clip_range":
		return true
	}
	return false
}
