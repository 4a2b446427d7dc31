package config

import (
	"errors"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/mtgrpo/mtgrpo/env/data"
	"github.com/mtgrpo/mtgrpo/grpo/algo"
	"github.com/mtgrpo/mtgrpo/rollout"
)

// rowCases are the foreign keys whose test value is not derived from the native field's type:
// the value as the foreign project writes it, and the native value it must give.
var rowCases = map[string]struct{ in, want string }{
	"fsdp":                          {"shard_grad_op auto_wrap", "2"},
	"deepspeed":                     {"testdata/ds_zero2.json", "2"},
	"data.train_files":              {"['a.parquet', 'b.parquet']", "a.parquet, b.parquet"},
	"data.val_files":                {"b.parquet", "b.parquet"},
	"prompt_data":                   {"a.parquet", "a.parquet"},
	"eval_dataset":                  {"b.jsonl", "b.jsonl"},
	"importance_sampling_level":     {"sequence", "gspo"},
	"max_tool_calling_iterations":   {"7", "8"},
	"chat_template_kwargs":          {"{enable_thinking: false}", "map[enable_thinking:false]"},
	"advantage_estimator":           {"group_norm", "grpo"},
	"policy_loss_type":              {"gspo", "gspo"},
	"no_advantage_std_norm":         {"true", "false"},
	"enable_vllm_is_correction":     {"true", "token_truncate"},
	"fp16":                          {"true", "float16"},
	"model_init_kwargs.torch_dtype": {"bf16", "bfloat16"},
	"model_init_kwargs.dtype":       {"float32", "float32"},
	"torch_dtype":                   {"bfloat16", "bfloat16"},
	"ddp_timeout":                   {"7", "7s"},
	"save_steps":                    {"-1", "0"},
	"eval_steps":                    {"-1", "0"},
	"freezing_actor_steps":          {"7", "7"},
	"data_cfgs.train_datasets":      {"[a.jsonl]", "a.jsonl"},
	"data_cfgs.eval_datasets":       {"[a.jsonl, b.jsonl]", "a.jsonl, b.jsonl"},
	"actor_rollout_ref.actor.optim.warmup_style":               {"cosine", "cosine"},
	"actor_rollout_ref.actor.optim.lr_scheduler_type":          {"cosine", "cosine"},
	"actor_rollout_ref.actor.optim.lr_decay_style":             {"cosine", "cosine"},
	"actor_rollout_ref.actor.policy_loss.loss_mode":            {"gspo", "gspo"},
	"actor_rollout_ref.model.torch_dtype":                      {"bf16", "bfloat16"},
	"actor_rollout_ref.actor.loss_agg_mode":                    {"seq-mean-token-sum", "seq-mean-token-sum"},
	"actor_rollout_ref.actor.kl_loss_type":                     {"low_var_kl", "k3"},
	"actor_rollout_ref.rollout.do_sample":                      {"false", "0"},
	"actor_rollout_ref.rollout.val_kwargs.do_sample":           {"false", "true"},
	"actor_rollout_ref.rollout.enforce_eager":                  {"true", "false"},
	"actor_rollout_ref.rollout.multi_turn.enable":              {"false", "1"},
	"actor_rollout_ref.rollout.multi_turn.max_assistant_turns": {"3", "3"},
	"algorithm.adv_estimator":                                  {"gae", "gae"},
	"actor_rollout_ref.model.target_modules":                   {"[q_proj, up_proj]", "[q_proj up_proj]"},
	"critic.model.target_modules":                              {"all-linear", "[all-linear]"},
	"algorithm.kl_penalty":                                     {"mse", "k2"},
	"lr_scheduler_type":                                        {"cosine", "cosine"},
	"num_train_epochs":                                         {"3.0", "3"},
	"loss_type":                                                {"dr_grpo", "seq-mean-token-sum-norm"},
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
			func(c *Config) bool { return c.Rollout.Tasks == 8 && c.Rollout.GroupSize == 4 }, ""},
		{[]string{"scale_rewards=batch"}, func(c *Config) bool { return c.Advantage.NormStd && c.Advantage.StdOver == algo.StdBatch }, ""},
		{[]string{"scale_rewards=False"}, func(c *Config) bool { return !c.Advantage.NormStd && c.Advantage.StdOver == algo.StdGroup }, ""},
		{[]string{"scale_rewards=group"}, func(c *Config) bool { return c.Advantage.NormStd && c.Advantage.StdOver == algo.StdGroup }, ""},
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

