package env

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mtgrpo/mtgrpo/env/sandbox"
	"github.com/mtgrpo/mtgrpo/internal/setting"
)

// Config selects and tunes an environment (a run's env: section, whose keys are the yaml names
// below, every group inlined: env.lake_size, env.digits). Zero values mean each environment's
// default. The settings at the top apply to every environment; each group after them belongs
// to the environments it names: the generated tasks of those in its shapes tag (GeneratorKeys),
// or the data environment's own rows (Data). A group's key set under another environment has no
// effect, which the run warns about by name.
type Config struct {
	// MaxTurns overrides the environment's turn limit (gsm8k 1, gsm8k_python 4, calc_mult factors+1,
	// wiki_qa 4, frozenlake 5, guess_number 7, countdown 1, data 1 or 4 with tools).
	MaxTurns int `yaml:"max_turns"`
	// RewardRule is the trajectory reward rule: off (the rubric's weighted sum), inverse (1/max
	// context tokens when format and answer are right) or scaled (RewardBudget/max context
	// tokens).
	RewardRule RewardRule `yaml:"reward_rule"`
	// RewardBudget is the numerator of the scaled rule, in tokens.
	RewardBudget int `yaml:"reward_budget"`
	// DirectDemos is the share (0 to 1) of tasks, chosen by a hash of the question (so the same
	// ones every time), whose demonstration is imperfect: it skips the tool or the worked steps
	// and answers at once, as a demonstrator that does the work in its head would (a larger
	// model's transcripts), or, in a game, makes a wrong move. calc_mult states the product
	// without the calculator, gsm8k the answer without the worked solution, gsm8k_python the
	// answer without the python call, wiki_qa the answer without searching, countdown the
	// equation without the steps that find it; frozenlake first steps away from the goal and
	// guess_number opens off-centre (demonstrate*.go). A small model cannot imitate the
	// answers from memory: after such a warm-up it answers some tasks that way and gets them
	// wrong, and RL has to learn that the tool or the steps pay.
	DirectDemos float64 `yaml:"direct_demos"`

	// The tools of every environment that has them.
	//
	// MaxToolCalls is the most tool calls one assistant message may make (0: the default, 5);
	// calls past it are not run and count as failed calls.
	MaxToolCalls int `yaml:"max_tool_calls"`
	// ToolTime is the wall-clock budget of one message's tool calls together (0: the default,
	// 20s); when it runs out the running call is cancelled and the rest are answered with a
	// timeout message.
	ToolTime time.Duration `yaml:"tool_time"`
	// CorpusPath is a JSONL corpus ({id, title, text}) for the search tool; default: the generated
	// facts corpus (Facts).
	CorpusPath string `yaml:"corpus"`
	// Python configures the python tool's sandbox (interpreter, limits); a run's configuration
	// gives it in its own units (cmd/internal/config's env.python section).
	Python sandbox.Config `yaml:"-"`
	// ExtraTools are tools from outside the binary (an MCP server's, see package env/mcp),
	// offered in every episode after the environment's own tools. A question-answering
	// environment that gains tools becomes multi-turn (IsMultiTurn): its turn limit is
	// MaxTurns, or DefaultToolTurns when it had one turn. Game environments take none.
	ExtraTools []Tool `yaml:"-"`

	// Data is the data environment's tools and rubric.
	Data DataEnv `yaml:",inline"`
	// Math shapes generated gsm8k and gsm8k_python problems.
	Math MathTasks `yaml:",inline" shapes:"gsm8k,gsm8k_python"`
	// Mult shapes generated calc_mult tasks.
	Mult MultTask `yaml:",inline" shapes:"calc_mult"`
	// Facts shapes the generated facts corpus: wiki_qa's questions, and the search tool's
	// passages unless CorpusPath gives its own.
	Facts FactsCorpus `yaml:",inline" shapes:"wiki_qa"`
	// Lake shapes generated frozen lakes.
	Lake LakeTasks `yaml:",inline" shapes:"frozenlake"`
}

// DataEnv is the "data" environment's settings: the tools of users' own rows and their rubric.
type DataEnv struct {
	// Domain picks the rubric: math, code, qa, general; "" chooses per row from data_source and
	// ability.
	Domain string `yaml:"domain"`
	// Tools lists the tools: python, calculator, search.
	Tools []string `yaml:"tools"`
}

// MathTasks shapes generated GSM8K-style problems.
type MathTasks struct {
	// MaxNumber caps every number of a problem (the question's, the worked steps' results, the
	// answer), MinMaxNumber to MaxMaxNumber; 0 keeps the templates' own ranges (up to
	// DefaultMaxNumber). A small cap makes sums and differences a small model can learn
	// (docs/bench/learning.md).
	MaxNumber int `yaml:"max_number"`
}

// FactsCorpus shapes the generated corpus of invented countries.
type FactsCorpus struct {
	// Countries is the number of countries, 1 to MaxCorpusSize (0: DefaultCorpusSize, 100):
	// wiki_qa's questions are drawn from them (4 each) and the search tool indexes their passages
	// (3 each).
	Countries int `yaml:"countries"`
}

