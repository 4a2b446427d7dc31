package env

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mtgrpo/mtgrpo/internal/setting"
)

// Validate names the first bad setting by its key (env.KEY in a run), and Open refuses the same
// settings.
func TestConfigValidateNamesKey(t *testing.T) {
	for _, tc := range []struct {
		c   Config
		key string
		msg string
	}{
		{Config{RewardRule: "linear"}, "env.reward_rule", `unknown value "linear" (want off, inverse, scaled)`},
		{Config{RewardRule: RuleScaled}, "env.reward_budget", "0: must be at least 1 (the scaled reward rule's numerator)"},
		{Config{RewardBudget: -1}, "env.reward_budget", "-1: must be at least 0"},
		{Config{ToolTime: -time.Second}, "env.tool_time", "-1s: must be at least 0s"},
		{Config{DirectDemos: 1.5}, "env.direct_demos", "1.5: must be in [0, 1]"},
		{Config{Mult: MultTask{Digits: 7}}, "env.digits", "7: want 1 to 6 (0: 3)"},
		{Config{Mult: MultTask{Factors: 1}}, "env.factors", "1: want 2 to 4 (0: 2)"},
		{Config{Lake: LakeTasks{Size: 1}}, "env.lake_size", "1: want 2 to 6 (0: 4; across a 6×6 lake is the 10 moves an episode may make)"},
		{Config{Lake: LakeTasks{Size: 7}}, "env.lake_size", "7: want 2 to 6 (0: 4; across a 6×6 lake is the 10 moves an episode may make)"},
		{Config{Math: MathTasks{MaxNumber: 9}}, "env.max_number", "9: want 10 to 10000 (0: the templates' own ranges, up to 1728)"},
		{Config{Math: MathTasks{MaxNumber: -1}}, "env.max_number", "-1: want 10 to 10000 (0: the templates' own ranges, up to 1728)"},
		{Config{MaxTurns: -2}, "env.max_turns", "-2: must be at least 0"},
		{Config{MaxToolCalls: -1}, "env.max_tool_calls", "-1: must be at least 0"},
		{Config{MaxToolCalls: setting.MaxCount + 1}, "env.max_tool_calls", "16777217: must be at most 16777216"},
	} {
		err := tc.c.Validate()
		var ke *setting.KeyError
		if !errors.As(err, &ke) || ke.Key != tc.key || ke.Err.Error() != tc.msg {
			t.Errorf("%+v: got %v, want %s: %s", tc.c, err, tc.key, tc.msg)
		}
		if _, err := Open("calc_mult", tc.c); !errors.As(err, &ke) || ke.Key != tc.key {
			t.Errorf("Open with %+v: got %v, want the %s error", tc.c, err, tc.key)
		}
	}
	// Zero values are the defaults: valid.
	if err := (Config{RewardRule: RuleScaled, RewardBudget: 400, Mult: MultTask{Digits: 6, Factors: 4}, DirectDemos: 1, Lake: LakeTasks{Size: 6}, Math: MathTasks{MaxNumber: MaxMaxNumber}}).Validate(); err != nil {
		t.Errorf("valid settings: %v", err)
	}
	if err := (Config{}).Validate(); err != nil {
		t.Errorf("zero Config: %v", err)
	}
}

// env.lake_size reaches the frozenlake generator the run uses, and only it: 3×3 lakes for 3, the
// default 4×4 for 0.
func TestLakeSizeShapesGeneratedLakes(t *testing.T) {
	for _, tc := range []struct{ size, want int }{{0, DefaultLakeSize}, {3, 3}, {MaxLakeSize, MaxLakeSize}} {
		e, err := Open("frozenlake", Config{Lake: LakeTasks{Size: tc.size}})
		if err != nil {
			t.Fatal(err)
		}
		rows, err := e.Generate(20, 7)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range rows {
			expectSolvableLake(t, fmt.Sprintf("lake_size %d, row %d", tc.size, i), r, tc.want)
		}
	}
}

// GeneratorKeys tells the truth: each key it lists for a generator changes that generator's
// rows, and each key it lists for another leaves them as they are.
func TestGeneratorKeysShapeTasks(t *testing.T) {
	set := map[string]func(*Config){
		"max_number": func(c *Config) { c.Math.MaxNumber = 20 },
		"digits":     func(c *Config) { c.Mult.Digits = 2 },
		"factors":    func(c *Config) { c.Mult.Factors = 3 },
		"countries":  func(c *Config) { c.Facts.Countries = 7 },
		"lake_size":  func(c *Config) { c.Lake.Size = 3 },
		"slippery":   func(c *Config) { c.Lake.Slippery = true },
	}
	for _, name := range GeneratorNames() {
		for _, k := range GeneratorKeys(name) {
			if set[k] == nil {
				t.Errorf("%s: key %s has no test value", name, k)
			}
		}
		plain, err := Generate(name, Config{}, 30, 3)
		if err != nil {
			t.Fatal(err)
		}
		for k, apply := range set {
			var c Config
			apply(&c)
			rows, err := Generate(name, c, 30, 3)
			if err != nil {
				t.Fatalf("%s with %s: %v", name, k, err)
			}
			shapes := slices.Contains(GeneratorKeys(name), k)
			if changed := fmt.Sprint(rows) != fmt.Sprint(plain); changed != shapes {
				t.Errorf("%s with %s: rows changed %v, GeneratorKeys says %v", name, k, changed, shapes)
			}
		}
	}
}

// The shaping keys come from Config's groups: each group's keys, under the generators its
// shapes tag names, which all exist.
func TestShapingKeysFromGroups(t *testing.T) {
	keys, shapes := ShapingKeys()
	if want := []string{"countries", "digits", "factors", "lake_size", "max_number", "slippery"}; !slices.Equal(keys, want) {
		t.Errorf("keys %v, want %v", keys, want)
	}
	if got := fmt.Sprint(shapes["max_number"], GeneratorKeys("frozenlake"), GeneratorKeys("countdown")); got != "[gsm8k gsm8k_python] [lake_size slippery] []" {
		t.Errorf("shapes: %s", got)
	}
	for k, gens := range shapes {
		for _, g := range gens {
			if !slices.Contains(GeneratorNames(), g) {
				t.Errorf("%s shapes %q, not a generator (%v)", k, g, GeneratorNames())
			}
		}
	}
}
