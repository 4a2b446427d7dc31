package config

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mtgrpo/mtgrpo/grpo/algo"
	"github.com/mtgrpo/mtgrpo/grpo/memplan"
)

// noEnv is an empty environment, so the host's variables never leak into a test.
func noEnv(string) (string, bool) { return "", false }

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func writeYAML(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func expectErr(t *testing.T, what string, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error, want one mentioning %q", what, parts)
		return
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("%s: error %q does not mention %q", what, err, p)
		}
	}
}

var withModel = []Override{{Key: "model", Value: "models/tiny", Where: "--model"}}

// Each layer overrides the one before: defaults < preset < file < variables < flags, and each
// key remembers where it was set.
func TestResolutionOrder(t *testing.T) {
	f := writeYAML(t, "rollout:\n  tasks: 3\n  group: 5\noptim:\n  lr: 3.0e-6\n")
	c, err := Resolve(Sources{Preset: "math", Files: []string{f},
		LookupEnv: envOf(map[string]string{"LR": "4e-6", "BATCH_SIZE": "6", "MODEL": "m"}),
		Overrides: []Override{{Key: "optim.lr", Value: "5e-6", Where: "--lr"}}})
	if err != nil {
		t.Fatal(err)
	}
	// math preset: temperature 0.3 (not the default 1), group 6 replaced by the file's 5.
	if c.Rollout.Sampling.Temperature != 0.3 || c.Rollout.GroupSize != 5 || c.Rollout.Tasks != 6 || c.Optim.LR != 5e-6 || c.Model != "m" {
		t.Errorf("temperature %v group %d tasks %d lr %v model %q; want 0.3, 5, 6, 5e-6, m",
			c.Rollout.Sampling.Temperature, c.Rollout.GroupSize, c.Rollout.Tasks, c.Optim.LR, c.Model)
	}
	for key, want := range map[string]string{"rollout.group": f + ":3", "rollout.tasks": "$BATCH_SIZE",
		"optim.lr": "--lr", "rollout.temperature": "preset math", "model": "$MODEL"} {
		if got := c.Origin(key); got != want {
			t.Errorf("origin of %s: %q, want %q", key, got, want)
		}
	}
	if c.Preset != PresetMath {
		t.Errorf("preset %q", c.Preset)
	}
	// The preset may also come from the first file that names one, or $PRESET.
	f2 := writeYAML(t, "preset: mt-grpo\nmodel: m\n")
	c, err = Resolve(Sources{Files: []string{f2}, LookupEnv: noEnv})
	if err != nil || c.Advantage.Estimator != algo.EstMTGRPO {
		t.Errorf("preset from the file: %v %v", c.Advantage.Estimator, err)
	}
	c, err = Resolve(Sources{LookupEnv: envOf(map[string]string{"PRESET": "math", "MODEL": "m"})})
	if err != nil || c.Preset != PresetMath {
		t.Errorf("preset from $PRESET: %v %v", c, err)
	}
}

// The SFT warm-up has its own rate, warmup and schedule, spread over sft.steps; RL keeps optim's.
func TestSFTTrainerSchedule(t *testing.T) {
	f := writeYAML(t, "sft:\n  steps: 200\n  lr: 2.0e-3\n  warmup: 10\n  schedule: cosine\n  min_lr_ratio: 0.1\noptim:\n  lr: 1.0e-5\n")
	c, err := Resolve(Sources{Files: []string{f}, LookupEnv: noEnv, Overrides: withModel})
	if err != nil {
		t.Fatal(err)
	}
	g, err := c.SFTTrainer()
	if err != nil {
		t.Fatal(err)
	}
	o := g.Optim
	if o.LR != 2e-3 || o.Warmup != 10 || o.Schedule != algo.Cosine || o.MinLRRatio != 0.1 || o.TotalSteps != 200 {
		t.Errorf("SFT optimizer: lr %v warmup %d schedule %s floor %v total %d; want 0.002, 10, cosine, 0.1, 200",
			o.LR, o.Warmup, o.Schedule, o.MinLRRatio, o.TotalSteps)
	}
	// Half-way through the cosine part (step 10 + 95): the floor plus half the way to the peak.
	if lr, want := algo.LR(o.LR, 105, o.Warmup, o.TotalSteps, o.Schedule, o.MinLRRatio), 2e-4+0.5*1.8e-3; math.Abs(lr-want) > 1e-12 {
		t.Errorf("lr at SFT step 105: %v, want %v", lr, want)
	}
	if r, err := c.Trainer(); err != nil || r.Optim.LR != 1e-5 || r.Optim.Schedule != algo.Constant {
		t.Errorf("RL optimizer: lr %v schedule %s (%v); want optim's 1e-5, constant", r.Optim.LR, r.Optim.Schedule, err)
	}
	c, err = Resolve(Sources{LookupEnv: noEnv, Overrides: withModel})
	if err != nil {
		t.Fatal(err)
	}
	if c.SFT.Schedule != algo.Constant {
		t.Errorf("default sft.schedule %q, want constant", c.SFT.Schedule)
	}
}

