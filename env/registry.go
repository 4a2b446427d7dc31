package env

import (
	"fmt"
	"iter"
	"sort"
	"strings"
	"sync"

	"github.com/mtgrpo/mtgrpo/env/data"
)

// Environment is a named environment, opened with a Config: it makes one Env per episode
// (cheaply: the sandbox and search index are built once, in Open, and shared).
type Environment struct {
	Name        string
	Description string
	// MultiTurn is true when episodes can have several assistant turns.
	MultiTurn bool
	// New returns a fresh Env for one episode.
	New func() Env
	// Generate makes n tasks from a seed ("no generator" error for the data environment).
	Generate func(n int, seed int64) ([]data.Row, error)
	// Demonstrate writes a good policy's next message for supervised warm-up; nil when the
	// environment has no demonstrator (every one with a generator has one: Demonstrates).
	Demonstrate Demonstrator
	// DemonstratePerfect is Demonstrate without its share of imperfect demonstrations
	// (Config.DirectDemos); nil when Demonstrate has none, being perfect itself.
	DemonstratePerfect Demonstrator
	// MaxConcurrent is the most episodes that may be open (between Reset and Close) at once: an
	// environment server's session limit. 0 means no limit. The rollout driver admits episodes
	// up to it (rollout.DriverConfig.MaxOpenEpisodes).
	MaxConcurrent int
}

type entry struct {
	desc string
	open func(cfg Config, sh *shared) (*Environment, error)
}

var registry = map[string]entry{
	"gsm8k":        {"GSM8K-format word problems, single turn, answer after ####", openGSM8K},
	"gsm8k_python": {"GSM8K-format word problems with the python tool (MT-GRPO's gsm8k_code)", openGSM8KPython},
	"calc_mult":    {"multiply numbers with the calculator tool (two 3-digit ones unless digits/factors say otherwise)", openCalcMult},
	"wiki_qa":      {"questions about invented countries, answered with the search tool", openWikiQA},
	"frozenlake":   {"FrozenLake as text (RAGEN), multi-turn", openFrozenLake},
	"guess_number": {"guess a number in 1..100 from higher/lower feedback, multi-turn", openGuess},
	"countdown":    {"reach a target with + - * / over given numbers (TinyZero), single turn", openCountdown},
	"data":         {"your own dataset rows; tools and rubric from the config", openData},
}

