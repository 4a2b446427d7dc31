package config

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mtgrpo/mtgrpo/model"
)

// The lora: section from each dialect: native keys; verl's model keys (its defaults: alpha 16,
// all-linear); TRL's use_peft with its ModelConfig defaults (r 16, alpha 32, dropout 0.05, PEFT's
// q_proj and v_proj) and its lora_* fields. Keys that cannot act are warned about by name, bad
// values refused by key.
func TestLoRASection(t *testing.T) {
	set := func(k, v string) Override { return Override{Key: k, Value: v, Where: "--" + k} }
	resolve := func(over ...Override) (*Config, error) {
		return Resolve(Sources{LookupEnv: noEnv, Overrides: append(append([]Override{}, withModel...), over...)})
	}
	for _, c := range []struct {
		name string
		over []Override
		want *model.LoRAConfig
	}{
		{"default", nil, nil},
		{"native", []Override{set("lora.rank", "8"), set("lora.target_modules", "[q_proj, down_proj]"), set("lora.use_rslora", "true")},
			&model.LoRAConfig{Rank: 8, Alpha: 16, TargetModules: model.Modules{"q_proj", "down_proj"}, RSLoRA: true}},
		{"verl", []Override{set("actor_rollout_ref.model.lora_rank", "32"), set("actor_rollout_ref.model.lora_alpha", "64")},
			&model.LoRAConfig{Rank: 32, Alpha: 64, TargetModules: model.Modules{model.AllLinear}}},
		{"verl rank 0", []Override{set("actor_rollout_ref.model.lora_rank", "0"), set("actor_rollout_ref.model.target_modules", "all-linear")}, nil},
		{"verl module string", []Override{set("actor_rollout_ref.model.lora_rank", "4"), set("actor_rollout_ref.model.target_modules", "q_proj,v_proj")},
			&model.LoRAConfig{Rank: 4, Alpha: 16, TargetModules: model.Modules{"q_proj", "v_proj"}}},
		{"trl defaults", []Override{set("use_peft", "true")},
			&model.LoRAConfig{Rank: 16, Alpha: 32, Dropout: 0.05, TargetModules: model.Modules{"q_proj", "v_proj"}}},
		{"trl fields", []Override{set("use_peft", "true"), set("lora_r", "8"), set("lora_alpha", "16"), set("lora_dropout", "0"),
			set("lora_target_modules", "all-linear"), set("use_rslora", "true")},
			&model.LoRAConfig{Rank: 8, Alpha: 16, TargetModules: model.Modules{model.AllLinear}, RSLoRA: true}},
		{"trl module list", []Override{set("use_peft", "true"), set("lora_target_modules", "q_proj k_proj")},
			&model.LoRAConfig{Rank: 16, Alpha: 32, Dropout: 0.05, TargetModules: model.Modules{"q_proj", "k_proj"}}},
		{"trl without use_peft", []Override{set("lora_r", "8")}, nil},
	} {
		cfg, err := resolve(c.over...)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if got := cfg.PolicyLoRA(); fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
	// verl's critic has its own adapters, off by default whatever the actor's.
	cfg, err := resolve(set("actor_rollout_ref.model.lora_rank", "8"), set("algorithm.adv_estimator", "gae"),
		set("critic.model.lora_rank", "4"), set("critic.model.target_modules", "[q_proj, v_proj]"))
	if err != nil || cfg.CriticLoRAConfig() == nil || cfg.CriticLoRAConfig().Rank != 4 || len(cfg.CriticLoRA.TargetModules) != 2 {
		t.Errorf("critic adapters: %v %+v", err, cfg.CriticLoRA)
	}
	if cfg, _ := resolve(set("actor_rollout_ref.model.lora_rank", "8"), set("algorithm.adv_estimator", "gae")); cfg.CriticLoRAConfig() != nil {
		t.Errorf("the actor's adapters gave the critic adapters")
	}
	// The origin of a TRL default names use_peft.
	cfg, _ = resolve(set("use_peft", "true"), set("lora_r", "8"))
	if o := cfg.Origin("lora.alpha"); !strings.Contains(o, "use_peft") || !strings.Contains(cfg.Origin("lora.rank"), "lora_r") {
		t.Errorf("origins: lora.alpha %q, lora.rank %q", o, cfg.Origin("lora.rank"))
	}
	for _, c := range []struct {
		name string
		over []Override
		warn string
	}{
		{"alpha without a rank", []Override{set("lora.alpha", "32")}, "lora.alpha has no effect: lora.rank is 0"},
		{"verl alpha without a rank", []Override{set("actor_rollout_ref.model.lora_alpha", "32")}, "lora.alpha has no effect: lora.rank is 0"},
		{"trl field without use_peft", []Override{set("lora_dropout", "0.1")}, "--lora_dropout: lora_dropout has no effect without use_peft=true"},
		{"trl use_peft false", []Override{set("use_peft", "false"), set("lora_r", "8")}, "lora_r has no effect without use_peft=true"},
		{"export dtype", []Override{set("lora.rank", "8"), set("train.export_dtype", "bfloat16")}, "train.export_dtype has no effect"},
		{"critic adapters without a critic", []Override{set("critic.model.lora_rank", "8"), set("algorithm.adv_estimator", "grpo")}, "critic_lora.rank has no effect: there is no critic"},
		{"critic alpha without a rank", []Override{set("critic.model.lora_alpha", "8")}, "critic_lora.alpha has no effect: critic_lora.rank is 0"},
	} {
		cfg, err := resolve(c.over...)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !slices.ContainsFunc(cfg.Warnings(), func(w string) bool { return strings.Contains(w, c.warn) }) {
			t.Errorf("%s: warnings %q, want one saying %q", c.name, cfg.Warnings(), c.warn)
		}
	}
	for _, c := range []struct {
		name  string
		over  []Override
		parts []string
	}{
		{"negative rank", []Override{set("lora.rank", "-1")}, []string{"lora.rank", "--lora.rank", "-1: must be at least 1"}},
		{"zero alpha", []Override{set("actor_rollout_ref.model.lora_rank", "8"), set("actor_rollout_ref.model.lora_alpha", "0")},
			[]string{"lora.alpha", "--actor_rollout_ref.model.lora_alpha"}},
		{"head target", []Override{set("lora.rank", "8"), set("lora.target_modules", "lm_head")}, []string{"lora.target_modules", `"lm_head"`}},
		{"dropout 1", []Override{set("use_peft", "true"), set("lora_dropout", "1")}, []string{"lora.dropout", "lora_dropout", "[0, 1)"}},
		{"critic dropout", []Override{set("algorithm.adv_estimator", "gae"), set("critic_lora.rank", "4"), set("critic_lora.dropout", "-0.1")},
			[]string{"critic_lora.dropout", "--critic_lora.dropout", "[0, 1)"}},
		{"dora", []Override{set("use_peft", "true"), set("use_dora", "true")}, []string{"use_dora", "DoRA is not supported"}},
		{"zero-3", []Override{set("lora.rank", "8"), set("dist.zero_stage", "3"), set("update.gradient_checkpointing", "true")},
			[]string{"dist.zero_stage", "use stage 1 or 2"}},
		{"excluded modules", []Override{set("actor_rollout_ref.model.exclude_modules", "[o_proj]")}, []string{"exclude_modules"}},
	} {
		_, err := resolve(c.over...)
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		for _, p := range c.parts {
			if !strings.Contains(err.Error(), p) {
				t.Errorf("%s: error %q does not say %q", c.name, err, p)
			}
		}
	}
}