// Every bad key of every source is reported in one error, each line with its origin: several in
// one file, a variable and flags.
func TestAllErrorsAtOnce(t *testing.T) {
	f := writeYAML(t, "rollout:\n  temprature: 0.7\n  tasks: many\ntrainer:\n  total_epoch: 2\ndata:\n  train_file: x\n")
	_, err := Resolve(Sources{Files: []string{f}, LookupEnv: envOf(map[string]string{"LR": "fast"}),
		Overrides: []Override{{Key: "model", Value: "m", Where: "--model"}, {Key: "actor.optim.lr", Value: "1e-6", Where: "argument"},
			{Key: "train_cfgs.bogus", Value: "1", Where: "--train_cfgs.bogus"}}})
	expectErr(t, "several bad keys", err, "7 configuration errors:",
		f+":2: unknown key rollout.temprature under rollout (did you mean rollout.temperature?)",
		f+`:3: rollout.tasks: want an integer, got "many"`,
		f+":5: unknown key trainer.total_epoch (did you mean trainer.total_epochs, verl's key for train.epochs?)",
		f+":7: unknown key data.train_file under data (did you mean data.train_files, verl's key for data.train?)",
		`$LR: optim.lr: want a number, got "fast"`,
		"argument: unknown key actor.optim.lr (did you mean actor_rollout_ref.actor.optim.lr, verl's key for optim.lr?)",
		"--train_cfgs.bogus: unknown key train_cfgs.bogus")
	var ce *Error
	if !errors.As(err, &ce) {
		t.Errorf("%T is not a *config.Error", err)
	}
	// Validation errors of different sections come together too.
	_, err = Resolve(Sources{LookupEnv: noEnv, Overrides: []Override{{Key: "model", Value: "m", Where: "--model"},
		{Key: "rollout.top_p", Value: "2", Where: "--set"}, {Key: "eval.samples", Value: "0", Where: "--set"}}})
	expectErr(t, "validation", err, "2 configuration errors", "rollout.top_p", "eval.samples")
}

// Hints name a key of the same meaning or none: never one that is merely spelt alike.
func TestHintsByMeaning(t *testing.T) {
	hint := regexp.MustCompile(`did you mean ([^,?]+)`)
	for key, want := range map[string]string{
		"data.train_filez":    "data.train_files", // verl's key, not data.train_size
		"data.train_batch":    "",
		"rollout.n":           "actor_rollout_ref.rollout.n",
		"lr":                  "", // the actor's or the critic's
		"reward_manger":       "reward_manager",
		"rollout.temprature":  "rollout.temperature",
		"algorithm.adv_estim": "",
		"actor.optim.lr":      "actor_rollout_ref.actor.optim.lr",
	} {
		err := Defaults().Set(key, "1", "--set")
		if err == nil {
			t.Errorf("%s: no error", key)
			continue
		}
		got := ""
		if m := hint.FindStringSubmatch(err.Error()); m != nil {
			got = m[1]
		}
		if got != want {
			t.Errorf("%s: hint %q, want %q (%v)", key, got, want, err)
		}
	}
}

// A configuration in align-anything's layout trains PPO with a critic, with bi-level GAE when
// bi_level_gae says so; an estimator given explicitly stays.
func TestAlignAnythingMeansPPO(t *testing.T) {
	f := writeYAML(t, "model: m\ntrain_cfgs:\n  bi_level_gae: true\n  high_level_gamma: 0.9\n")
	c, err := Resolve(Sources{Files: []string{f}, LookupEnv: noEnv})
	if err != nil || c.Advantage.Estimator != algo.EstGAE || !c.Advantage.GAE.BiLevel || c.Advantage.GAE.TurnGamma != 0.9 {
		t.Fatalf("%+v %v", c.Advantage, err)
	}
	if got := c.Origin("advantage.estimator"); !strings.Contains(got, f+":3") || !strings.Contains(got, "PPO with a critic") {
		t.Errorf("origin of the estimator: %q", got)
	}
	f = writeYAML(t, "model: m\nalgorithm:\n  adv_estimator: grpo\ntrain_cfgs:\n  max_turn: 3\n")
	c, err = Resolve(Sources{Files: []string{f}, LookupEnv: noEnv})
	if err != nil || c.Advantage.Estimator != algo.EstGRPO || c.Rollout.MaxTurns != 3 {
		t.Errorf("explicit estimator: %v %d %v", c.Advantage.Estimator, c.Rollout.MaxTurns, err)
	}
}

