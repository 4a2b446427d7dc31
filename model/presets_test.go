package model

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/mtgrpo/mtgrpo/tokenizer"
)

// The real-size presets have exactly the parameter counts of the models they are shaped after:
// Qwen2.5-0.5B 494,032,768 and Llama-3.2-1B 1,235,814,400 (embedding 128256·2048 = 262,668,288;
// per layer q 2048² + k, v 2048·512 each + o 2048² + MLP 3·2048·8192 + 2 norms = 60,821,504, times
// 16; final norm 2048). Qwen2.5-7B has 7,615,616,512: embedding and untied head 152064·3584 =
// 544,997,376 each; per layer q and o 3584² = 12,845,056 each, k and v 512·3584 = 1,835,008 each,
// q/k/v biases 3584 + 512 + 512, MLP 3·3584·18944 = 203,685,888, 2 norms 7168: 233,057,792, times
// 28; final norm 3584. Config.NumParameters, which builds no tensor, gives the same counts.
func TestPresetParameterCounts(t *testing.T) {
	onTorch(t, func() error {
		for _, tc := range []struct {
			arch, preset string
			want         int64
		}{{"qwen2", "qwen2.5-0.5b", 494032768}, {"llama", "llama3.2-1b", 1235814400}, {"qwen2", "qwen2.5-7b", 7615616512}} {
			c, g, err := PresetConfig(tc.arch, tc.preset, nil)
			if err != nil {
				return err
			}
			m, err := newModel(c, Options{})
			if err != nil {
				return err
			}
			if n := m.NumParameters(); n != tc.want {
				t.Errorf("%s %s: %d parameters, want %d", tc.arch, tc.preset, n, tc.want)
			}
			if n, err := c.NumParameters(); err != nil || n != tc.want {
				t.Errorf("%s %s: Config.NumParameters %d, %v; want %d", tc.arch, tc.preset, n, err, tc.want)
			}
			if ids := StopTokenIDs(c, g); len(ids) < 2 {
				t.Errorf("%s: stop ids %v", tc.preset, ids)
			}
			m.Close()
		}
		if _, _, err := PresetConfig("mistral", "tiny", &Vocab{Size: 10}); err == nil {
			t.Errorf("unknown architecture accepted")
		}
		if _, _, err := PresetConfig("qwen3", "tiny", nil); err == nil || !contains(err.Error(), "needs a vocabulary") {
			t.Errorf("tiny without a tokenizer: %v", err)
		}
		return nil
	})
}

// What `mtgrpo init --preset tiny` does, for each architecture: the tiny tokenizer sizes the model,
// the directory loads back bit-exact, and its config names the tokenizer's stop tokens.
func TestInitTinyDirectory(t *testing.T) {
	for _, arch := range []string{"qwen2", "qwen3", "llama"} {
		t.Run(arch, func(t *testing.T) {
			dir := t.TempDir()
			if err := tokenizer.WriteTiny(dir); err != nil {
				t.Fatal(err)
			}
			tk, err := tokenizer.Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			_, bos, _ := tk.SpecialToken("<|endoftext|>")
			v := &Vocab{Size: tk.VocabSize(), BOS: bos, EOS: tk.EOSIDs()}
			onTorch(t, func() error {
				m, err := NewPreset(arch, "tiny", v, 7, Options{})
				if err != nil {
					return err
				}
				defer m.Close()
				m.TokenizerDir = dir
				if err := m.Export(dir, ExportOptions{}); err != nil {
					return err
				}
				m2, err := Load(dir, Options{})
				if err != nil {
					return err
				}
				defer m2.Close()
				sameWeights(t, m, m2)
				if m2.Config.VocabSize != tk.VocabSize() || m2.Config.HiddenSize != 64 {
					t.Errorf("vocab %d hidden %d", m2.Config.VocabSize, m2.Config.HiddenSize)
				}
				if got := StopTokenIDs(m2.Config, m2.Generation); len(got) != len(v.EOS) || got[0] != v.EOS[0] {
					t.Errorf("stop ids %v, want %v", got, v.EOS)
				}
				// The same seed gives the same model: the demo's default needs no files.
				m3, err := NewPreset(arch, "tiny", v, 7, Options{})
				if err != nil {
					return err
				}
				defer m3.Close()
				sameWeights(t, m, m3)
				return nil
			})
			if _, err := os.Stat(filepath.Join(dir, "tokenizer_config.json")); err != nil {
				t.Error(err)
			}
		})
	}
}
