package model

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mtgrpo/mtgrpo/torch/safetensors"
)

// Reference numerics from Hugging Face transformers. scripts/fixtures/make_hf_fixtures.py builds
// tiny random models with transformers (fp32, eager attention), saves them with save_pretrained
// and records their logits and greedy continuations; these tests load the same directories with
// this package and must agree: logits within 1e-4, greedy tokens exactly.

const hfFixtures = "testdata/hf"

// hfModels are the fixture directories the script writes.
var hfModels = []string{"llama", "llama_tied", "llama3_rope", "qwen2", "qwen2_untied_sharded", "qwen3", "qwen3_tied"}

type hfReference struct {
	Transformers    string    `json:"transformers"`
	Prompts         [][]int32 `json:"prompts"`
	PaddedLengths   []int     `json:"padded_lengths"`
	Greedy          [][]int32 `json:"greedy"`
	GreedyMinMargin []float64 `json:"greedy_min_margin"`
}

func hfFixture(t *testing.T, name string) (string, *hfReference, *safetensors.File) {
	t.Helper()
	dir := filepath.Join(hfFixtures, name)
	if _, err := os.Stat(hfFixtures); err != nil {
		if os.Getenv("CI") == "true" { // committed: absent means a broken checkout
			t.Fatalf("%s is absent: the transformers fixtures are part of the repository", hfFixtures)
		}
		t.Skipf("%s is absent: run scripts/fixtures/make_hf_fixtures.py on a host with transformers to make the reference fixtures", hfFixtures)
	}
	b, err := os.ReadFile(filepath.Join(dir, "reference.json"))
	if err != nil {
		t.Fatalf("fixture %s incomplete (re-run scripts/fixtures/make_hf_fixtures.py): %v", name, err)
	}
	var ref hfReference
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	f, err := safetensors.Open(filepath.Join(dir, "reference.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return dir, &ref, f
}

func refLogits(t *testing.T, f *safetensors.File, name string) []float32 {
	t.Helper()
	b, err := f.Data(name)
	if err != nil {
		t.Fatal(err)
	}
	v, err := safetensors.DecodeF32(b)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestHFLogits(t *testing.T) {
	for _, name := range hfModels {
		t.Run(name, func(t *testing.T) {
			dir, ref, f := hfFixture(t, name)
			onTorch(t, func() error {
				m, err := Load(dir, Options{Device: testDevice})
				if err != nil {
					return err
				}
				defer m.Close()
				V := m.Config.VocabSize
				for i, p := range ref.Prompts {
					want := refLogits(t, f, "prompt_"+string(rune('0'+i)))
					if d := maxAbsDiff(seqLogits(t, m, p), want); d > 1e-4 {
						t.Errorf("prompt %d: logits differ from transformers %s by %g", i, ref.Transformers, d)
					}
				}
				// The right-padded batch, compared at real tokens only.
				want := refLogits(t, f, "padded")
				b, err := NewBatch(ref.Prompts, false)
				if err != nil {
					return err
				}
				l, err := m.Logits(b)
				if err != nil {
					return err
				}
				got := l.Float32s()
				_, cols := b.Shape()
				for i, p := range ref.Prompts {
					o := i * cols * V
					if d := maxAbsDiff(got[o:o+len(p)*V], want[o:o+len(p)*V]); d > 1e-4 {
						t.Errorf("padded batch row %d differs from transformers by %g", i, d)
					}
				}
				return nil
			})
		})
	}
}

// Greedy decoding through the KV cache reproduces transformers' generate(do_sample=False).
func TestHFGreedy(t *testing.T) {
	for _, name := range hfModels {
		t.Run(name, func(t *testing.T) {
			dir, ref, _ := hfFixture(t, name)
			onTorch(t, func() error {
				m, err := Load(dir, Options{Device: testDevice})
				if err != nil {
					return err
				}
				defer m.Close()
				c, err := m.NewKVCache(len(ref.Prompts), 64)
				if err != nil {
					return err
				}
				defer c.Close()
				for i, p := range ref.Prompts {
					logits, err := m.Prefill(c, []int{i}, [][]int32{p})
					if err != nil {
						return err
					}
					var got []int32
					for range ref.Greedy[i] {
						next := int32(logits.Argmax(-1, false).Int())
						got = append(got, next)
						if logits, err = m.Decode(c, []int{i}, []int32{next}); err != nil {
							return err
						}
					}
					if !slices.Equal(got, ref.Greedy[i]) {
						if ref.GreedyMinMargin[i] < 1e-4 {
							t.Logf("prompt %d: %v vs transformers %v, but a top-2 margin was %g (a near tie)", i, got, ref.Greedy[i], ref.GreedyMinMargin[i])
							continue
						}
						t.Errorf("prompt %d: greedy %v, transformers %v", i, got, ref.Greedy[i])
					}
				}
				return nil
			})
		})
	}
}

// TestHFExportForTransformers is the Go half of the check that our export loads in transformers:
// with MTGRPO_HF_EXPORT_DIR set, it loads every reference fixture and writes it back out through
// Export into $MTGRPO_HF_EXPORT_DIR/<name> (the sharded fixture in shards of 40 KB, so that our
// index is read too). scripts/fixtures/make_hf_fixtures.py --check-export then loads each export
// with transformers and compares its logits with the fixture's reference logits
// (scripts/fixtures/hf_fixtures.sh runs the whole sequence).
func TestHFExportForTransformers(t *testing.T) {
	out := os.Getenv("MTGRPO_HF_EXPORT_DIR")
	if out == "" {
		t.Skip("MTGRPO_HF_EXPORT_DIR is not set (see scripts/fixtures/hf_fixtures.sh)")
	}
	if _, err := os.Stat(hfFixtures); err != nil {
		t.Fatalf("%s is absent: run scripts/fixtures/make_hf_fixtures.py first", hfFixtures)
	}
	for _, name := range hfModels {
		dir, _, _ := hfFixture(t, name)
		onTorch(t, func() error {
			m, err := Load(dir, Options{Device: "cpu"})
			if err != nil {
				return err
			}
			defer m.Close()
			o := ExportOptions{}
			if strings.Contains(name, "sharded") {
				o.MaxShardBytes = 40_000
			}
			return m.Export(filepath.Join(out, name), o)
		})
	}
}