// LakeTasks shapes generated frozen lakes.
type LakeTasks struct {
	// Size is the side of a lake, MinLakeSize to MaxLakeSize (0: DefaultLakeSize, 4); RAGEN's size.
	Size int `yaml:"lake_size"`
	// Slippery makes the lakes slippery (RAGEN's default is slippery; ours is not, so a small
	// model can learn the rules first).
	Slippery bool `yaml:"slippery"`
}

// Validate names the first bad setting by its key in a run's configuration (env.lake_size, a
// setting.KeyError).
func (c Config) Validate() error {
	if c.RewardRule != "" {
		if err := setting.OneOf("env.reward_rule", c.RewardRule, rewardRules); err != nil {
			return err
		}
	}
	budget, why := 0, ""
	if c.RewardRule == RuleScaled {
		budget, why = 1, "the scaled reward rule's numerator"
	}
	lake := fmt.Sprintf("across a %d×%d lake is the %d moves an episode may make", MaxLakeSize, MaxLakeSize, lakeSteps)
	return setting.Check(
		setting.In("env.reward_budget", c.RewardBudget, budget, setting.MaxTokens).Because(why),
		setting.AtLeast("env.tool_time", c.ToolTime, 0),
		setting.In("env.direct_demos", c.DirectDemos, 0, 1),
		setting.In("env.digits", c.Mult.Digits, 1, 6).OrZero(strconv.Itoa(DefaultMult.Digits)),
		setting.In("env.factors", c.Mult.Factors, 2, 4).OrZero(strconv.Itoa(DefaultMult.Factors)),
		setting.In("env.max_number", c.Math.MaxNumber, MinMaxNumber, MaxMaxNumber).OrZero(fmt.Sprintf("the templates' own ranges, up to %d", DefaultMaxNumber)),
		setting.In("env.countries", c.Facts.Countries, 1, MaxCorpusSize).OrZero(strconv.Itoa(DefaultCorpusSize)),
		setting.In("env.lake_size", c.Lake.Size, MinLakeSize, MaxLakeSize).OrZero(strconv.Itoa(DefaultLakeSize)).Because(lake),
		setting.In("env.max_turns", c.MaxTurns, 0, setting.MaxCount),
		setting.In("env.max_tool_calls", c.MaxToolCalls, 0, setting.MaxCount),
	)
}

// mult is the calc_mult task shape: Mult over DefaultMult.
func (c Config) mult() MultTask {
	return MultTask{Digits: cmp.Or(c.Mult.Digits, DefaultMult.Digits), Factors: cmp.Or(c.Mult.Factors, DefaultMult.Factors)}
}

// countries is the size of the generated facts corpus: Facts.Countries or DefaultCorpusSize.
func (c Config) countries() int { return cmp.Or(c.Facts.Countries, DefaultCorpusSize) }

// lakeSize is the side of generated frozen lakes: Lake.Size or DefaultLakeSize.
func (c Config) lakeSize() int { return cmp.Or(c.Lake.Size, DefaultLakeSize) }

// toolLimits are the per-message limits Config sets.
func (c Config) toolLimits() ToolLimits {
	return ToolLimits{MaxCalls: c.MaxToolCalls, Time: c.ToolTime}
}

// GeneratorKeys lists the Config keys (yaml names: env.KEY in a run) that shape the named
// generator's tasks: those of the groups whose shapes tag names it. Every other key leaves its
// tasks as they are.
func GeneratorKeys(task string) []string {
	var keys []string
	for _, g := range taskGroups() {
		if slices.Contains(g.shapes, task) {
			keys = append(keys, g.keys...)
		}
	}
	return keys
}

// ShapingKeys lists every Config key (yaml name) that shapes some generator's tasks, sorted, and
// the generators each shapes, sorted.
func ShapingKeys() (keys []string, shapes map[string][]string) {
	shapes = map[string][]string{}
	for _, g := range taskGroups() {
		for _, k := range g.keys {
			shapes[k] = append(shapes[k], g.shapes...)
			keys = append(keys, k)
		}
	}
	for k := range shapes {
		slices.Sort(shapes[k])
	}
	slices.Sort(keys)
	return slices.Compact(keys), shapes
}

// taskGroup is one group of Config that shapes generated tasks: its keys and the generators it
// shapes.
type taskGroup struct{ keys, shapes []string }

// taskGroups reads Config's groups with a shapes tag.
func taskGroups() []taskGroup {
	var out []taskGroup
	t := reflect.TypeOf(Config{})
	for i := range t.NumField() {
		f := t.Field(i)
		tag, ok := f.Tag.Lookup("shapes")
		if !ok {
			continue
		}
		g := taskGroup{shapes: strings.Split(tag, ",")}
		for j := range f.Type.NumField() {
			g.keys = append(g.keys, strings.Split(f.Type.Field(j).Tag.Get("yaml"), ",")[0])
		}
		out = append(out, g)
	}
	return out
}
