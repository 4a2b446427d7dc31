package model

import (
	"os"
	"path/filepath"
	"testing"
)

// recorder is a Progress that keeps what it was told.
type recorder struct {
	label        string
	total, added int64
	starts, adds int
	dones        int
}

func (r *recorder) Start(label string, total int64) { r.label, r.total = label, total; r.starts++ }
func (r *recorder) Add(n int64)                     { r.added += n; r.adds++ }
func (r *recorder) Done()                           { r.dones++ }

// Load reports through Options.Progress: one Start with the checkpoint's tensor bytes, one Add per
// weight summing to that total, one Done. The total is the safetensors file less its header: the
// 8-byte length prefix and the JSON header of the stored tensors.
func TestLoadReportsProgress(t *testing.T) {
	onTorch(t, func() error {
		m := testModel(t, "qwen3", true, 5)
		defer m.Close()
		dir := t.TempDir()
		if err := m.Export(dir, ExportOptions{}); err != nil {
			return err
		}
		st, err := os.Stat(filepath.Join(dir, "model.safetensors"))
		if err != nil {
			return err
		}
		var r recorder
		m2, err := Load(dir, Options{Device: testDevice, Progress: &r})
		if err != nil {
			return err
		}
		defer m2.Close()
		// Weights: the parameters in the model's dtype, 4 bytes each in float32 (the tied head is
		// stored once).
		want := int64(m.DType.Size()) * m.NumParameters()
		if r.starts != 1 || r.dones != 1 || r.total != want || r.added != want || r.adds != len(m.weights()) {
			t.Errorf("progress %+v, want one start and done, total = added = %d over %d adds", r, want, len(m.weights()))
		}
		if r.total >= st.Size() {
			t.Errorf("total %d not below the file size %d", r.total, st.Size())
		}
		if r.label != "loading "+dir {
			t.Errorf("label %q", r.label)
		}
		return nil
	})
}

// Export reports through ExportOptions.Progress: one Start with the bytes of the saved tensors
// (in the saved dtype: 2 per parameter for bfloat16), one Add per tensor summing to it, one Done.
func TestExportReportsProgress(t *testing.T) {
	onTorch(t, func() error {
		m := testModelIn(t, "float32", "qwen3", true, 6) // sizes below are per float32 weight
		defer m.Close()
		for _, c := range []struct {
			dtype string
			size  int64
		}{{"", 4}, {"bfloat16", 2}} {
			var r recorder
			dir := t.TempDir()
			if err := m.Export(dir, ExportOptions{DType: c.dtype, Progress: &r}); err != nil {
				return err
			}
			want := c.size * m.NumParameters() // tied: the head is not saved
			if r.starts != 1 || r.dones != 1 || r.total != want || r.added != want || r.adds != len(m.weights()) {
				t.Errorf("%q: progress %+v, want one start and done, total = added = %d over %d adds", c.dtype, r, want, len(m.weights()))
			}
			if r.label != "exporting "+dir {
				t.Errorf("label %q", r.label)
			}
		}
		return nil
	})
}
