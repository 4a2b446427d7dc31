package algo

import (
	"encoding"
	"testing"

	"github.com/mtgrpo/mtgrpo/internal/setting"
)

// Every named setting decodes itself (YAML and flags call UnmarshalText): a spelling or an alias
// becomes the constant, an unknown value is refused by name and leaves the field as it was.
func TestNamesDecodeThemselves(t *testing.T) {
	var (
		e Estimator
		a AggMode
		w TurnWeighting
		k KLKind
		s Schedule
	)
	for _, tc := range []struct {
		v       encoding.TextUnmarshaler
		in, bad string
		got     func() string
		want    string
	}{
		{&e, "dr_grpo", "ppo2", func() string { return string(e) }, "drgrpo"},
		{&a, "seq-mean-token-sum", "mean", func() string { return string(a) }, "seq-mean-token-sum"},
		{&w, "trajectory", "episode", func() string { return string(w) }, "trajectory"},
		{&k, "low_var_kl", "k4", func() string { return string(k) }, "k3"},
		{&s, "cosine", "linear", func() string { return string(s) }, "cosine"},
	} {
		if err := tc.v.UnmarshalText([]byte(tc.in)); err != nil || tc.got() != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.in, tc.got(), err, tc.want)
		}
		err := tc.v.UnmarshalText([]byte(tc.bad))
		expectErr(t, tc.bad, err, "unknown", `"`+tc.bad+`"`, "want ")
		if tc.got() != tc.want {
			t.Errorf("%s: the refused value changed the field to %q", tc.bad, tc.got())
		}
	}
}

// Bi-level GAE is GAE over a critic's values: asked for under another estimator it is refused by
// its key, naming what gives it effect.
func TestBiLevelNeedsCritic(t *testing.T) {
	c := DefaultAdvConfig()
	c.GAE.BiLevel = true
	err := c.Validate()
	ke, ok := setting.As(err)
	if !ok || ke.Key != "advantage.bi_level" {
		t.Fatalf("bi-level under grpo: %v", err)
	}
	expectErr(t, "bi-level", err, "needs a critic: set advantage.estimator gae", "not grpo")
	c.Estimator = EstGAE
	if err := c.Validate(); err != nil {
		t.Errorf("bi-level under gae: %v", err)
	}
	c.GAE.TurnGamma = 1.5
	if ke, ok := setting.As(c.Validate()); !ok || ke.Key != "advantage.turn_gamma" {
		t.Errorf("turn_gamma 1.5: %v", ke)
	}
}
