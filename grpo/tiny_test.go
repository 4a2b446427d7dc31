package grpo

import (
	"fmt"
	"testing"

	"github.com/mtgrpo/mtgrpo/env"
	"github.com/mtgrpo/mtgrpo/model"
	"github.com/mtgrpo/mtgrpo/tokenizer"
	"github.com/mtgrpo/mtgrpo/torch"
)

// tinyTokenizer writes the project's byte-level tokenizer to a temporary directory and loads it.
func tinyTokenizer(t testing.TB) (string, *tokenizer.Tokenizer) {
	t.Helper()
	dir := t.TempDir()
	if err := tokenizer.WriteTiny(dir); err != nil {
		t.Fatal(err)
	}
	tk, err := tokenizer.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return dir, tk
}

// tinyDir writes a randomly initialised tiny Qwen3 model with the byte-level tokenizer to a
// temporary directory (the same model `mtgrpo init --preset tiny` writes).
func tinyDir(t testing.TB, seed uint64, mutate func(*model.Config)) string {
	t.Helper()
	dir, tk := tinyTokenizer(t)
	v := &model.Vocab{Size: tk.VocabSize(), EOS: tk.EOSIDs(), BOS: tk.EOSIDs()[0]}
	cfg, gen, err := model.PresetConfig("qwen3", "tiny", v)
	if err != nil {
		t.Fatal(err)
	}
	if mutate != nil {
		mutate(cfg)
	}
	err = torch.Run(func() error {
		m, err := model.New(cfg, gen, model.Options{DType: "float32"}, seed)
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

// sliceSource serves tasks in order, wrapping around.
type sliceSource struct {
	tasks []env.Task
	pos   int
}

func (s *sliceSource) Next(n int) ([]env.Task, error) {
	if len(s.tasks) == 0 {
		return nil, fmt.Errorf("no tasks")
	}
	out := make([]env.Task, n)
	for i := range out {
		out[i] = s.tasks[s.pos%len(s.tasks)]
		s.pos++
	}
	return out, nil
}

// tasksOf generates n tasks of a built-in environment.
func tasksOf(t testing.TB, e *env.Environment, n int, seed int64) []env.Task {
	t.Helper()
	rows, err := e.Generate(n, seed)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]env.Task, len(rows))
	for i, r := range rows {
		out[i] = env.TaskFromRow(r, i)
	}
	return out
}
