package rollout

import "github.com/mtgrpo/mtgrpo/internal/setting"

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
	return setting.Parse("condenser", s, condenserTypes, nil)
}

// UnmarshalText reads a condenser's name as ParseCondenser does (YAML, flags).
func (c *CondenserType) UnmarshalText(b []byte) error { return setting.Decode(c, b, ParseCondenser) }

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

// Validate names the first bad setting by its key (rollout.condenser.*, a setting.KeyError).
func (c CondenserConfig) Validate() error {
	if c.Type != "" {
		if err := setting.OneOf("rollout.condenser.type", c.Type, condenserTypes); err != nil {
			return err
		}
	}
	least, why := 0, ""
	if c.Type == CondenseTokenBudget {
		least, why = 1, "the token_budget condenser's budget"
	}
	return setting.Check(setting.In("rollout.condenser.max_tokens", c.MaxTokens, least, setting.MaxTokens).Because(why),
		setting.In("rollout.condenser.keep_last_n", c.KeepLastN, 0, setting.MaxCount),
		setting.In("rollout.condenser.summary_every", c.SummaryEvery, 0, setting.MaxCount),
		setting.In("rollout.condenser.summary_tokens", c.SummaryTokens, 0, setting.MaxTokens))
}
