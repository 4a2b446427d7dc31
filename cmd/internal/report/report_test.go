package report

import (
	"fmt"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mtgrpo/mtgrpo/cmd/internal/browsertest"
	rundir "github.com/mtgrpo/mtgrpo/cmd/internal/run"
	"github.com/mtgrpo/mtgrpo/env"
)

// syntheticRun writes a run directory as a trainer would: an evaluation before training (step
// 0), 20 SFT warm-up steps (loss falling, a gradient-norm spike of 20 at step 3) evaluated at the
// last, then 20 RL steps (steps 21-40) with verl/TRL names, the KL term off (actor/kl_loss 0),
// the reward rising and an evaluation every 5 RL steps; 3 trajectories every 10 steps, one
// holding markup that must come out escaped.
func syntheticRun(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "synthetic-run")
	r, err := rundir.Open(rundir.Options{Dir: dir, Config: map[string]any{"model": "tiny", "algorithm": map[string]any{"adv_estimator": "grpo"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for step := 0; step <= 40; step++ {
		x := float64(step)
		score := 1 / (1 + math.Exp(-(x-30)/3))
		m := rundir.Metrics{}
		switch {
		case step == 0:
		case step <= 20:
			m["sft/loss"], m["actor/grad_norm"], m["timing_s/update_actor"] = 6-0.25*x, 2.0, 0.1
			if step == 3 {
				m["actor/grad_norm"] = 20
			}
		default:
			for k, v := range map[string]float64{
				"critic/score/mean": score, "critic/score/max": math.Min(1, score+0.3), "train/accuracy": score * 0.9,
				"actor/kl_loss": 0, "actor/entropy": 2 - x/40, "actor/pg_loss": -0.05 + 0.01*math.Sin(x), "actor/grad_norm": 0.5,
				"response_length/mean": 40 + x, "num_turns/mean": 1 + score*2, "tool_call_counts/mean": score * 1.5,
				"train/num_valid_actions": score * 1.2, "perf/throughput": 900 + 10*x, "timing_s/gen": 2 + 0.01*x,
				"timing_s/update_actor": 1.5, "timing_s/reward": 0.2, "timing_s/step": 3.7 + 0.01*x,
			} {
				m[k] = v
			}
		}
		if step == 0 || step >= 20 && step%5 == 0 {
			m["val/accuracy"], m["val/format"], m["val/score"] = score, math.Min(1, 2*score), score
		}
		if err := r.Step(step, m); err != nil {
			t.Fatal(err)
		}
		if step > 0 && step%10 == 0 {
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

// The synthetic run's charts, RL's first then the warm-up's; KL (0 at every step) is left out.
var (
	rlCharts = []string{"reward", "accuracy", "entropy", "policy_loss", "gradient_norm", "lengths", "turns", "tool_calls",
		"throughput", "time_per_phase"}
	warmupCharts = []string{"warm_up_loss", "warm_up_gradient_norm", "warm_up_evaluation"}
)

// The warm-up and RL are drawn apart, each on one x-axis: RL's charts span steps 20 (the
// evaluation after SFT) to 40, the warm-up's 0 to 20. Evaluations are markers, training steps
// lines; rates sit on [0, 1]; the policy loss has its axis to itself; the RL gradient norm does
// not carry the warm-up's spike; the KL panel, zero throughout, is left out.
func TestChartsSplitPhases(t *testing.T) {
	r, err := Load(syntheticRun(t))
	if err != nil {
		t.Fatal(err)
	}
	vs := Views(r.Records)
	if len(vs) != 2 || vs[0].Phase != PhaseRL || vs[0].From != 20 || vs[0].To != 40 ||
		vs[1].Phase != PhaseWarmup || vs[1].From != 0 || vs[1].To != 20 {
		t.Fatalf("views %+v", summarizeViews(vs))
	}
	charts, err := Charts(r.Records)
	if err != nil {
		t.Fatal(err)
	}
	byTitle := map[string]Chart{}
	var got []string
	for _, c := range charts {
		got = append(got, slug(c.Panel.Title))
		byTitle[slug(c.Panel.Title)] = c
		want := Range{20, 40}
		if c.Panel.Phase == PhaseWarmup {
			want = Range{0, 20}
		}
		if c.X != want {
			t.Errorf("%s: x-axis %v, want %v", c.Panel.Title, c.X, want)
		}
	}
	if want := append(append([]string{}, rlCharts...), warmupCharts...); !slices.Equal(got, want) {
		t.Errorf("charts %v, want %v", got, want)
	}
	acc := byTitle["accuracy"]
	if acc.Y != (Range{0, 1}) {
		t.Errorf("accuracy axis %v, want [0, 1]", acc.Y)
	}
	for _, s := range acc.Series {
		switch s.Name {
		case "val/accuracy", "val/format":
			if !s.Marks || !slices.Equal(s.Steps, []float64{20, 25, 30, 35, 40}) {
				t.Errorf("%s: marks %v at %v, want markers at 20, 25, ..., 40", s.Name, s.Marks, s.Steps)
			}
		case "train/accuracy":
			if s.Marks || len(s.Steps) != 20 || s.Steps[0] != 21 {
				t.Errorf("%s: marks %v at %v, want a line over steps 21-40", s.Name, s.Marks, s.Steps)
			}
		default:
			t.Errorf("accuracy draws %s", s.Name)
		}
	}
	// pg_loss is -0.05 + 0.01·sin(step): its axis stays within ±0.07, with grad_norm elsewhere.
	if pl := byTitle["policy_loss"]; len(pl.Series) != 1 || pl.Series[0].Name != "actor/pg_loss" || pl.Y.Min < -0.07 || pl.Y.Max > -0.03 {
		t.Errorf("policy loss: %d series, axis %v", len(pl.Series), pl.Y)
	}
	// RL's gradient norm is 0.5 at every step: [0, 0.5 + 5%] = [0, 0.525]; the warm-up's peaks at
	// the spike, [0, 20 + 5% of 20] = [0, 21].
	if g := byTitle["gradient_norm"]; !near(g.Y, Range{0, 0.525}) || g.Series[0].Steps[0] != 21 {
		t.Errorf("RL gradient norm: axis %v from step %v", g.Y, g.Series[0].Steps[0])
	}
	if g := byTitle["warm_up_gradient_norm"]; !near(g.Y, Range{0, 21}) || len(g.Series[0].Steps) != 20 {
		t.Errorf("warm-up gradient norm: axis %v over %d steps", g.Y, len(g.Series[0].Steps))
	}
	if ev := byTitle["warm_up_evaluation"]; ev.Y != (Range{0, 1}) || !ev.Series[0].Marks || !slices.Equal(ev.Series[0].Steps, []float64{0, 20}) {
		t.Errorf("warm-up evaluation: axis %v, series %+v", ev.Y, ev.Series)
	}
	// The stacked times per RL step sum to 2 + 0.01·step + 1.5 + 0.2, at most 4.1 at step 40.
	if tp := byTitle["time_per_phase"]; !near(tp.Y, Range{0, 4.1 * 1.05}) {
		t.Errorf("time per phase axis %v, want [0, 4.305]", tp.Y)
	}
}

func summarizeViews(vs []View) []string {
	var out []string
	for _, v := range vs {
		out = append(out, fmt.Sprintf("%s %d-%d (%d records)", v.Phase, v.From, v.To, len(v.Records)))
	}
	return out
}

func near(a, b Range) bool { return math.Abs(a.Min-b.Min) < 1e-9 && math.Abs(a.Max-b.Max) < 1e-9 }

// A run without a warm-up is one RL view from its first step; a rate outside [0, 1] widens its
// axis to the data; a quantity switched off (0 throughout) is left out, one that is not is drawn.
func TestChartsWithoutWarmup(t *testing.T) {
	recs := []rundir.Record{
		{Step: 0, Values: rundir.Metrics{"val/accuracy": 0.2}},
		{Step: 1, Values: rundir.Metrics{"train/accuracy": 0.5, "actor/kl_loss": 0, "actor/pg_clipfrac": 0, "actor/entropy": 1}},
		{Step: 2, Values: rundir.Metrics{"train/accuracy": 1.2, "actor/kl_loss": 0.01, "actor/pg_clipfrac": 0, "actor/entropy": 1}},
	}
	vs := Views(recs)
	if len(vs) != 1 || vs[0].Phase != PhaseRL || vs[0].From != 0 || vs[0].To != 2 {
		t.Fatalf("views %v", summarizeViews(vs))
	}
	charts, err := Charts(recs)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range charts {
		got = append(got, c.Panel.Title)
		switch c.Panel.Title {
		case "Accuracy": // [0, 1.2] padded by 5% of 1.2 on each side
			if !near(c.Y, Range{-0.06, 1.26}) {
				t.Errorf("accuracy axis %v, want [-0.06, 1.26]", c.Y)
			}
		case "Entropy": // flat at 1: ±10%
			if !near(c.Y, Range{0.9, 1.1}) {
				t.Errorf("entropy axis %v, want [0.9, 1.1]", c.Y)
			}
		}
	}
	if want := []string{"Accuracy", "KL to the reference", "Entropy"}; !slices.Equal(got, want) {
		t.Errorf("charts %v, want %v (no clip fraction: 0 throughout)", got, want)
	}
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
	for _, id := range append(append([]string{}, rlCharts...), warmupCharts...) {
		if !strings.Contains(page, `id="chart-`+id+`"`) {
			t.Errorf("no %s chart", id)
		}
	}
	if strings.Contains(page, `id="chart-kl`) {
		t.Error("a KL chart for a run without KL")
	}
	// RL is the view shown; the warm-up is folded below it.
	for _, want := range []string{`<details class="view" id="view-rl" open>`, `<details class="view" id="view-warmup">`,
		`id="chart-accuracy" data-x="20 40" data-y="0 1"`, `id="chart-warm_up_loss" data-x="0 20"`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Index(page, `id="view-rl"`) > strings.Index(page, `id="view-warmup"`) {
		t.Error("the warm-up comes before RL")
	}
	if n := strings.Count(page, "<svg"); n != 13 {
		t.Errorf("%d inline drawings, want 13", n)
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
	if len(paths) != 13 {
		t.Fatalf("%d PNGs, want 13", len(paths))
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

// A run directory unpacked from someone else's archive cannot make the report write or read
// outside it: a report.html that links out is replaced, not written through; a config.yaml or a
// plots/ that links out is refused by name, and nothing outside is read into the page or written.
func TestReportStaysInside(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(dir, rundir.MetricsFile), []byte("{\"step\":1,\"critic/score/mean\":0.25}\n{\"step\":2,\"critic/score/mean\":0.5}\n"), 0o644)
	victim := filepath.Join(outside, "victim.html")
	os.WriteFile(victim, []byte("keep me"), 0o644)
	os.Symlink(victim, filepath.Join(dir, PageFile))
	r, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := WritePage(r); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep me" {
		t.Errorf("the file report.html linked to was overwritten: %.40q", b)
	}
	if fi, err := os.Lstat(filepath.Join(dir, PageFile)); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("report.html: %v %v, want a regular file", fi, err)
	}

	secret := filepath.Join(outside, "secret.yaml")
	os.WriteFile(secret, []byte("api_key: hunter2\n"), 0o644)
	os.Symlink(secret, filepath.Join(dir, rundir.ConfigFile))
	_, err = Load(dir)
	if want := rundir.ConfigFile + " is a link to " + secret + ", outside the run directory"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("config.yaml linked out: %v, want %q", err, want)
	}
	os.Remove(filepath.Join(dir, rundir.ConfigFile))

	os.Symlink(outside, filepath.Join(dir, PlotsDir))
	if _, err := WritePNGs(r); err == nil || !strings.Contains(err.Error(), "the plots are written only inside the run directory") {
		t.Errorf("plots/ linked out: %v", err)
	}
	if pngs, _ := filepath.Glob(filepath.Join(outside, "*.png")); len(pngs) > 0 {
		t.Errorf("written outside: %v", pngs)
	}
}
