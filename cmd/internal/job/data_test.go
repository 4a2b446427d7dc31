package job

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mtgrpo/mtgrpo/cmd/internal/config"
	"github.com/mtgrpo/mtgrpo/cmd/internal/inputs"
	"github.com/mtgrpo/mtgrpo/env"
)

// Several training files are read in order and their rows concatenated; a bad file is named.
func TestLoadTasksFromSeveralFiles(t *testing.T) {
	dir := t.TempDir()
	row := func(source, q string) string {
		return `{"data_source": "` + source + `", "prompt": [{"role": "user", "content": "` + q + `"}], "reward_model": {"ground_truth": "1"}}` + "\n"
	}
	write := func(name string, rows ...string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(strings.Join(rows, "")), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a := write("a.jsonl", row("gsm8k", "a1"), row("gsm8k", "a2"))
	b := write("b.jsonl", row("gsm8k", "b1"))
	other := write("other.jsonl", row("countdown", "c1"))
	c := config.Defaults()
	c.Env.Name = "gsm8k"
	defer inputs.Release()

	ts, _, err := loadTasks(config.Files{b, a}, false, 0, 0, c, &env.Environment{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tk := range ts {
		got = append(got, tk.Prompt[0].Content)
	}
	if strings.Join(got, " ") != "b1 a1 a2" {
		t.Errorf("tasks %q, want b1 a1 a2 (the files' rows in order)", got)
	}
	_, _, err = loadTasks(config.Files{a, other}, false, 0, 0, c, &env.Environment{})
	if err == nil || !strings.Contains(err.Error(), other+" row 1") {
		t.Errorf("a file of another environment's rows: %v, want an error naming %s", err, other)
	}
	missing := filepath.Join(dir, "missing.jsonl")
	_, _, err = loadTasks(config.Files{a, missing}, false, 0, 0, c, &env.Environment{})
	if err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("a missing file: %v, want an error naming it", err)
	}
}
