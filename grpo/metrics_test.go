package grpo

import "testing"

func TestMFU(t *testing.T) {
	// 6 FLOPs × 100 parameters × 1000 tokens × 2 epochs = 1.2e6 FLOPs in 2 s = 6e5 FLOP/s; peak 1e6.
	m := Metrics{"timing_s/update_actor": 2, "perf/total_num_tokens": 1000}
	m.mfu(100, 2, 1e6)
	if !near(m["perf/mfu"], 0.6, 1e-12) {
		t.Errorf("perf/mfu = %v, want 0.6", m["perf/mfu"])
	}
	n := Metrics{"timing_s/update_actor": 2, "perf/total_num_tokens": 1000}
	n.mfu(100, 1, 0)
	if _, ok := n["perf/mfu"]; ok {
		t.Error("perf/mfu reported without a known peak")
	}
	s := Metrics{}
	s.stat("x", []float64{1, 3})
	if s["x/mean"] != 2 || s["x/max"] != 3 || s["x/min"] != 1 {
		t.Errorf("stat: %v", s)
	}
}
