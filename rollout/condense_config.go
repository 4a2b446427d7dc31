package rollout

import (
	"fmt"
	"strings"
)

// CondenserType names a context condenser.
type CondenserType string

// The condensers by name.
const (
	CondenseFull        CondenserType = "full"         // the whole history (Full)
	CondenseLastN       CondenserType = "last_n"       // the task and the last KeepLastN steps (LastN)
	CondenseTokenBudget CondenserType = "token_budget" // drop old steps until MaxTokens fit (TokenBudget)
	CondenseSummary     CondenserType = "summary"      // the model summarises its history (Summary)
)

var condenserTypes = []CondenserType{CondenseFull, CondenseLastN, CondenseTokenBudget, CondenseSummary}

// ParseCondenser reads a condenser's name; an unknown one is an error listing the names.
func ParseCondenser(s string) (CondenserType, error) {
	names := make([]string, len(condenserTypes))
	for i, c := range condenserTypes {
		if string(c) == s {
			return c, nil
		}
		names[i] = string(c)
	}
	return "", fmt.Errorf("unknown condenser %q (want %s)", s, strings.Join(names, ", "))
}

// CondenserConfig chooses and configures the condenser (the rollout.condenser: section of a
// run's configuration).
type CondenserConfig struct {
	// Type is the condenser (full).
	Type CondenserType `yaml:"type"`
	// KeepLastN steps stay in the context (last_n; summary: verbatim after the summary).
	KeepLastN int `yaml:"keep_last_n"`
	// MaxTokens is token_budget's budget and summary's trigger (0: none for summary).
	MaxTokens int `yaml:"max_tokens"`
	// SummaryEvery triggers a summary after this many steps.
	SummaryEvery int `yaml:"summary_every"`
	// SummaryTokens caps a summary's tokens.
	SummaryTokens int `yaml:"summary_tokens"`
	// TrainSummary trains on the summaries.
	TrainSummary bool `yaml:"train_summary"`
}

// Condenser builds the configured condenser ("" is full).
func (c CondenserConfig) Condenser() (Condenser, error) {
	switch c.Type {
	case CondenseFull, "":
		return Full{}, nil
	case CondenseLastN:
		return LastN{N: c.KeepLastN}, nil
	case CondenseTokenBudget:
		return TokenBudget{MaxTokens: c.MaxTokens}, nil
	case CondenseSummary:
		return Summary{MaxSteps: c.SummaryEvery, MaxTokens: c.MaxTokens, KeepLast: c.KeepLastN,
			MaxSummaryTokens: c.SummaryTokens, Train: c.TrainSummary}, nil
	}
	_, err := ParseCondenser(string(c.Type))
	return nil, err
}
