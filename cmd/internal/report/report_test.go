package report

import (
	"fmt"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mtgrpo/mtgrpo/cmd/internal/browsertest"
	rundir "github.com/mtgrpo/mtgrpo/cmd/internal/run"
	"github.com/mtgrpo/mtgrpo/env"
)

// syntheticRun writes a run directory as a trainer would: 40 steps of metrics with the verl/TRL
// names, reward rising, and 3 trajectories every 10 steps, one holding markup that must come out
// escaped.
func syntheticRun(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "synthetic-run")
	r, err := rundir.Open(rundir.Options{Dir: dir, Config: map[string]any{"model": "tiny", "algorithm": map[string]any{"adv_estimator": "grpo"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for step := 1; step <= 40; step++ {
		x := float64(step)
		score := 1 / (1 + math.Exp(-(x-20)/5))
		m := rundir.Metrics{
			"critic/score/mean": score, "critic/score/max": math.Min(1, score+0.3), "reward/accuracy": score * 0.9,
			"actor/kl_loss": 0.001 * x, "actor/entropy": 2 - x/40, "actor/pg_loss": -0.05 + 0.01*math.Sin(x),
			"response_length/mean": 40 + x, "num_turns/mean": 1 + score*2, "tool_calls/mean": score * 1.5,
			"perf/throughput": 900 + 10*x, "timing_s/gen": 2 + 0.01*x, "timing_s/update_actor": 1.5,
			"timing_s/reward": 0.2, "timing_s/step": 3.7 + 0.01*x,
		}
		if step%10 == 0 {
			m["val/accuracy"] = score
		}
		if err := r.Step(step, m); err != nil {
			t.Fatal(err)
		}
		if step%10 == 0 {
			var ss []rundir.Sample
			for i := 0; i < 3; i++ {
				ss = append(ss, rundir.Sample{Step: step, Index: i, Group: i / 2, Task: fmt.Sprint(step*10 + i), Answer: "42",
					Reward: float64(i % 2), End: "done", Turns: []rundir.SampleTurn{{
						Kind: "action", Finish: "stop", Reward: 0.5,
						Context:   []env.Message{{Role: "user", Content: "What is 6 * 7? <script>alert(1)</script>"}},
						Output:    `<tool_call>{"name": "calculator", "arguments": {"expression": "6*7"}}</tool_call>`,
						ToolCalls: []env.ToolCall{{Type: "function", Function: env.FunctionCall{Name: "calculator", Arguments: []byte(`{"expression":"6*7"}`)}}},
						Feedback:  []env.Message{{Role: "tool", Content: "42"}},
					}}})
			}
			if err := r.Samples(step, ss); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

func TestPageContents(t *testing.T) {
	dir := syntheticRun(t)
	r, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	path, err := WritePage(r)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	page := string(b)
	for _, id := range []string{"reward", "accuracy", "kl", "entropy", "policy_loss", "lengths", "turns", "tool_calls", "throughput", "time_per_phase"} {
		if !strings.Contains(page, `id="chart-`+id+`"`) {
			t.Errorf("no %s chart", id)
		}
	}
	if n := strings.Count(page, "<svg"); n != 10 {
		t.Errorf("%d inline drawings, want 10", n)
	}
	if n := strings.Count(page, `<details class="sample"`); n != 12 {
		t.Errorf("%d trajectories, want 12", n)
	}
	if strings.Contains(page, "<script>alert(1)") || !strings.Contains(page, "&lt;script&gt;alert(1)") {
		t.Error("trajectory text not escaped")
	}
	// Self-contained: nothing is fetched (the SVG namespace URI is a name, not a request).
	if m := regexp.MustCompile(`(src|href)="(https?:)?//`).FindString(page); m != "" {
		t.Errorf("external reference %q", m)
	}
	for _, want := range []string{"adv_estimator: grpo", "critic/score/mean", "timing_s/update_actor"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

func TestPNGs(t *testing.T) {
	r, err := Load(syntheticRun(t))
	if err != nil {
		t.Fatal(err)
	}
	paths, err := WritePNGs(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != 10 {
		t.Fatalf("%d PNGs, want 10", len(paths))
	}
	f, _ := os.Open(filepath.Join(r.Dir, PlotsDir, "time_per_phase.png"))
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() < 400 || b.Dy() < 200 {
		t.Errorf("PNG is %v", b)
	}
}

// Values a chart cannot draw (1.7e308 is valid JSON; a reward server or a diverging loss can
// write it) are drawn at ±1e15 and the series says how many were clipped: the page and the PNGs
// are written, nothing panics.
func TestHugeValuesAreClipped(t *testing.T) {
	dir := t.TempDir()
	lines := `{"step":1,"critic/score/mean":1.7e308,"critic/score/min":-1.7e308,"timing_s/gen":1e300,"actor/entropy":1e16}
{"step":2,"critic/score/mean":0.5,"critic/score/min":0,"timing_s/gen":1.7e308,"timing_s/reward":1.7e308,"actor/entropy":1e16}
`
	os.WriteFile(filepath.Join(dir, rundir.MetricsFile), []byte(lines), 0o644)
	r, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := WritePNGs(r); err != nil {
		t.Fatal(err)
	}
	path, err := WritePage(r)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := os.ReadFile(path)
	for _, want := range []string{"critic/score/mean (1 clipped to ±1e+15)", "critic/score/min (1 clipped to ±1e+15)",
		"timing_s/gen (2 clipped to ±1e+15)", "actor/entropy (2 clipped to ±1e+15)"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the page does not say %q", want)
		}
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "not a run directory") {
		t.Errorf("empty dir: %v", err)
	}
	if _, err := Load(filepath.Join(dir, "none")); err == nil {
		t.Error("missing dir accepted")
	}
	os.WriteFile(filepath.Join(dir, rundir.MetricsFile), []byte("{\"step\":1}\n{oops\n"), 0o644)
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("bad metrics: %v", err)
	}
}

// The page renders in headless Chromium without a console message (errors and warnings from the
// page's script or its markup are logged as CONSOLE lines), its script runs (the trajectory
// counter is filled in), and a screenshot is saved (MTGRPO_SCREENSHOT_DIR keeps it).
func TestPageInChromium(t *testing.T) {
	bin := browsertest.Find(t)
	r, err := Load(syntheticRun(t))
	if err != nil {
		t.Fatal(err)
	}
	page, err := WritePage(r)
	if err != nil {
		t.Fatal(err)
	}
	dom, stderr := browsertest.Headless(t, bin, page, "--dump-dom")
	for _, l := range browsertest.ConsoleErrors(stderr) {
		t.Errorf("browser console: %s", l)
	}
	if !strings.Contains(dom, `data-ready="1"`) || !strings.Contains(dom, "12 of 12 shown") {
		t.Errorf("the page's script did not run: %.300s", dom)
	}
	img, shot := browsertest.Screenshot(t, bin, page, "report.png", 1320, 3400)
	if b := img.Bounds(); b.Dx() != 1320 || b.Dy() != 3400 {
		t.Errorf("screenshot %v", b)
	}
	t.Logf("screenshot: %s", shot)
}
