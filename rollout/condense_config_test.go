package rollout

import (
	"reflect"
	"testing"

	"github.com/mtgrpo/mtgrpo/internal/setting"
)

// Each configured type builds its condenser with the section's settings; "" is full.
func TestCondenserConfigBuilds(t *testing.T) {
	for _, tc := range []struct {
		c    CondenserConfig
		want Condenser
	}{
		{CondenserConfig{}, Full{}},
		{CondenserConfig{Type: CondenseFull, KeepLastN: 3}, Full{}},
		{CondenserConfig{Type: CondenseLastN, KeepLastN: 3}, LastN{N: 3}},
		{CondenserConfig{Type: CondenseTokenBudget, MaxTokens: 900}, TokenBudget{MaxTokens: 900}},
		{CondenserConfig{Type: CondenseSummary, KeepLastN: 1, MaxTokens: 2000, SummaryEvery: 4, SummaryTokens: 128, TrainSummary: true},
			Summary{MaxSteps: 4, MaxTokens: 2000, KeepLast: 1, MaxSummaryTokens: 128, Train: true}},
	} {
		got, err := tc.c.Condenser()
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%+v: got %#v (%v), want %#v", tc.c, got, err, tc.want)
		}
	}
	if _, err := (CondenserConfig{Type: "sliding"}).Condenser(); err == nil ||
		err.Error() != `unknown condenser "sliding" (want full, last_n, token_budget, summary)` {
		t.Errorf("unknown type: %v", err)
	}
}

// Validate names the section's bad key; token_budget needs its budget.
func TestCondenserConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		c   CondenserConfig
		key string
	}{
		{CondenserConfig{Type: "sliding"}, "rollout.condenser.type"},
		{CondenserConfig{Type: CondenseTokenBudget}, "rollout.condenser.max_tokens"},
		{CondenserConfig{Type: CondenseLastN, KeepLastN: -1}, "rollout.condenser.keep_last_n"},
		{CondenserConfig{Type: CondenseSummary, SummaryTokens: 1 << 25}, "rollout.condenser.summary_tokens"},
		{CondenserConfig{}, ""},
		{CondenserConfig{Type: CondenseTokenBudget, MaxTokens: 1}, ""},
	} {
		err := tc.c.Validate()
		ke, _ := setting.As(err)
		if tc.key == "" && err != nil || tc.key != "" && (ke == nil || ke.Key != tc.key) {
			t.Errorf("%+v: %v, want key %q", tc.c, err, tc.key)
		}
	}
}
