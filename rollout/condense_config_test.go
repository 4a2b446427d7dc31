package rollout

import (
	"reflect"
	"testing"
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
