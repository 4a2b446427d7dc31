package job

import (
	"strings"
	"testing"
	"time"

	rundir "github.com/mtgrpo/mtgrpo/cmd/internal/run"
	"github.com/mtgrpo/mtgrpo/grpo"
)

// The end-of-run table reads the evaluations before training, after the warm-up and at the end
// from the metrics (an RL step without evaluation is not a row), with the tool calls per episode.
func TestSummaryTable(t *testing.T) {
	val := func(step int, score, tools float64) rundir.Record {
		return rundir.Record{Step: step, Values: rundir.Metrics{grpo.ValScore: score, grpo.ValFormat: 1, grpo.ValAccuracy: score,
			grpo.ValAccuracyStrict: score, grpo.ValPass1: score, grpo.ValToolCalls: tools}}
	}
	recs := []rundir.Record{val(0, 0, 0), {Step: 1, Values: rundir.Metrics{"sft/loss": 2}}, val(800, 0.5, 0.75),
		val(810, 0.55, 0.8), val(830, 0.625, 1), {Step: 831, Values: rundir.Metrics{"critic/score/mean": 1}}}
	got := Summary(recs, 800, 31, 90*time.Second, "runs/demo", ModelDir, false)
	for _, want := range []string{
		"mtgrpo train: 831 steps (800 SFT, 31 RL) in 1m30s",
		"tool calls",
		"before training       0.000   1.000   0.000     0.000            0.000   0.000",
		"after SFT (step 800)  0.500   1.000   0.500     0.500            0.500   0.750",
		"after RL (step 830)   0.625   1.000   0.625     0.625            0.625   1.000",
		"run: runs/demo  model: runs/demo/model\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "810") || strings.Contains(got, "report:") {
		t.Errorf("summary has an intermediate evaluation or a report it was not given:\n%s", got)
	}
}

// The summary ends with the settings that had no effect, one per line; a clean run adds nothing.
func TestSummaryUnused(t *testing.T) {
	if got := Unused(nil); got != "" {
		t.Errorf("no warnings: %q, want nothing", got)
	}
	w := []string{"argument: actor_rollout_ref.rollout.name (verl) has no effect here: generation runs in the built-in engine",
		"configs/x.yaml:4: rollout.condenser.max_tokens has no effect with condenser last_n"}
	got := Unused(w)
	want := "2 setting(s) had no effect in this run (also at the start of train.log):\n  " + w[0] + "\n  " + w[1] + "\n"
	if got != want {
		t.Errorf("Unused:\n%s\nwant:\n%s", got, want)
	}
}