// Bad input names the key and the file and line (or the variable, or the flag).
func TestErrorsNameKeyAndPlace(t *testing.T) {
	cases := []struct {
		yaml  string
		parts []string
	}{
		{"rollout:\n  taskz: 3\n", []string{":2:", "unknown key rollout.taskz under rollout", "did you mean rollout.tasks?"}},
		{"rollout:\n  tasks: many\n", []string{":2:", "rollout.tasks", `want an integer, got "many"`}},
		{"optim:\n  lr: [1, 2]\n", []string{":2:", "optim.lr", "want a number, got a list"}},
		{"nonsense: {}\n", []string{":1:", "unknown key nonsense at the top level"}},
		{"advantage:\n  estimator: ppo2\n", []string{":2:", "advantage.estimator", `unknown advantage estimator "ppo2"`}},
		{"rollout:\n  tasks: 2\n  tasks: 3\n", []string{":3:", "rollout.tasks", "given twice (first at line 2)"}},
		{"env:\n  tool_time: 5\n", []string{":2:", "env.tool_time", "want a duration such as 30s"}},
		{"rollout: 5\n", []string{":1:", "rollout", "want a mapping of tasks, group"}},
		{"- a\n- b\n", []string{":1:", "the top level must be a mapping"}},
		{"rollout:\n  tasks: [\n", []string{"c.yaml", "did not find expected node content"}},
		{"algorithm:\n  adv_estimator: grpo\n  bogus: 1\n", []string{":3:", "unknown key algorithm.bogus", "keys under algorithm: adv_estimator"}},
		{"algorithm:\n  multiturn_grpo:\n    n_trajectories_per_question: x\n", []string{":3:", "algorithm.multiturn_grpo.n_trajectories_per_question (rollout.group)", "want an integer"}},
		{"multiturn_trajectory:\n  context_condenser:\n    type: fancy\n", []string{":3:", `unknown condenser "fancy"`}},
		{"reward_computation:\n  type: grpo\n  url: http://x\n", []string{":3:", "unknown key reward_computation.url", "type: command or type: http"}},
		{"reward_computation:\n  format_validation: false\n", []string{":2:", "false is not supported"}},
		{"preset: fast\n", []string{"preset", `unknown preset "fast"`}},
		{"rollout:\n  tasks: 0\n", []string{":2:", "rollout.tasks", "0: must be at least 1"}},
		{"rollout:\n  top_p: 1.5\n", []string{":2:", "rollout.top_p", "must be in (0, 1]"}},
		{"env:\n  name: chess\n", []string{":2:", "env.name", `unknown environment "chess"`}},
		{"reward_computation:\n  type: http\n  url: ftp://x\n", []string{"c.yaml:2", "reward_computation.url"}},
		{"init:\n  arch: gpt2\n  preset: tiny\n", []string{":2:", "init", `unknown architecture "gpt2"`}},
		{"sft:\n  schedule: linear\n", []string{":2:", "sft.schedule", `unknown lr schedule "linear"`}},
		{"env:\n  reward_rule: sqrt\n", []string{":2:", "env.reward_rule", `unknown reward rule "sqrt" (want off, inverse, scaled)`}},
		{"loss:\n  is: tis\n", []string{":2:", "loss.is", `unknown importance sampling mode "tis"`}},
		{"env:\n  python:\n    require: [no_network, bogus]\n", []string{":3:", "env.python.require", `unknown guarantee "bogus"`}},
		{"env:\n  python:\n    wall: -5s\n", []string{":3:", "env.python.wall", "-5s: must be at least 0s"}},
		{"init:\n  arch: qwen3\n  preset: tiny\n  hidden_size: many\n", []string{":4:", "init.hidden_size", `want an integer, got "many"`}},
		{"sft:\n  steps: 5\n  min_lr_ratio: 2\n", []string{"sft.min_lr_ratio", "must be in [0, 1]"}},
	}
	for _, tc := range cases {
		f := writeYAML(t, tc.yaml)
		_, err := Resolve(Sources{Files: []string{f}, LookupEnv: noEnv, Overrides: withModel})
		expectErr(t, tc.yaml, err, append([]string{"c.yaml"}, tc.parts...)...)
	}
	for _, tc := range []struct {
		env   map[string]string
		over  []Override
		parts []string
	}{
		{map[string]string{"LR": "fast"}, nil, []string{"$LR", "optim.lr", `want a number, got "fast"`}},
		{map[string]string{"BATCH_SIZE": "-1"}, nil, []string{"$BATCH_SIZE", "rollout.tasks", "must be at least 1"}},
		{map[string]string{"N_GPUS": "0"}, nil, []string{"$N_GPUS", "want a positive integer"}},
		{map[string]string{"GPUS": "0,1", "N_GPUS": "3"}, nil, []string{"$GPUS", "lists 2 GPUs but N_GPUS is 3"}},
		{map[string]string{"GPUS": "x"}, nil, []string{"$GPUS", "want a GPU index"}},
		{nil, []Override{{Key: "rollout.nope", Value: "1", Where: "--set"}}, []string{"--set", "unknown key rollout.nope"}},
		{nil, []Override{{Key: "optim.lr", Value: "-1", Where: "--lr"}}, []string{"--lr: optim.lr: -1: must be in [0, 1]"}},
		{nil, []Override{{Key: "optim.lr", Value: "1e308", Where: "--lr"}}, []string{"--lr: optim.lr: 1e+308: must be in [0, 1]"}},
		{nil, []Override{{Key: "critic.lr", Value: "20", Where: "--set"}}, []string{"--set: critic.lr: 20: must be in [0, 1]"}},
		{nil, []Override{{Key: "algorithm.nothing", Value: "1", Where: "--set"}}, []string{"--set", "unknown key algorithm.nothing"}},
	} {
		_, err := Resolve(Sources{LookupEnv: envOf(tc.env), Overrides: append(append([]Override{}, withModel...), tc.over...)})
		expectErr(t, "variables", err, tc.parts...)
	}
	if _, err := Resolve(Sources{LookupEnv: noEnv}); err == nil || !strings.Contains(err.Error(), "no model") {
		t.Errorf("no model: %v", err)
	}
	if _, err := Resolve(Sources{Files: []string{"/nonexistent/x.yaml"}, LookupEnv: noEnv, Overrides: withModel}); err == nil ||
		!strings.Contains(err.Error(), "/nonexistent/x.yaml") {
		t.Errorf("missing file: %v", err)
	}
}

