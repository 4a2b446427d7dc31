package run

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

type testConfig struct {
	Model string  `yaml:"model"`
	LR    float64 `yaml:"lr"`
}

func TestStepWritesMetricsLogAndEvents(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	r, err := Open(Options{Dir: dir, Config: testConfig{Model: "tiny", LR: 1e-6}})
	if err != nil {
		t.Fatal(err)
	}
	for step := 1; step <= 3; step++ {
		m := Metrics{"critic/score/mean": 0.5 * float64(step), "actor/pg_loss": -0.1, "extra/value": 7,
			"actor/entropy": 1.7406576170143506, "actor/grad_norm": 6.25e-6, "perf/throughput": 5902.315238287982}
		if step == 2 {
			m["actor/entropy"] = math.NaN()
		}
		if err := r.Step(step, m); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, MetricsFile))
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 3 || lines[0] != `{"step":1,"actor/entropy":1.7406576170143506,"actor/grad_norm":6.25e-06,"actor/pg_loss":-0.1,`+
		`"critic/score/mean":0.5,"extra/value":7,"perf/throughput":5902.315238287982}` {
		t.Errorf("metrics.jsonl:\n%s", b)
	}
	recs, err := ReadMetrics(dir)
	if err != nil || len(recs) != 3 || recs[2].Step != 3 || recs[2].Values["critic/score/mean"] != 1.5 {
		t.Fatalf("read back %+v %v", recs, err)
	}
	if _, ok := recs[1].Values["actor/entropy"]; ok {
		t.Error("NaN written into metrics.jsonl")
	}
	var cfg testConfig
	cb, _ := os.ReadFile(filepath.Join(dir, ConfigFile))
	if err := yaml.Unmarshal(cb, &cfg); err != nil || cfg.Model != "tiny" || cfg.LR != 1e-6 {
		t.Errorf("config.yaml %q: %+v %v", cb, cfg, err)
	}
	logText, _ := os.ReadFile(filepath.Join(dir, LogFile))
	var steps []string
	for _, l := range strings.Split(string(logText), "\n") {
		if strings.Contains(l, "step:") {
			steps = append(steps, l)
		}
	}
	if len(steps) != 3 || !strings.Contains(steps[0], "step: 1") || !strings.Contains(steps[0], "critic/score/mean=0.5") ||
		strings.Contains(steps[0], "extra/value") {
		t.Errorf("step lines %q", steps)
	}
	// Log lines carry 5 significant digits (metrics.jsonl every digit): 1.7406576... is 1.7407,
	// 5902.3152... is 5902.3; step 2's NaN entropy is written as zerolog writes it.
	for _, want := range []string{"actor/entropy=1.7407 ", "actor/grad_norm=6.25e-06 ", "perf/throughput=5902.3"} {
		if len(steps) != 3 || !strings.Contains(steps[0]+" ", want) {
			t.Errorf("step line %q lacks %q", steps[0], want)
		}
	}
	if len(steps) != 3 || !strings.Contains(steps[1], "actor/entropy=NaN") {
		t.Errorf("step 2's NaN entropy: %q", steps)
	}
	if !strings.Contains(string(logText), "non-finite") {
		t.Error("no warning about the NaN metric")
	}
	if ev, _ := filepath.Glob(filepath.Join(dir, "events.out.tfevents.*")); len(ev) != 1 {
		t.Errorf("event files %v", ev)
	}
}

