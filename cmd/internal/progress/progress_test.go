package progress

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mtgrpo/mtgrpo/rollout"
	"github.com/mtgrpo/mtgrpo/tokenizer"
)

// Off a terminal nothing is drawn and every method is a no-op on nil bars.
func TestOffWhenNotATerminal(t *testing.T) {
	r, w, _ := os.Pipe()
	defer r.Close()
	defer w.Close()
	b := New(w)
	if b.On() {
		t.Fatal("bars on for a pipe")
	}
	bar := b.Bar("x", 10, Count)
	if bar != nil {
		t.Fatal("a bar from switched-off bars")
	}
	bar.Add(3)
	bar.SetTotal(5)
	bar.Done()
	l := &Load{Bars: b}
	l.Start("loading", 100)
	l.Add(100)
	l.Done()
	b.Wait()
	var none *Bars
	none.Wait()
}

// Drawn bars show their label and count; Done completes a bar that stopped early.
func TestBarDraws(t *testing.T) {
	var out bytes.Buffer
	b := newOn(&out, 80)
	bar := b.Bar("rollout", 4, Count)
	bar.Add(2)
	bar.SetTotal(6)
	bar.Add(1)
	bar.Done()
	l := &Load{Bars: b}
	l.Start("loading m", 3<<20)
	l.Add(3 << 20)
	l.Done()
	b.Wait()
	s := out.String()
	for _, want := range []string{"rollout", "3 / 3", "loading m", "3.0 MiB / 3.0 MiB"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q: %q", want, s)
		}
	}
}

// Generations counts finished generations and raises the total as requests arrive; the wrapped
// generator still answers.
func TestGenerationsCounts(t *testing.T) {
	dir := t.TempDir()
	if err := tokenizer.WriteTiny(dir); err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	s := &rollout.Scripted{Tok: tok, EOS: -1, Policy: func(string, int) (string, rollout.FinishReason) { return "ok", "" }}
	var out bytes.Buffer
	b := newOn(&out, 80)
	bar := b.Bar("gen", 0, Count)
	g := Generations(s, bar).(*counted)
	g.Submit(&rollout.Request{Prompt: []int32{1, 2}, N: 3})
	g.Submit(&rollout.Request{Prompt: []int32{3}})
	if g.submitted != 4 {
		t.Errorf("submitted %d, want 4 (3 samples + 1)", g.submitted)
	}
	got := 0
	for !g.Idle() {
		res, err := g.Step()
		if err != nil {
			t.Fatal(err)
		}
		got += len(res)
	}
	bar.Done()
	b.Wait()
	if got != 4 || bar.b.Current() != 4 {
		t.Errorf("%d results, bar at %d; want 4 and 4", got, bar.b.Current())
	}
	if Generations(s, nil) != rollout.Generator(s) {
		t.Error("no bar: the generator should come back as it is")
	}
}

// Phases counts each phase on its own bar and nothing between phases; with bars off it still
// passes every call through.
func TestPhasesCountPerPhase(t *testing.T) {
	dir := t.TempDir()
	if err := tokenizer.WriteTiny(dir); err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	s := &rollout.Scripted{Tok: tok, EOS: -1, Policy: func(string, int) (string, rollout.FinishReason) { return "ok", "" }}
	drain := func(g rollout.Generator) int {
		n := 0
		for !g.Idle() {
			res, err := g.Step()
			if err != nil {
				t.Fatal(err)
			}
			n += len(res)
		}
		return n
	}
	var out bytes.Buffer
	p := NewPhases(s, newOn(&out, 80))
	p.Begin("step 1")
	first := p.bar
	p.Submit(&rollout.Request{Prompt: []int32{1}, N: 2})
	if n := drain(p); n != 2 || first.b.Current() != 2 {
		t.Errorf("phase 1: %d results, bar at %d; want 2 and 2", n, first.b.Current())
	}
	p.Begin("step 2") // a new bar, counted from 0
	p.Submit(&rollout.Request{Prompt: []int32{1}, N: 3})
	if n := drain(p); n != 3 || p.bar.b.Current() != 3 || first.b.Current() != 2 {
		t.Errorf("phase 2: %d results, bars at %d and %d; want 3, 3 and 2", n, p.bar.b.Current(), first.b.Current())
	}
	p.End()
	p.Submit(&rollout.Request{Prompt: []int32{1}})
	if n := drain(p); n != 1 {
		t.Errorf("between phases: %d results, want 1", n)
	}
	off := NewPhases(s, New(nil))
	off.Begin("x")
	off.Submit(&rollout.Request{Prompt: []int32{1}, N: 2})
	if n := drain(off); n != 2 {
		t.Errorf("bars off: %d results, want 2", n)
	}
	off.End()
}

// A run's step bar shows each phase in turn with the run's step numbers and a time left; a
// resumed phase starts where it was; off a terminal it is nil and does nothing.
func TestStepsPhases(t *testing.T) {
	var out bytes.Buffer
	b := newOn(&out, 100)
	s := b.Steps()
	s.Phase("sft", 0, 3, 1) // resumed after step 1
	s.Step()
	s.Step()
	s.Phase("rl", 3, 2, 0)
	s.Step()
	if got := s.bar.Current(); got != 1 {
		t.Errorf("rl bar at %d, want 1", got)
	}
	s.Step()
	s.Done()
	b.Wait()
	got := out.String()
	for _, want := range []string{"sft", "step 3 / 3", "rl", "step 5 / 5", "ETA"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q: %q", want, got)
		}
	}
	r, w, _ := os.Pipe()
	defer r.Close()
	defer w.Close()
	// The time left is the mean step time so far times the steps left: (1 s + 3 s)/2 × 5 = 10 s.
	p := &pace{}
	if got := p.left(5); got != "ETA -" {
		t.Errorf("before a step: %q", got)
	}
	p.add(time.Second)
	p.add(3 * time.Second)
	if got := p.left(5); got != "ETA 10s" {
		t.Errorf("time left %q, want ETA 10s", got)
	}
	off := New(w).Steps()
	if off != nil {
		t.Fatal("a step bar off a terminal")
	}
	off.Phase("rl", 0, 3, 0)
	off.Step()
	off.Done()
}
