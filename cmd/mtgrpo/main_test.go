package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mtgrpo/mtgrpo/env/data"
	"github.com/mtgrpo/mtgrpo/model"
	"github.com/mtgrpo/mtgrpo/torch"
)

// TestInitWritesLoadableModel runs `mtgrpo init` for each architecture and loads the result.
func TestInitWritesLoadableModel(t *testing.T) {
	for _, arch := range []string{"qwen2", "qwen3", "llama"} {
		dir := filepath.Join(t.TempDir(), arch)
		if err := run([]string{"init", "--arch", arch, "--preset", "tiny", "--seed", "3", "--out", dir}); err != nil {
			t.Fatalf("init %s: %v", arch, err)
		}
		for _, f := range []string{"config.json", "generation_config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"} {
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				t.Errorf("init %s: %s missing: %v", arch, f, err)
			}
		}
		err := torch.Run(func() error {
			m, err := model.Load(dir, model.Options{Device: "cpu"})
			if err != nil {
				return err
			}
			defer m.Close()
			if got := m.Config.ModelType; got != arch {
				t.Errorf("model_type %q, want %q", got, arch)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("load %s: %v", arch, err)
		}
	}
}

// TestDataGenAndCheck writes generated rows in both formats and reads them back; a malformed row
// is an error naming the row and field, or is skipped when asked.
func TestDataGenAndCheck(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"t.parquet", "t.jsonl"} {
		path := filepath.Join(dir, name)
		if err := run([]string{"data", "gen", "--task", "countdown", "--n", "7", "--seed", "2", "--out", path}); err != nil {
			t.Fatalf("data gen %s: %v", name, err)
		}
		rows, _, err := data.Read(path, data.Options{})
		if err != nil || len(rows) != 7 {
			t.Fatalf("%s: %d rows, %v; want 7", name, len(rows), err)
		}
		if err := run([]string{"data", "check", path}); err != nil {
			t.Errorf("data check %s: %v", name, err)
		}
	}
	// --set shapes the rows as the key does in a run: every answer of capped problems is at most
	// the cap (gsm8k_code is the MT-GRPO scripts' name of gsm8k_python).
	capped := filepath.Join(dir, "capped.jsonl")
	if err := run([]string{"data", "gen", "--task", "gsm8k_code", "--set", "env.max_number=12", "--n", "50", "--out", capped}); err != nil {
		t.Fatal(err)
	}
	rows, _, err := data.Read(capped, data.Options{})
	if err != nil || len(rows) != 50 {
		t.Fatalf("capped: %d rows, %v", len(rows), err)
	}
	for i, r := range rows {
		if v, err := strconv.Atoi(r.RewardModel.GroundTruth); err != nil || v < 1 || v > 12 {
			t.Fatalf("capped row %d: answer %q, want 1 to 12", i, r.RewardModel.GroundTruth)
		}
	}
	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(bad, []byte(`{"prompt": 5}`+"\n"+`{"prompt": "2+2?"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err = run([]string{"data", "check", bad})
	if err == nil || !strings.Contains(err.Error(), "row 1") || !strings.Contains(err.Error(), "prompt") {
		t.Errorf("malformed row: %v, want an error naming row 1 and prompt", err)
	}
	if err := run([]string{"data", "check", "--skip-invalid", bad}); err != nil {
		t.Errorf("--skip-invalid: %v", err)
	}
}