// Names lists the registered environments, sorted.
func Names() []string {
	var n []string
	for k := range registry {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

// Describe returns an environment's one-line description.
func Describe(name string) string { return registry[name].desc }

// Open builds the named environment.
func Open(name string, cfg Config) (*Environment, error) {
	e, ok := registry[name]
	if !ok {
		return nil, fmt.Errorf("env: unknown environment %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	env, err := e.open(cfg, &shared{cfg: cfg})
	if err != nil {
		return nil, fmt.Errorf("env: %s: %w", name, err)
	}
	env.Name, env.Description = name, e.desc
	return env, nil
}

// Generate makes n tasks of the named environment shaped by cfg (only GeneratorKeys(task) have an
// effect), held in memory: a run's generated tasks.
func Generate(task string, cfg Config, n int, seed int64) ([]data.Row, error) {
	s, err := generatorStream(task, cfg, n, seed)
	if err != nil {
		return nil, err
	}
	return take(n, s), nil
}

// GenerateSeq is Generate one task at a time, holding none: the CLI's `mtgrpo data gen --task …
// --n … --seed … [--set env.KEY=VALUE]`. Each range over it makes the same n tasks again.
func GenerateSeq(task string, cfg Config, n int, seed int64) (iter.Seq[data.Row], error) {
	if _, err := generatorStream(task, cfg, n, seed); err != nil {
		return nil, err
	}
	gen := generators(cfg)[task]
	return func(yield func(data.Row) bool) {
		s := gen(seed)
		for i := range n {
			if !yield(s(i)) {
				return
			}
		}
	}, nil
}

// MaxGenerate bounds the tasks one request generates: a mistyped count is refused, not run
// until the disk is full (some 5 GB of rows at the bound).
const MaxGenerate = 10_000_000

// generatorStream checks a request for generated tasks and starts its stream.
func generatorStream(task string, cfg Config, n int, seed int64) (stream, error) {
	if n < 0 || n > MaxGenerate {
		return nil, fmt.Errorf("env: %d tasks: want 0 to %d", n, MaxGenerate)
	}
	gen, ok := generators(cfg)[task]
	if !ok {
		return nil, fmt.Errorf("env: no generator for %q (have: %s)", task, strings.Join(GeneratorNames(), ", "))
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return gen(seed), nil
}

// GeneratorNames lists the tasks Generate knows.
func GeneratorNames() []string {
	var n []string
	for k := range generators(Config{}) {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

// generators start each task generator's stream, shaped by cfg.
func generators(cfg Config) map[string]func(seed int64) stream {
	return map[string]func(int64) stream{
		"gsm8k":        func(s int64) stream { return gsm8kStream(s, cfg.Math.MaxNumber) },
		"gsm8k_python": func(s int64) stream { return gsm8kStream(s, cfg.Math.MaxNumber) },
		"calc_mult":    cfg.mult().stream,
		"wiki_qa":      func(s int64) stream { return wikiQAStream(s, cfg.countries()) },
		"frozenlake":   func(s int64) stream { return frozenLakeStream(s, cfg.lakeSize(), cfg.Lake.Slippery) },
		"guess_number": guessStream,
		"countdown":    countdownStream,
	}
}

// Demonstrates reports whether the named environment has a demonstrator
// (Environment.Demonstrate) for the supervised warm-up, given extra tools (Config.ExtraTools, an
// MCP server's) or not: every environment with a task generator does, except those whose
// demonstrations call no tool (toolFree) when extra tools join them.
func Demonstrates(name string, extraTools bool) bool {
	_, ok := generators(Config{})[name]
	return ok && !(extraTools && toolFree[name])
}

// toolFree are the environments whose demonstrations call no tool: with extra tools their prompt
// asks for tool calls that the demonstrations never make, so they have no demonstrator then.
var toolFree = map[string]bool{"gsm8k": true, "countdown": true}

// shared holds what every episode of one opened environment shares.
type shared struct {
	cfg    Config
	once   sync.Once
	python *PythonTool
	pyErr  error
}

func (s *shared) pythonTool() (*PythonTool, error) {
	s.once.Do(func() { s.python, s.pyErr = NewPythonTool(s.cfg.Python) })
	return s.python, s.pyErr
}

// withContext applies the configured length rule to a rubric.
func withContext(cfg Config, r *Rubric) *Rubric {
	c := *r
	c.Rule, c.Budget = cfg.RewardRule, cfg.RewardBudget
	return &c
}

func generatorFor(cfg Config, name string) func(int, int64) ([]data.Row, error) {
	g := generators(cfg)[name]
	return func(n int, seed int64) ([]data.Row, error) { return take(n, g(seed)), nil }
}

// chatEnvironment wraps a ChatEnv template into an Environment, adding cfg.ExtraTools.
func chatEnvironment(cfg Config, gen string, tmpl ChatEnv) (*Environment, error) {
	if len(cfg.ExtraTools) > 0 {
		ts, err := NewToolset(append(tmpl.Tools.list(), cfg.ExtraTools...)...)
		if err != nil {
			return nil, err
		}
		if tmpl.Tools.Len() == 0 {
			tmpl.MaxTurns = max(tmpl.MaxTurns, DefaultToolTurns)
			if tmpl.System == "" {
				tmpl.System = toolSystemPrompt(toolNames(cfg.ExtraTools), "give your final answer.")
			}
		}
		tmpl.Tools = ts
	}
	if cfg.MaxTurns > 0 {
		tmpl.MaxTurns = cfg.MaxTurns
	}
	if tmpl.Tools != nil {
		tmpl.Tools.Limits = cfg.toolLimits()
	}
	base := tmpl.RubricFor
	tmpl.RubricFor = func(t Task) *Rubric { return withContext(cfg, base(t)) }
	env := &Environment{
		MultiTurn: IsMultiTurn(tmpl.Tools.Len(), tmpl.MaxTurns),
		New: func() Env {
			e := tmpl
			return &e
		},
	}
	if gen != "" {
		env.Generate = generatorFor(cfg, gen)
	}
	return env, nil
}

func fixed(r func() *Rubric) func(Task) *Rubric { return func(Task) *Rubric { return r() } }

const mathFinish = `give the final answer after "####", for example "#### 42".`

func openGSM8K(cfg Config, _ *shared) (*Environment, error) {
	e, err := chatEnvironment(cfg, "gsm8k", ChatEnv{MaxTurns: 1, RubricFor: fixed(MathRubric)})
	if err == nil && Demonstrates("gsm8k", len(cfg.ExtraTools) > 0) {
		withDemos(e, cfg.DirectDemos, taskQuestion, demonstrateGSM8K, directAnswer)
	}
	return e, err
}

func openGSM8KPython(cfg Config, sh *shared) (*Environment, error) {
	py, err := sh.pythonTool()
	if err != nil {
		return nil, err
	}
	ts, _ := NewToolset(py)
	e, err := chatEnvironment(cfg, "gsm8k_python", ChatEnv{System: toolSystemPrompt("python", mathFinish), Tools: ts, MaxTurns: 4, RubricFor: fixed(ToolMathRubric)})
	if err == nil {
		withDemos(e, cfg.DirectDemos, taskQuestion, demonstrateGSM8KPython, directAnswer)
	}
	return e, err
}

// calcMultInstruction is calc_mult's system prompt. It is short on purpose: the task is
// synthetic and small models with byte-level vocabularies pay for every character of the
// prompt, in compute and in how long they take to learn to attend to the question past it.
const calcMultInstruction = `Call the calculator, then give the final answer after "####".`

func openCalcMult(cfg Config, _ *shared) (*Environment, error) {
	ts, _ := NewToolset(Calculator{})
	e, err := chatEnvironment(cfg, "calc_mult", ChatEnv{System: calcMultInstruction, Tools: ts, MaxTurns: cfg.mult().Factors + 1, RubricFor: fixed(CalcMultRubric)})
	if err == nil {
		withDemos(e, cfg.DirectDemos, taskQuestion, demonstrateCalcMult, directMult)
	}
	return e, err
}

func openWikiQA(cfg Config, _ *shared) (*Environment, error) {
	st, err := searchTool(cfg)
	if err != nil {
		return nil, err
	}
	ts, _ := NewToolset(st)
	e, err := chatEnvironment(cfg, "wiki_qa", ChatEnv{System: WikiQAInstruction, Tools: ts, MaxTurns: 4, RubricFor: fixed(QARubric)})
	if err == nil {
		withDemos(e, cfg.DirectDemos, taskQuestion, demonstrateWikiQA, directWikiQA)
	}
	return e, err
}

func searchTool(cfg Config) (*SearchTool, error) {
	var docs []Document
	if cfg.CorpusPath == "" {
		docs = GenerateCorpus(DefaultCorpusSeed, cfg.countries())
	} else {
		var err error
		if docs, err = ReadCorpus(cfg.CorpusPath); err != nil {
			return nil, err
		}
	}
	return &SearchTool{Index: NewIndex(docs), K: 3}, nil
}

func openCountdown(cfg Config, _ *shared) (*Environment, error) {
	e, err := chatEnvironment(cfg, "countdown", ChatEnv{MaxTurns: 1, RubricFor: fixed(CountdownRubric)})
	if err == nil && Demonstrates("countdown", len(cfg.ExtraTools) > 0) {
		withDemos(e, cfg.DirectDemos, taskQuestion, demonstrateCountdown, directCountdown)
	}
	return e, err
}

// errGameTools refuses extra tools for a game: its moves are the assistant's messages.
func errGameTools(cfg Config) error {
	if len(cfg.ExtraTools) > 0 {
		return fmt.Errorf("a game takes no tools (got %s)", toolNames(cfg.ExtraTools))
	}
	return nil
}

// toolNames joins the tools' names for a prompt or a message: "a", "a and b", "a, b and c".
func toolNames(tools []Tool) string {
	n := make([]string, len(tools))
	for i, t := range tools {
		n[i] = t.Name()
	}
	if len(n) < 2 {
		return strings.Join(n, "")
	}
	return strings.Join(n[:len(n)-1], ", ") + " and " + n[len(n)-1]
}

func openFrozenLake(cfg Config, _ *shared) (*Environment, error) {
	if err := errGameTools(cfg); err != nil {
		return nil, err
	}
	e := &Environment{MultiTurn: true, Generate: generatorFor(cfg, "frozenlake"), New: func() Env {
		return &gameRubric{Env: &FrozenLake{MaxTurns: cfg.MaxTurns}, cfg: cfg}
	}}
	perfect, imperfect := lakeDemonstrators(cfg)
	withDemos(e, cfg.DirectDemos, taskQuestion, perfect, imperfect)
	return e, nil
}

func openGuess(cfg Config, _ *shared) (*Environment, error) {
	if err := errGameTools(cfg); err != nil {
		return nil, err
	}
	e := &Environment{MultiTurn: true, Generate: generatorFor(cfg, "guess_number"), New: func() Env {
		return &gameRubric{Env: &GuessNumber{MaxTurns: cfg.MaxTurns}, cfg: cfg}
	}}
	perfect, imperfect := guessDemonstrators(cfg)
	withDemos(e, cfg.DirectDemos, guessKey, perfect, imperfect)
	return e, nil
}

// gameRubric applies the configured length rule to a game's rubric.
type gameRubric struct {
	Env
	cfg Config
}

func (g *gameRubric) Rubric() *Rubric { return withContext(g.cfg, g.Env.Rubric()) }