// A setting without effect under the resolved configuration is an error or a warning that names
// the key and what would give it effect.
func TestNoSilentNoOps(t *testing.T) {
	cases := []struct {
		yaml, err, warn string
	}{
		{"train_cfgs:\n  bi_level_gae: true\nalgorithm:\n  adv_estimator: grpo\n", "bi-level GAE needs a critic: set advantage.estimator gae", ""},
		{"advantage:\n  bi_level: true\n", "advantage.bi_level", ""},
		{"multiturn_trajectory:\n  context_condenser:\n    type: simple\n    max_condensed_tokens: 100\n", "",
			"c.yaml:5: rollout.condenser.max_tokens has no effect: condenser last_n does not count tokens; the budget applies to rollout.condenser.type token_budget or summary"},
		{"rollout:\n  condenser:\n    type: token_budget\n    max_tokens: 100\n", "", ""},
		{"reward_computation:\n  domain: qa\n", "", "c.yaml:3: env.domain has no effect: environment calc_mult scores with its own rubric; the domain picks the rubric of env.name data"},
		{"reward_computation:\n  domain: math\nenv:\n  name: gsm8k\n", "", ""},
		{"reward_computation:\n  domain: qa\nenv:\n  name: data\n", "", ""},
		{"env:\n  tools: [python]\n", "", "env.tools has no effect"},
		{"advantage:\n  turn_gamma: 0.5\n", "", "advantage.turn_gamma has no effect"},
		{"critic:\n  lr: 1.0e-4\n", "", "critic.lr has no effect: there is no critic with advantage.estimator grpo_multiturn"},
		{"algorithm:\n  gamma: 0.9\n", "", "advantage.gamma has no effect"},
		{"algorithm:\n  gamma: 0.9\n  adv_estimator: gae\n", "", ""},
		{"algorithm:\n  gamma: 0.9\n  adv_estimator: reinforce_plus_plus\n", "", ""},
		{"algorithm:\n  lam: 0.9\n  adv_estimator: reinforce_plus_plus\n", "", "c.yaml:3: advantage.lambda has no effect: λ is GAE's"},
		{"advantage:\n  std_over: batch\n", "", ""},
		{"advantage:\n  std_over: batch\n  estimator: rloo\n", "", "c.yaml:3: advantage.std_over has no effect: it is where grpo's and grpo_multiturn's std comes from, not rloo's"},
		{"advantage:\n  std_over: batch\n  norm_std: false\n", "", "advantage.std_over has no effect: advantage.norm_std is false"},
		{"optim:\n  warmup_ratio: 0.1\n", "", ""},
		{"train:\n  checkpoint: false\n  checkpoint_every: 5\n", "", "c.yaml:4: train.checkpoint_every has no effect: train.checkpoint is false: no checkpoint is written"},
		{"train:\n  checkpoint: true\n  checkpoint_every: 5\n", "", ""},
		{"rollout:\n  cuda_graphs: true\n", "", "c.yaml:3: rollout.cuda_graphs has no effect: device cpu decodes eagerly"},
		{"device: cuda\nrollout:\n  cuda_graphs: false\n", "", ""},
		{"device: cuda\nlora:\n  rank: 8\nrollout:\n  cuda_graphs: true\n", "", "rollout.cuda_graphs has no effect: with LoRA adapters"},
		{"optim:\n  warmup_ratio: 0.1\n  warmup: 5\n", "", "c.yaml:3: optim.warmup_ratio has no effect: optim.warmup gives the warm-up in steps (5, from"},
		{"env:\n  direct_demos: 0.3\nsft:\n  steps: 10\n", "", ""},
		{"env:\n  name: wiki_qa\n  countries: 1000\n", "", ""},
		{"env:\n  name: data\n  tools: [search]\n  countries: 1000\n", "", ""},
		{"env:\n  countries: 1000\n", "", "c.yaml:3: env.countries has no effect: environment calc_mult has no generated facts corpus"},
		{"env:\n  name: data\n  tools: [search]\n  corpus: c.jsonl\n  countries: 1000\n", "", "env.countries has no effect: the search tool indexes env.corpus"},
		{"env:\n  name: wiki_qa\n  countries: 2001\n", "env.countries: 2001: want 1 to 2000 (0: 100)", ""},
		{"env:\n  name: frozenlake\n  lake_size: 3\n  slippery: true\n", "", ""},
		{"env:\n  lake_size: 3\n", "", "c.yaml:3: env.lake_size has no effect: environment calc_mult generates no tasks it shapes; it shapes the generated tasks of env.name frozenlake"},
		{"env:\n  name: guess_number\n  slippery: true\n", "", "c.yaml:4: env.slippery has no effect: environment guess_number generates no tasks it shapes; it shapes the generated tasks of env.name frozenlake"},
		{"env:\n  name: frozenlake\n  lake_size: 9\n", "env.lake_size: 9: want 2 to 6", ""},
		{"env:\n  name: gsm8k\n  max_number: 20\n", "", ""},
		{"env:\n  name: gsm8k_python\n  max_number: 10000\n", "", ""},
		{"env:\n  max_number: 20\n", "", "c.yaml:3: env.max_number has no effect: environment calc_mult generates no tasks it shapes; it shapes the generated tasks of env.name gsm8k and gsm8k_python"},
		{"env:\n  name: gsm8k\n  max_number: 9\n", "env.max_number: 9: want 10 to 10000", ""},
		{"env:\n  name: gsm8k\n  max_number: 10001\n", "env.max_number: 10001: want 10 to 10000", ""},
		{"env:\n  digits: 2\n  factors: 3\n", "", ""},
		{"env:\n  name: frozenlake\n  digits: 2\n", "", "c.yaml:4: env.digits has no effect: environment frozenlake generates no tasks it shapes; it shapes the generated tasks of env.name calc_mult"},
		{"env:\n  name: gsm8k\n  factors: 3\n", "", "c.yaml:4: env.factors has no effect: environment gsm8k generates no tasks it shapes; it shapes the generated tasks of env.name calc_mult"},
		{"env:\n  name: frozenlake\n  direct_demos: 0.3\nsft:\n  steps: 10\n", "", ""},
		{"env:\n  direct_demos: 0.3\n", "", "c.yaml:3: env.direct_demos has no effect: it shapes the warm-up's demonstrations, and sft.steps is 0 (no warm-up)"},
		{"env:\n  name: data\n  direct_demos: 0.3\n", "", "env.direct_demos has no effect: environment data has no demonstrator; " +
			"the share applies to the warm-up demonstrations of the environments with a task generator (calc_mult, countdown, frozenlake, gsm8k, gsm8k_python, guess_number, wiki_qa)"},
		// A warm-up needs a demonstrator: refused at once rather than when the warm-up starts.
		{"env:\n  name: data\nsft:\n  steps: 10\n", "c.yaml:5: sft.steps: 10: environment data has no demonstrator for the warm-up; " +
			"the environments with one: calc_mult, countdown, frozenlake, gsm8k, gsm8k_python, guess_number, wiki_qa", ""},
		{"env:\n  name: gsm8k\nsft:\n  steps: 10\nmcp:\n  servers:\n    - name: s\n      command: echo\n",
			"sft.steps: 10: environment gsm8k has no demonstrator for the warm-up with MCP tools (its demonstrations call no tool)", ""},
	}
	for _, tc := range cases {
		f := writeYAML(t, "model: m\n"+tc.yaml)
		c, err := Resolve(Sources{Files: []string{f}, LookupEnv: noEnv})
		if tc.err != "" {
			expectErr(t, tc.yaml, err, tc.err)
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.yaml, err)
			continue
		}
		w := strings.Join(c.Warnings(), "\n")
		if tc.warn == "" && w != "" || tc.warn != "" && !strings.Contains(w, tc.warn) {
			t.Errorf("%s: warnings %q, want %q", tc.yaml, w, tc.warn)
		}
	}
}

