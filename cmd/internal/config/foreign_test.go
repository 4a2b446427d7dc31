package config

import (
	"reflect"
	"strings"
	"testing"
)

// rowCases are the foreign keys whose test value is not derived from the native field's type:
// the value as the foreign project writes it, and the native value it must give.
var rowCases = map[string]struct{ in, want string }{
	"data.train_files":                                         {"['a.parquet']", "a.parquet"},
	"data.val_files":                                           {"b.parquet", "b.parquet"},
	"data_cfgs.train_datasets":                                 {"[a.jsonl]", "a.jsonl"},
	"actor_rollout_ref.actor.optim.warmup_style":               {"cosine", "cosine"},
	"actor_rollout_ref.actor.loss_agg_mode":                    {"seq-mean-token-sum", "seq-mean-token-sum"},
	"actor_rollout_ref.actor.kl_loss_type":                     {"low_var_kl", "k3"},
	"actor_rollout_ref.rollout.do_sample":                      {"false", "0"},
	"actor_rollout_ref.rollout.val_kwargs.do_sample":           {"false", "true"},
	"actor_rollout_ref.rollout.multi_turn.enable":              {"false", "1"},
	"actor_rollout_ref.rollout.multi_turn.max_assistant_turns": {"3", "3"},
	"algorithm.adv_estimator":                                  {"gae", "gae"},
	"algorithm.kl_penalty":                                     {"mse", "k2"},
	"lr_scheduler_type":                                        {"cosine", "cosine"},
	"num_train_epochs":                                         {"3.0", "3"},
	"loss_type":                                                {"dr_grpo", "seq-mean-token-sum-norm"},
	"scale_rewards":                                            {"none", "false"},
	"bf16":                                                     {"true", "bfloat16"},
	"train_cfgs.bf16":                                          {"true", "bfloat16"},
	"train_cfgs.multi_turn":                                    {"false", "1"},
	"train_cfgs.actor_lr_scheduler_type":                       {"cosine", "cosine"},
	"env_cfgs.env_name":                                        {"FrozenLake", "frozenlake"},
	"reward_manager":                                           {"gsm8k_code", "gsm8k_python"},
	"multiturn_trajectory.context_condenser.type":              {"simple", "last_n"},
	"reward_computation.type":                                  {"grpo", "inverse"},
	"reward_computation.domain":                                {"coding", "code"},
}

// caseFor is a row's test value: rowCases', else one of the native field's type that differs
// from the default (7, 0.25, the opposite boolean, a path).
func caseFor(t *testing.T, k ForeignKey) (in, want string) {
	if tc, ok := rowCases[k.Key]; ok {
		return tc.in, tc.want
	}
	f, err := fieldAt(reflectValue(Defaults()), k.natives()[0])
	if err != nil {
		t.Fatal(err)
	}
	switch f.Kind() {
	case reflect.Int, reflect.Int64, reflect.Uint64:
		return "7", "7"
	case reflect.Float64:
		return "0.25", "0.25"
	case reflect.Bool:
		v := "true"
		if f.Bool() {
			v = "false"
		}
		return v, v
	case reflect.String:
		return "some/path", "some/path"
	}
	t.Fatalf("%s: no test value for a %s", k.Key, f.Type())
	return "", ""
}

// nest writes a dotted key as nested YAML.
func nest(key, value string) []byte {
	var b strings.Builder
	parts := strings.Split(key, ".")
	for i, p := range parts {
		b.WriteString(strings.Repeat("  ", i) + p + ":")
		if i == len(parts)-1 {
			b.WriteString(" " + value)
		}
		b.WriteString("\n")
	}
	return []byte(b.String())
}

// Every row of every family sets its native key(s) to the value's meaning, in a YAML file (with
// the file's line as origin) and as key=value.
func TestFamilyRows(t *testing.T) {
	for _, f := range Families {
		t.Run(slug(f.Name), func(t *testing.T) {
			for _, k := range f.Keys {
				if k.Native == "" {
					continue
				}
				in, want := caseFor(t, k)
				for _, how := range []string{"yaml", "set"} {
					c := Defaults()
					var err error
					if how == "yaml" {
						err = c.loadYAML("f.yaml", nest(k.Key, in))
					} else {
						err = c.Set(k.Key, in, "--set")
					}
					if err != nil {
						t.Errorf("%s %s=%s: %v", how, k.Key, in, err)
						continue
					}
					for _, native := range k.natives() {
						v, _ := fieldAt(reflectValue(c), native)
						if got := fmtValue(v); got != want {
							t.Errorf("%s %s=%s: %s = %q, want %q", how, k.Key, in, native, got, want)
						}
						wantOrigin := "--set"
						if how == "yaml" {
							wantOrigin = "f.yaml:" + itoa(strings.Count(k.Key, ".")+1)
						}
						if got := c.Origin(native); got != wantOrigin {
							t.Errorf("%s %s: origin of %s %q, want %q", how, k.Key, native, got, wantOrigin)
						}
					}
				}
			}
		})
	}
}

