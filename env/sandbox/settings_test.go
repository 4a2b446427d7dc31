package sandbox

import (
	"testing"
	"time"

	"github.com/mtgrpo/mtgrpo/internal/setting"
)

// A run's env.python settings become the sandbox's configuration in bytes and flags; zero values
// stay zero (New fills in DefaultLimits); negative ones are refused by key.
func TestSettings(t *testing.T) {
	s := Settings{Interpreter: "python3.11", Wall: 2 * time.Second, MemoryMB: 300, DiskMB: 8, OpenFiles: 32,
		Require: []Guarantee{NoNetwork, MinimalRoot}, BudgetMB: 1024}
	c := s.Config(nil)
	if c.Python != "python3.11" || c.Limits != (Limits{Wall: 2 * time.Second, MemoryBytes: 300 << 20, DiskBytes: 8 << 20, OpenFiles: 32}) {
		t.Errorf("config %+v", c)
	}
	if c.Require != NoNetwork|MinimalRoot || c.Budget == nil {
		t.Errorf("require %v, budget %v", c.Require, c.Budget)
	}
	if err := s.Validate(); err != nil {
		t.Error(err)
	}
	for _, bad := range []Settings{{Wall: -time.Second}, {CPUSeconds: -1}, {MemoryMB: 1 << 40}, {OpenFiles: -2}} {
		if _, ok := setting.As(bad.Validate()); !ok {
			t.Errorf("%+v: %v, want a key error", bad, bad.Validate())
		}
	}
}

// Guarantees read and write their configuration names.
func TestGuaranteeNames(t *testing.T) {
	var g Guarantee
	if err := g.UnmarshalText([]byte("memory_accounted")); err != nil || g != MemoryAccounted {
		t.Errorf("memory_accounted: %v %v", g, err)
	}
	if err := g.UnmarshalText([]byte("no network")); err == nil || err.Error() != `unknown guarantee "no network" `+
		`(want minimal_root, no_network, no_leftovers, unprivileged, memory_accounted, syscall_filter)` {
		t.Errorf("a spelling with a space: %v", err)
	}
	for _, g := range []Guarantee{MinimalRoot, NoNetwork, NoLeftovers, Unprivileged, MemoryAccounted, SyscallFilter} {
		b, _ := g.MarshalText()
		var back Guarantee
		if err := back.UnmarshalText(b); err != nil || back != g {
			t.Errorf("%v: wrote %q, read back %v (%v)", g, b, back, err)
		}
	}
}
