package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mtgrpo/mtgrpo/cmd/internal/browsertest"
	"github.com/mtgrpo/mtgrpo/cmd/internal/report"
	rundir "github.com/mtgrpo/mtgrpo/cmd/internal/run"
	"github.com/mtgrpo/mtgrpo/model"
	"github.com/mtgrpo/mtgrpo/torch"
)

// The demo's short form end to end, as CI runs it: a random model learns the calc_mult format
// and tool call in the SFT warm-up (held-out format reward and tool successes go from 0 to most
// episodes), RL steps run with periodic evaluation; the run directory holds the report page
// (opened in Chromium: it renders without console errors; a screenshot is kept), the exported
// model (loadable, with tokenizer and chat template); `mtgrpo export` writes the same model from
// the last checkpoint, and `mtgrpo eval` on that checkpoint reproduces the run's last evaluation.
func TestDemoShortLearns(t *testing.T) {
	if testing.Short() {
		t.Skip("the short demo trains for a couple of minutes")
	}
	dir := filepath.Join(t.TempDir(), "demo")
	if err := run([]string{"demo", "--short", "--run-dir", dir, "--threads", "1"}); err != nil {
		t.Fatal(err)
	}
	recs, err := rundir.ReadMetrics(dir)
	if err != nil {
		t.Fatal(err)
	}
	byStep := map[int]rundir.Metrics{}
	for _, r := range recs {
		byStep[r.Step] = r.Values
	}
	last := recs[len(recs)-1]
	first, sftEnd := byStep[0], byStep[30]
	if last.Step != 32 || first == nil || sftEnd == nil {
		t.Fatalf("steps logged up to %d (want 0, 30 and 32)", last.Step)
	}
	// Learning: the random model never states an answer in the format or calls the tool right;
	// after the warm-up most held-out episodes do, and the SFT loss fell by a factor of 3 at least.
	t.Logf("format %v -> %v, tool success %v -> %v, sft loss %v -> %v", first["val/format"], sftEnd["val/format"],
		first["val/turn_reward/tool_success/mean"], sftEnd["val/turn_reward/tool_success/mean"],
		byStep[1]["sft/loss"], sftEnd["sft/loss"])
	if first["val/format"] != 0 || !(sftEnd["val/format"] >= 0.75) {
		t.Errorf("held-out format reward %v before and %v after SFT: want 0 and >= 0.75", first["val/format"], sftEnd["val/format"])
	}
	if !(sftEnd["val/turn_reward/tool_success/mean"] > first["val/turn_reward/tool_success/mean"]) {
		t.Errorf("tool successes did not rise: %v -> %v", first["val/turn_reward/tool_success/mean"], sftEnd["val/turn_reward/tool_success/mean"])
	}
	if !(sftEnd["sft/loss"] < byStep[1]["sft/loss"]/3) {
		t.Errorf("sft loss %v -> %v: want a factor of 3 at least", byStep[1]["sft/loss"], sftEnd["sft/loss"])
	}
	for _, k := range []string{"critic/score/mean", "actor/entropy", "num_turns/mean", "timing_s/gen"} {
		if _, ok := last.Values[k]; !ok {
			t.Errorf("RL step lacks %s", k)
		}
	}
	checkReportInBrowser(t, dir)
	checkExports(t, dir)
	checkEvalReproduces(t, dir, last.Values)
}

// checkReportInBrowser opens the run's report page in headless Chromium.
func checkReportInBrowser(t *testing.T, dir string) {
	t.Helper()
	page := filepath.Join(dir, report.PageFile)
	if _, err := os.Stat(page); err != nil {
		t.Fatalf("no report page: %v", err)
	}
	bin := browsertest.Find(t)
	dom, stderr := browsertest.Headless(t, bin, page, "--dump-dom")
	for _, l := range browsertest.ConsoleErrors(stderr) {
		t.Errorf("browser console: %s", l)
	}
	for _, want := range []string{`data-ready="1"`, "Reward", "Accuracy", "Time per phase", "calc_mult"} {
		if !strings.Contains(dom, want) {
			t.Errorf("report page lacks %q", want)
		}
	}
	_, shot := browsertest.Screenshot(t, bin, page, "demo-report.png", 1320, 3400)
	t.Logf("report screenshot: %s", shot)
}

// checkExports loads RUN/model and the model `mtgrpo export` writes from the last checkpoint:
// both hold the tokenizer and its chat template, and the same weights.
func checkExports(t *testing.T, dir string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "exported")
	if err := run([]string{"export", dir, "--out", out, "--threads", "1"}); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{filepath.Join(dir, "model"), out} {
		for _, f := range []string{"config.json", "generation_config.json", "model.safetensors", "tokenizer.json"} {
			if _, err := os.Stat(filepath.Join(d, f)); err != nil {
				t.Errorf("%s: %v", d, err)
			}
		}
		b, _ := os.ReadFile(filepath.Join(d, "tokenizer_config.json"))
		var tc map[string]any
		if json.Unmarshal(b, &tc) != nil || tc["chat_template"] == nil {
			t.Errorf("%s: tokenizer_config.json has no chat_template", d)
		}
	}
	a, _ := os.ReadFile(filepath.Join(dir, "model", "model.safetensors"))
	b, _ := os.ReadFile(filepath.Join(out, "model.safetensors"))
	if len(a) == 0 || !bytes.Equal(a, b) {
		t.Error("the exported checkpoint differs from the run's exported model")
	}
	err := torch.Run(func() error {
		m, err := model.Load(out, model.Options{})
		if err != nil {
			return err
		}
		m.Close()
		return nil
	})
	if err != nil {
		t.Error(err)
	}
}

// checkEvalReproduces evaluates the last checkpoint with `mtgrpo eval`: greedy decoding of the
// same held-out tasks with the same weights gives the run's last validation numbers.
func checkEvalReproduces(t *testing.T, dir string, last rundir.Metrics) {
	t.Helper()
	if err := run([]string{"eval", "--checkpoint", dir, "--threads", "1"}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "eval", "step-00000032", "eval.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]float64
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"val/format", "val/score", "val/accuracy", "val/response_length/mean"} {
		if m[k] != last[k] {
			t.Errorf("eval %s = %v, the run's last evaluation %v", k, m[k], last[k])
		}
	}
	if s, err := os.ReadFile(filepath.Join(dir, "eval", "step-00000032", "samples.txt")); err != nil || !strings.Contains(string(s), "=== step 32") {
		t.Errorf("eval samples: %v", err)
	}
}