// A key without effect here is accepted with a warning naming it and why; a refused key is an
// error with the reason.
func TestFamilyIgnoredAndRefused(t *testing.T) {
	for _, f := range Families {
		for _, k := range f.Keys {
			key := strings.TrimSuffix(k.Key, ".*")
			if k.prefixRow() {
				key += ".anything"
			}
			c := Defaults()
			err := c.Set(key, "1", "--set")
			switch {
			case k.Ignore != "":
				if err != nil || len(c.Warnings()) != 1 || !strings.Contains(c.Warnings()[0], key) ||
					!strings.Contains(c.Warnings()[0], "has no effect here: "+k.Ignore) {
					t.Errorf("%s: err %v, warnings %q", key, err, c.Warnings())
				}
			case k.Refuse != "":
				expectErr(t, key, err, "--set", key, "not supported: "+k.Refuse)
			}
		}
	}
}

// The keys that verl and TRL combine: KL switches with their coefficients, batch sizes counted in
// prompts or completions, TRL's clip pair.
func TestFamilyDerived(t *testing.T) {
	cases := []struct {
		sets  []string
		check func(c *Config) bool
		warn  string
	}{
		{[]string{"actor_rollout_ref.actor.use_kl_loss=True", "actor_rollout_ref.actor.kl_loss_coef=0.01"},
			func(c *Config) bool { return c.Loss.KLCoef == 0.01 }, ""},
		{[]string{"actor_rollout_ref.actor.kl_loss_coef=0.01", "actor_rollout_ref.actor.use_kl_loss=true"},
			func(c *Config) bool { return c.Loss.KLCoef == 0.01 }, ""},
		{[]string{"actor_rollout_ref.actor.use_kl_loss=true"}, func(c *Config) bool { return c.Loss.KLCoef == 0.001 }, ""},
		{[]string{"actor_rollout_ref.actor.use_kl_loss=false", "actor_rollout_ref.actor.kl_loss_coef=0.01"},
			func(c *Config) bool { return c.Loss.KLCoef == 0 }, "kl_loss_coef has no effect"},
		{[]string{"actor_rollout_ref.actor.kl_loss_coef=0.01"}, func(c *Config) bool { return c.Loss.KLCoef == Defaults().Loss.KLCoef },
			"without actor_rollout_ref.actor.use_kl_loss=true"},
		{[]string{"algorithm.use_kl_in_reward=true", "algorithm.kl_ctrl.kl_coef=0.05"}, func(c *Config) bool { return c.Reward.KLCoef == 0.05 }, ""},
		// 16 prompts per step in mini-batches of 4 prompts: 4 optimizer steps.
		{[]string{"data.train_batch_size=16", "actor_rollout_ref.actor.ppo_mini_batch_size=4"},
			func(c *Config) bool { return c.Rollout.Tasks == 16 && c.Update.MiniBatches == 4 }, ""},
		// 8 completions × 4 accumulation steps in groups of 4: 8 prompts per step.
		{[]string{"per_device_train_batch_size=8", "gradient_accumulation_steps=4", "num_generations=4"},
			func(c *Config) bool { return c.Rollout.Tasks == 8 && c.Rollout.Group == 4 }, ""},
		{[]string{"epsilon=0.2"}, func(c *Config) bool { return c.Loss.ClipLow == 0.2 && c.Loss.ClipHigh == 0.2 }, ""},
		{[]string{"epsilon_high=0.28", "epsilon=0.2"}, func(c *Config) bool { return c.Loss.ClipLow == 0.2 && c.Loss.ClipHigh == 0.28 }, ""},
	}
	for _, tc := range cases {
		var over []Override
		for _, s := range tc.sets {
			o, _ := ParseSet(s, "argument")
			over = append(over, o)
		}
		c, err := ResolveUnchecked(Sources{LookupEnv: noEnv, Overrides: over})
		if err != nil || !tc.check(c) {
			t.Errorf("%v: %v", tc.sets, err)
			continue
		}
		if tc.warn != "" && !strings.Contains(strings.Join(c.Warnings(), "\n"), tc.warn) {
			t.Errorf("%v: warnings %q, want one with %q", tc.sets, c.Warnings(), tc.warn)
		}
	}
	_, err := ResolveUnchecked(Sources{LookupEnv: noEnv, Overrides: []Override{
		{Key: "data.train_batch_size", Value: "10", Where: "--set"}, {Key: "actor_rollout_ref.actor.ppo_mini_batch_size", Value: "4", Where: "--set"}}})
	expectErr(t, "mini-batch not dividing", err, "ppo_mini_batch_size", "4 prompts per mini-batch do not divide the 10 prompts")
}
