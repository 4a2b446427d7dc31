package setup

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/mtgrpo/mtgrpo/model"
	"github.com/mtgrpo/mtgrpo/rollout"
	"github.com/mtgrpo/mtgrpo/tokenizer"
	"github.com/mtgrpo/mtgrpo/torch"
)

// tinyDir writes the tiny model as `mtgrpo init` does.
func tinyDir(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), "m")
	if err := tokenizer.WriteTiny(dir); err != nil {
		t.Fatal(err)
	}
	tk, err := tokenizer.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	err = torch.Run(func() error {
		m, err := model.NewPreset("qwen3", "tiny", &model.Vocab{Size: tk.VocabSize(), BOS: tk.EOSIDs()[0], EOS: tk.EOSIDs()}, 1, model.Options{})
		if err != nil {
			return err
		}
		defer m.Close()
		m.TokenizerDir = dir
		return m.Export(dir, model.ExportOptions{})
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// Open gives a working engine: greedy generation of a prompt is the same twice (same weights,
// fresh cache slots), and the load is reported through Progress.
func TestOpenGenerates(t *testing.T) {
	dir := tinyDir(t)
	var started, done int
	prog := &countProgress{start: &started, done: &done}
	err := torch.Run(func() error {
		p, err := Open(Options{Dir: dir, Slots: 2, MaxLen: 64, Progress: prog})
		if err != nil {
			return err
		}
		defer p.Close()
		defer p.Close() // twice is fine
		req := func() *rollout.Request {
			return &rollout.Request{Prompt: []int32{40, 41, 42}, N: 2, Sampling: rollout.Sampling{Greedy: true, MaxNewTokens: 5}}
		}
		a, err := p.Engine.Generate([]*rollout.Request{req()})
		if err != nil {
			return err
		}
		b, err := p.Engine.Generate([]*rollout.Request{req()})
		if err != nil {
			return err
		}
		if len(a[0]) != 2 || len(a[0][0].Tokens) == 0 || a[0][0].Text != b[0][1].Text {
			t.Errorf("greedy outputs %q and %q", a[0][0].Text, b[0][1].Text)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if started != 1 || done != 1 {
		t.Errorf("progress started %d, done %d times", started, done)
	}
}

type countProgress struct{ start, done *int }

func (c *countProgress) Start(string, int64) { *c.start++ }
func (c *countProgress) Add(int64)           {}
func (c *countProgress) Done()               { *c.done++ }

func TestOpenErrors(t *testing.T) {
	cases := map[string]Options{
		"no model directory":      {Slots: 1, MaxLen: 8},
		"both must be at least 1": {Dir: "x", Slots: 0, MaxLen: 8},
		"tokenizer":               {Dir: t.TempDir(), Slots: 1, MaxLen: 8},
	}
	for want, o := range cases {
		err := torch.Run(func() error { _, err := Open(o); return err })
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Open(%+v) = %v, want %q", o, err, want)
		}
	}
}