// Rows of another environment's tasks are refused, naming the environment that plays them.
func TestCheckRows(t *testing.T) {
	gsm := []data.Row{{DataSource: "calc_mult"}, {DataSource: "openai/gsm8k"}}
	c := Defaults()
	c.Data.Train = Files{"train.parquet"}
	expectErr(t, "gsm8k rows under calc_mult", c.CheckRows("train.parquet", gsm), "data.train", `train.parquet row 2 has data_source "openai/gsm8k"`,
		"not a task of environment calc_mult", "set env.name gsm8k")
	for _, name := range []string{"gsm8k", "data"} {
		c.Env.Name = name
		if err := c.CheckRows("train.parquet", gsm[1:]); err != nil {
			t.Errorf("env %s: %v", name, err)
		}
	}
}

// The math preset is the seed's multi-turn math setup: the python tool, 7 turns, the last 3 steps.
func TestMathPreset(t *testing.T) {
	c, err := Resolve(Sources{Preset: PresetMath, LookupEnv: noEnv, Overrides: withModel})
	if err != nil {
		t.Fatal(err)
	}
	cc := c.Rollout.Condenser
	if c.Env.Name != "gsm8k_python" || c.Env.MaxTurns != 7 || c.Rollout.MaxTurns != 7 || cc.Type != rollout.CondenseLastN || cc.KeepLastN != 3 || len(c.Warnings()) != 0 {
		t.Errorf("env %s (%d turns), %d turns, condenser %+v, warnings %q", c.Env.Name, c.Env.MaxTurns, c.Rollout.MaxTurns, cc, c.Warnings())
	}
}
