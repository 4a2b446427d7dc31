package progress

import (
	"bytes"
	"os"
	"strings"
	"testing"

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