// A saved configuration reads back as the same configuration, and Diff names what changed.
func TestSavedRoundTripAndDiff(t *testing.T) {
	c, err := Resolve(Sources{Preset: "mt-grpo", LookupEnv: noEnv, Overrides: []Override{
		{Key: "init.preset", Value: "tiny", Where: "--set"}, {Key: "init.arch", Value: "qwen3", Where: "--set"},
		{Key: "init.hidden_size", Value: "128", Where: "--set"}, {Key: "rollout.chat_vars", Value: "{enable_thinking: false}", Where: "--set"},
		{Key: "env.python.require", Value: "[no_network, minimal_root]", Where: "--set"}}})
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(p, c.YAML(), 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := ReadSaved(p)
	if err != nil {
		t.Fatal(err)
	}
	if d := Diff(c, back); len(d) != 0 || back.Preset != "mt-grpo" {
		t.Errorf("saved and read back differ: %v (preset %q)", d, back.Preset)
	}
	back.Optim.LR = 2e-6
	if d := Diff(c, back); len(d) != 1 || d[0] != "optim.lr: 1e-06 → 2e-06" {
		t.Errorf("diff %v", d)
	}
	if !strings.Contains(c.Compact(), "rollout: {tasks: 8, group: 8,") {
		t.Errorf("compact form:\n%s", c.Compact())
	}
}

// GPUS picks the device: one index is that GPU; a list (one process per GPU) is "cuda", each
// process on the GPU of its local rank.
func TestGPUs(t *testing.T) {
	for _, vars := range []map[string]string{{"GPUS": "0,1,2,3"}, {"GPUS": "4,5", "N_GPUS": "2"}} {
		vars["MODEL"] = "m"
		c, err := Resolve(Sources{LookupEnv: envOf(vars)})
		if err != nil || c.Device != "cuda" {
			t.Errorf("%v: %q %v", vars, c.Device, err)
		}
	}
	c, err := Resolve(Sources{LookupEnv: envOf(map[string]string{"GPUS": "3", "N_GPUS": "1", "MODEL": "m"})})
	if err != nil || c.Device != "cuda:3" {
		t.Errorf("GPUS=3: %q %v", c.Device, err)
	}
	c, err = Resolve(Sources{LookupEnv: envOf(map[string]string{"GPUS": "cpu", "MODEL": "m"})})
	if err != nil || c.Device != "cpu" {
		t.Errorf("GPUS=cpu: %q %v", c.Device, err)
	}
}

func reflectValue(c *Config) reflect.Value { return reflect.ValueOf(c).Elem() }

// fmtValue is a value as the configuration writes it: a named integer (a ZeRO stage) as its
// number, not its String.
func fmtValue(v reflect.Value) string {
	if v.CanInt() && v.Type() != reflect.TypeOf(time.Duration(0)) {
		return strconv.FormatInt(v.Int(), 10)
	}
	return fmt.Sprint(v.Interface())
}

func itoa(i int) string { return strconv.Itoa(i) }

// dist.zero_stage picks the ZeRO stage; dist.zero1 true is stage 1; stages that do not exist, or
// a combination that cannot run, are refused by key.
func TestZeROStage(t *testing.T) {
	resolve := func(over ...Override) (*Config, error) {
		return Resolve(Sources{LookupEnv: noEnv, Overrides: append(append([]Override{}, withModel...), over...)})
	}
	set := func(k, v string) Override { return Override{Key: k, Value: v, Where: "--set"} }
	for _, c := range []struct {
		over []Override
		want memplan.Stage
	}{
		{nil, memplan.StageDP},
		{[]Override{set("dist.zero1", "true")}, memplan.StageZeRO1},
		{[]Override{set("dist.zero_stage", "1"), set("dist.zero1", "true")}, memplan.StageZeRO1},
		{[]Override{set("dist.zero_stage", "2")}, memplan.StageZeRO2},
		{[]Override{set("dist.zero_stage", "3"), set("update.gradient_checkpointing", "true")}, memplan.StageZeRO3},
		// TRL's Trainer arguments: FSDP's sharding strategy, DeepSpeed's JSON file.
		{[]Override{set("fsdp", "full_shard auto_wrap"), set("gradient_checkpointing", "true")}, memplan.StageZeRO3},
		{[]Override{set("fsdp", "[shard_grad_op, auto_wrap]")}, memplan.StageZeRO2},
		{[]Override{set("deepspeed", "testdata/ds_zero2.json")}, memplan.StageZeRO2},
	} {
		cfg, err := resolve(c.over...)
		if err != nil {
			t.Errorf("%v: %v", c.over, err)
			continue
		}
		if got := cfg.ZeROStage(); got != c.want {
			t.Errorf("%v: stage %v, want %v", c.over, got, c.want)
		}
	}
	// DeepSpeed's configuration written inline in YAML, as a mapping.
	f := writeYAML(t, "deepspeed:\n  zero_optimization:\n    stage: 1\n    offload_optimizer:\n      device: none\n")
	if cfg, err := Resolve(Sources{Files: []string{f}, LookupEnv: noEnv, Overrides: withModel}); err != nil || cfg.ZeROStage() != memplan.StageZeRO1 {
		t.Errorf("deepspeed as a YAML mapping: %v, %v; want stage 1", err, cfg)
	}
	for _, c := range []struct {
		over  []Override
		parts []string
	}{
		{[]Override{set("dist.zero_stage", "4")}, []string{"dist.zero_stage", "4: must be at most 3"}},
		{[]Override{set("dist.rollout_ranks", "1")}, []string{"dist.rollout_ranks", "1: rollout ahead trains one step off-policy: set loss.is"}},
		{[]Override{set("dist.rollout_ranks", "1"), set("loss.is", "token_truncate"), set("dapo.dynamic_sampling", "true")},
			[]string{"dist.rollout_ranks", "does not support dapo.dynamic_sampling"}},
		{[]Override{set("dist.timeout", "-1s")}, []string{"dist.timeout", "-1s: must be at least 0s"}},
		{[]Override{set("dist.zero_stage", "2"), set("dist.zero1", "true")}, []string{"dist.zero1", "dist.zero_stage is 2"}},
		{[]Override{set("dist.zero_stage", "3")}, []string{"dist.zero_stage", "set update.gradient_checkpointing"}},
		{[]Override{set("dist.zero_stage", "2"), set("dist.rollout_ranks", "1")}, []string{"dist.rollout_ranks", "ZeRO stage 2"}},
		{[]Override{set("actor_rollout_ref.actor.fsdp_config.param_offload", "true")},
			[]string{"param_offload", "offloading to the CPU is not supported"}},
		{[]Override{set("fsdp", "full_shard offload")}, []string{"--set: fsdp", `"offload": no offload to the CPU`}},
		{[]Override{set("fsdp", "hybrid_shard")}, []string{"--set: fsdp", "no hybrid sharding"}},
		{[]Override{set("deepspeed", "testdata/ds_offload.json")}, []string{"--set: deepspeed", "testdata/ds_offload.json: zero_optimization offloads"}},
		{[]Override{set("deepspeed", "testdata/none.json")}, []string{"--set: deepspeed", "testdata/none.json", "no such file"}},
	} {
		_, err := resolve(c.over...)
		expectErr(t, fmt.Sprint(c.over), err, c.parts...)
	}
}
