package env

import (
	"context"
	"fmt"
	"strings"

	"github.com/mtgrpo/mtgrpo/env/data"
)

// The "data" environment runs users' own rows: a ChatEnv with the tools named in Config.Data.Tools
// and a rubric chosen by Config.Data.Domain or, when that is empty, per row:
//
//	data_source "countdown"                          → CountdownRubric
//	ability "math" or data_source mentioning gsm8k/math → MathRubric ("####" answers)
//	ability "code"                                   → CodeRubric (a fenced block that parses)
//	ability "qa"                                     → QARubric (<answer> tags)
//	anything else                                    → GeneralRubric
//
// Ground truth comes from each row's reward_model.ground_truth, or from a ground-truth file
// merged in by data.ApplyGroundTruth before the rows reach the environment.

func openData(cfg Config, sh *shared) (*Environment, error) {
	var tools []Tool
	for _, name := range cfg.Data.Tools {
		switch strings.TrimSpace(name) {
		case "python":
			py, err := sh.pythonTool()
			if err != nil {
				return nil, err
			}
			tools = append(tools, py)
		case "calculator":
			tools = append(tools, Calculator{})
		case "search":
			st, err := searchTool(cfg)
			if err != nil {
				return nil, err
			}
			tools = append(tools, st)
		default:
			return nil, fmt.Errorf("unknown tool %q (have python, calculator, search)", name)
		}
	}
	ts, err := NewToolset(tools...)
	if err != nil {
		return nil, err
	}
	var checker CodeChecker = HeuristicChecker{}
	if py, err := sh.pythonTool(); err == nil {
		checker = SandboxChecker{SB: py.SB}
	}
	pick, err := domainRubric(cfg.Data.Domain, checker)
	if err != nil {
		return nil, err
	}
	turns, system := 1, ""
	if ts.Len() > 0 {
		turns, system = 4, toolSystemPrompt(strings.Join(cfg.Data.Tools, " and "), "give your final answer.")
	}
	env, err := chatEnvironment(cfg, "", ChatEnv{System: system, Tools: ts, MaxTurns: turns, RubricFor: pick})
	if err != nil {
		return nil, err
	}
	env.Generate = func(int, int64) ([]data.Row, error) {
		return nil, fmt.Errorf("the data environment has no generator: it reads your rows")
	}
	return env, nil
}

func domainRubric(domain string, c CodeChecker) (func(Task) *Rubric, error) {
	byName := map[string]func() *Rubric{
		"math": MathRubric, "qa": QARubric, "general": GeneralRubric, "countdown": CountdownRubric,
		"code": func() *Rubric { return CodeRubric(c) },
	}
	if domain != "" {
		r, ok := byName[domain]
		if !ok {
			return nil, fmt.Errorf("unknown domain %q (want math, code, qa, countdown, general)", domain)
		}
		return fixed(r), nil
	}
	return func(t Task) *Rubric {
		ability := t.Ability
		src := strings.ToLower(t.DataSource)
		switch {
		case src == "countdown":
			return CountdownRubric()
		case ability == "math" || strings.Contains(src, "gsm8k") || strings.Contains(src, "math"):
			return MathRubric()
		case ability == "code":
			return CodeRubric(c)
		case ability == "qa":
			return QARubric()
		}
		return GeneralRubric()
	}, nil
}

// CodeRubric: reward = 1 when the final message has a fenced Python block that parses (checked
// by c). Functional correctness needs tests, which rows do not carry.
func CodeRubric(c CodeChecker) *Rubric {
	return &Rubric{Funcs: []RewardFunc{{Name: "format", Weight: 1, Gate: true, Fn: func(t *Trajectory) float64 {
		return b2f(FormatCode(context.Background(), finalText(t), c))
	}}}}
}

// GeneralRubric: format = a non-blank final message; accuracy = its <answer> (or, without tags,
// the whole message) equals the ground truth after normalisation.
func GeneralRubric() *Rubric {
	return &Rubric{Funcs: []RewardFunc{
		{Name: "format", Weight: 0, Gate: true, Fn: func(t *Trajectory) float64 { return b2f(FormatGeneral(finalText(t))) }},
		{Name: "accuracy", Weight: 1, Gate: true, Fn: func(t *Trajectory) float64 {
			text := finalText(t)
			if a, ok := ExtractTag(text, "answer"); ok {
				text = a
			}
			truth := t.Task.GroundTruth
			return b2f(AnswersEqual(text, truth) || (NormalizeText(text) != "" && NormalizeText(text) == NormalizeText(truth)))
		}},
	}}
}