// A directory holding a run is refused unless resumed; resuming from step 2 drops later metrics.
func TestResumeTruncatesMetrics(t *testing.T) {
	dir := t.TempDir()
	r, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	for s := 1; s <= 4; s++ {
		r.Step(s, Metrics{"x": float64(s)})
	}
	r.Close()
	// A crash mid-write leaves a partial last line: ignored by readers, dropped on resume.
	f, _ := os.OpenFile(filepath.Join(dir, MetricsFile), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"step":5,"x":`)
	f.Close()
	if recs, err := ReadMetrics(dir); err != nil || len(recs) != 4 {
		t.Fatalf("with a partial line: %d records, %v", len(recs), err)
	}
	if _, err := Open(Options{Dir: dir}); err == nil || !strings.Contains(err.Error(), "already holds a run") {
		t.Fatalf("reopen without resume: %v", err)
	}
	r, err = Open(Options{Dir: dir, Resume: true, ResumeStep: 2})
	if err != nil {
		t.Fatal(err)
	}
	r.Step(3, Metrics{"x": 30})
	r.Close()
	recs, _ := ReadMetrics(dir)
	if len(recs) != 3 || recs[1].Step != 2 || recs[2].Values["x"] != 30 {
		t.Errorf("after resume: %+v", recs)
	}
}

// Bad input names the file and line; a second process (here: a second Open) is refused; an
// unwritable location is an error naming it.
func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	r, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(Options{Dir: dir, Resume: true}); err == nil || !strings.Contains(err.Error(), "in use by another process") {
		t.Errorf("second writer: %v", err)
	}
	r.Close()
	os.WriteFile(filepath.Join(dir, MetricsFile), []byte("{\"step\":1}\nnot json\n"), 0o644)
	if _, err := ReadMetrics(dir); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("bad line: %v", err)
	}
	os.WriteFile(filepath.Join(dir, MetricsFile), []byte("{\"x\":1}\n"), 0o644)
	if _, err := ReadMetrics(dir); err == nil || !strings.Contains(err.Error(), `no integer "step"`) {
		t.Errorf("no step: %v", err)
	}
	file := filepath.Join(t.TempDir(), "f")
	os.WriteFile(file, nil, 0o644)
	if _, err := Open(Options{Dir: filepath.Join(file, "run")}); err == nil || !strings.Contains(err.Error(), "cannot create run directory") {
		t.Errorf("run dir under a file: %v", err)
	}
	if os.Getuid() != 0 { // root writes anywhere
		ro := t.TempDir()
		os.Chmod(ro, 0o555)
		if _, err := Open(Options{Dir: ro}); err == nil || !strings.Contains(err.Error(), "not writable") {
			t.Errorf("read-only run dir: %v", err)
		}
	}
}

func TestSamplesText(t *testing.T) {
	dir := t.TempDir()
	r, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	s := Sample{Step: 4, Index: 1, Group: 0, Task: "t7", Answer: "42", Reward: 1, End: "done", Turns: []SampleTurn{{
		Kind: "action", Output: "<tool_call>mul</tool_call>", Finish: "stop", Reward: 0.5,
	}}}
	if err := r.Samples(4, []Sample{s}); err != nil {
		t.Fatal(err)
	}
	text, _ := os.ReadFile(filepath.Join(dir, SamplesDir, "step-00000004.txt"))
	for _, want := range []string{"=== step 4, episode 1 (group 0), task t7: reward 1, ended done", "answer: 42", "--- turn 1 (action, stop), turn reward 0.5", "[output]\n    <tool_call>mul</tool_call>"} {
		if !strings.Contains(string(text), want) {
			t.Errorf("sample text lacks %q:\n%s", want, text)
		}
	}
	back, err := ReadSamples(dir)
	if err != nil || len(back) != 1 || back[0].Answer != "42" || back[0].Turns[0].Reward != 0.5 {
		t.Errorf("read back %+v %v", back, err)
	}
}

// Run files are read under caps: a metrics.jsonl or a samples file of one line without end (a
// sparse file of 65 MiB of zeros) is an error naming it, read no further than its cap.
func TestRunFilesReadUnderCaps(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, SamplesDir), 0o755)
	huge := func(path string) {
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		f.Truncate(65 << 20) // a hole: no disk written
		f.Close()
	}
	huge(filepath.Join(dir, SamplesDir, "step-00000001.jsonl"))
	_, err := ReadSamples(dir)
	if want := "run: " + filepath.Join(dir, SamplesDir, "step-00000001.jsonl") + " line 1: line too long: over 67108864 bytes"; err == nil || err.Error() != want {
		t.Errorf("samples: %v\nwant %s", err, want)
	}
	huge(filepath.Join(dir, MetricsFile))
	_, err = ReadMetrics(dir)
	if want := "run: " + filepath.Join(dir, MetricsFile) + " line 1: line too long: over 67108864 bytes"; err == nil || err.Error() != want {
		t.Errorf("metrics: %v\nwant %s", err, want)
	}
	os.Remove(filepath.Join(dir, MetricsFile))
	// A last line cut short (a crash mid-write) is dropped; a complete one is read.
	os.WriteFile(filepath.Join(dir, MetricsFile), []byte("{\"step\":1,\"a\":2}\n{\"step\":2,\"a"), 0o644)
	if recs, err := ReadMetrics(dir); err != nil || len(recs) != 1 || recs[0].Values["a"] != 2 {
		t.Errorf("a partial last line: %+v, %v", recs, err)
	}
	os.WriteFile(filepath.Join(dir, MetricsFile), []byte("{\"step\":1e300}\n"), 0o644)
	if _, err := ReadMetrics(dir); err == nil || !strings.Contains(err.Error(), "line 1: no integer \"step\"") {
		t.Errorf("a step past 2^53: %v", err)
	}
}

// A run directory is read only inside: a link that leads out (to another run's metrics, to
// /dev/zero) is refused by name, a FIFO is refused at once rather than waited on, and a link
// that stays inside is followed.
func TestRunFilesInsideOnly(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret.jsonl"), []byte("{\"step\":1,\"a\":2}\n"), 0o644)
	os.Symlink(filepath.Join(outside, "secret.jsonl"), filepath.Join(dir, MetricsFile))
	_, err := ReadMetrics(dir)
	if want := filepath.Join(dir, MetricsFile) + " is a link to " + filepath.Join(outside, "secret.jsonl") + ", outside the run directory " + dir + ": not followed"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a link out: %v\nwant %s", err, want)
	}
	os.Symlink(outside, filepath.Join(dir, SamplesDir))
	os.Symlink("secret.jsonl", filepath.Join(outside, "step-00000001.jsonl"))
	if _, err := ReadSamples(dir); err == nil || !strings.Contains(err.Error(), "samples is a link to "+outside+", outside the run directory") {
		t.Errorf("samples/ a link out: %v", err)
	}
	os.Remove(filepath.Join(dir, MetricsFile))
	if err := syscall.Mkfifo(filepath.Join(dir, MetricsFile), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := ReadMetrics(dir); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), MetricsFile+": not a regular file (a FIFO)") {
			t.Errorf("a FIFO: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("reading a FIFO waits for a writer")
	}
	os.Remove(filepath.Join(dir, MetricsFile))
	os.WriteFile(filepath.Join(dir, "m.jsonl"), []byte("{\"step\":3}\n"), 0o644)
	os.Symlink("m.jsonl", filepath.Join(dir, MetricsFile))
	if recs, err := ReadMetrics(dir); err != nil || len(recs) != 1 || recs[0].Step != 3 {
		t.Errorf("a link inside: %+v %v", recs, err)
	}
}

// A run writes only inside its directory: where one of its own entries (the metrics, the log, the
// lock, checkpoints/, samples/) is a link that leads out, Open refuses it by name, on a resume as
// on a fresh run, and the file it points to keeps its bytes; a link that stays inside is used.
func TestRunWritesInsideOnly(t *testing.T) {
	outside := t.TempDir()
	victim := filepath.Join(outside, "victim.jsonl")
	const old = "{\"step\":1,\"a\":2}\n{\"step\":2,\"a\":3}\n"
	for _, name := range []string{MetricsFile, LogFile, lockFile, CheckpointsDir, SamplesDir} {
		for _, resume := range []bool{false, true} {
			dir := t.TempDir()
			if err := os.WriteFile(victim, []byte(old), 0o644); err != nil {
				t.Fatal(err)
			}
			target := victim
			if name == CheckpointsDir || name == SamplesDir {
				target = outside
			}
			os.Symlink(target, filepath.Join(dir, name))
			r, err := Open(Options{Dir: dir, Resume: resume, ResumeStep: 1})
			if err == nil {
				r.Close()
			}
			want := filepath.Join(dir, name) + " is a link to " + target + ", outside the run directory " + dir + ": not followed"
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s (resume %v): %v\nwant %s", name, resume, err, want)
			}
			if b, _ := os.ReadFile(victim); string(b) != old {
				t.Errorf("%s (resume %v): the file outside now holds %q", name, resume, b)
			}
			if ents, _ := os.ReadDir(outside); len(ents) != 1 {
				t.Errorf("%s (resume %v): outside holds %v", name, resume, ents)
			}
		}
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "m.jsonl"), []byte(old), 0o644)
	os.Symlink("m.jsonl", filepath.Join(dir, MetricsFile))
	r, err := Open(Options{Dir: dir, Resume: true, ResumeStep: 1})
	if err != nil {
		t.Fatalf("a link inside: %v", err)
	}
	r.Close()
	if recs, err := ReadMetrics(dir); err != nil || len(recs) != 1 {
		t.Errorf("a link inside, resumed at step 1: %+v %v", recs, err)
	}
}
