package model

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/mtgrpo/mtgrpo/torch"
	"github.com/mtgrpo/mtgrpo/torch/safetensors"
)

// sameWeights reports the first parameter whose values differ (bit for bit) between a and b.
func sameWeights(t *testing.T, a, b *Model) {
	t.Helper()
	pa, pb := a.Parameters(), b.Parameters()
	if len(pa) != len(pb) {
		t.Errorf("%d vs %d parameters", len(pa), len(pb))
		return
	}
	for i := range pa {
		if pa[i].Name != pb[i].Name || !torch.Equal(pa[i].Tensor, pb[i].Tensor) {
			t.Errorf("parameter %s differs after the round trip", pa[i].Name)
			return
		}
	}
}

// Load → Export → Load is bit-exact for every architecture, tied and untied, single-file and
// sharded; the second export writes the same bytes as the first; a tied head is not saved.
func TestExportLoadRoundTrip(t *testing.T) {
	for _, arch := range []string{"llama", "qwen2", "qwen3"} {
		for _, tied := range []bool{true, false} {
			t.Run(arch, func(t *testing.T) {
				onTorch(t, func() error {
					m := testModel(t, arch, tied, 21)
					defer m.Close()
					d1, d2 := t.TempDir(), t.TempDir()
					shard := int64(0)
					if !tied {
						shard = 10000 * int64(m.DType.Size()) // several shards and an index
					}
					if err := m.Export(d1, ExportOptions{MaxShardBytes: shard}); err != nil {
						return err
					}
					m1, err := Load(d1, Options{Device: testDevice, DType: testDType})
					if err != nil {
						return err
					}
					defer m1.Close()
					sameWeights(t, m, m1)
					if err := m1.Export(d2, ExportOptions{MaxShardBytes: shard}); err != nil {
						return err
					}
					files1, _ := filepath.Glob(filepath.Join(d1, "*"))
					if !tied && !fileExists(filepath.Join(d1, "model.safetensors.index.json")) {
						t.Errorf("no index for a sharded export: %v", files1)
					}
					for _, f := range files1 {
						a, _ := os.ReadFile(f)
						b, err := os.ReadFile(filepath.Join(d2, filepath.Base(f)))
						if err != nil || !bytes.Equal(a, b) {
							t.Errorf("%s differs between the two exports (%v)", filepath.Base(f), err)
						}
					}
					ck, err := safetensors.OpenDir(d1)
					if err != nil {
						return err
					}
					defer ck.Close()
					_, err = ck.Info("lm_head.weight")
					if hasHead := err == nil; hasHead == tied {
						t.Errorf("tied=%v but lm_head.weight saved=%v", tied, hasHead)
					}
					return nil
				})
			})
		}
	}
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// A bfloat16 model exported and loaded as float32 holds the same numbers; a float32 checkpoint
// loads into bfloat16 rounded. The saved dtype is recorded as torch_dtype.
func TestLoadConvertsDTypes(t *testing.T) {
	onTorch(t, func() error {
		cfg := testConfig(t, "qwen2", true)
		m, err := New(cfg, nil, Options{Device: testDevice, DType: "bfloat16"}, 23)
		if err != nil {
			return err
		}
		defer m.Close()
		dir := t.TempDir()
		if err := m.Export(dir, ExportOptions{}); err != nil {
			return err
		}
		c, err := LoadConfig(dir)
		if err != nil {
			return err
		}
		if c.TorchDtype != "bfloat16" {
			t.Errorf("torch_dtype %q, want bfloat16", c.TorchDtype)
		}
		m32, err := Load(dir, Options{Device: testDevice, DType: "float32"})
		if err != nil {
			return err
		}
		defer m32.Close()
		for i, p := range m.Parameters() {
			q := m32.Parameters()[i].Tensor
			if q.DType() != torch.Float32 || !torch.Equal(p.Tensor.ToDType(torch.Float32), q) {
				t.Errorf("%s: bf16 → f32 load changed values (dtype %s)", p.Name, q.DType())
				break
			}
		}
		// f32 export, bf16 load: equal to rounding the f32 weights.
		dir32 := t.TempDir()
		if err := m32.Export(dir32, ExportOptions{}); err != nil {
			return err
		}
		mb, err := Load(dir32, Options{Device: testDevice, DType: "bf16"})
		if err != nil {
			return err
		}
		defer mb.Close()
		sameWeights(t, m, mb)
		// "auto" takes config.json's torch_dtype: bfloat16 for the first export.
		ma, err := Load(dir, Options{Device: testDevice, DType: "auto"})
		if err != nil {
			return err
		}
		defer ma.Close()
		if ma.DType != torch.BFloat16 {
			t.Errorf("auto dtype %s, want bfloat16", ma.DType)
		}
		if _, err := Load(dir, Options{DType: "int8"}); err == nil {
			t.Errorf("dtype int8 accepted")
		}
		return nil
	})
}

// rewrite loads every tensor of the checkpoint in dir, lets edit change the map, and saves it back
// as a single model.safetensors (removing any shards).
func rewrite(t *testing.T, dir string, edit func(map[string]*torch.Tensor)) {
	t.Helper()
	ck, err := safetensors.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	ts := map[string]*torch.Tensor{}
	for _, n := range ck.Names() {
		x, err := torch.LoadTensor(ck, n, torch.CPU, torch.Float32)
		if err != nil {
			t.Fatal(err)
		}
		ts[n] = x
	}
	ck.Close()
	edit(ts)
	if err := torch.SaveSafetensors(filepath.Join(dir, "model.safetensors"), ts, nil); err != nil {
		t.Fatal(err)
	}
}

func editConfig(t *testing.T, dir string, edit func(map[string]any)) {
	t.Helper()
	p := filepath.Join(dir, "config.json")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	b, _ = json.Marshal(m)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Every defect of a checkpoint directory is an error that names the tensor, field or file.
func TestLoadRefusesBadCheckpoints(t *testing.T) {
	onTorch(t, func() error {
		m := testModel(t, "qwen3", false, 25)
		defer m.Close()
		fresh := func(shard int64) string {
			d := t.TempDir()
			if err := m.Export(d, ExportOptions{MaxShardBytes: shard}); err != nil {
				t.Fatal(err)
			}
			return d
		}
		cases := []struct {
			name  string
			setup func() string
			want  string
		}{
			{"missing tensor", func() string {
				d := fresh(0)
				rewrite(t, d, func(ts map[string]*torch.Tensor) { delete(ts, "model.layers.1.mlp.up_proj.weight") })
				return d
			}, "missing tensors: model.layers.1.mlp.up_proj.weight"},
			{"unexpected tensor", func() string {
				d := fresh(0)
				rewrite(t, d, func(ts map[string]*torch.Tensor) {
					ts["model.layers.0.self_attn.q_proj.bias"] = torch.Zeros([]int64{64}, torch.Float32, torch.CPU)
				})
				return d
			}, "unexpected tensors (not in the qwen3 weight table): model.layers.0.self_attn.q_proj.bias"},
			{"wrong shape", func() string {
				d := fresh(0)
				rewrite(t, d, func(ts map[string]*torch.Tensor) {
					ts["model.layers.0.self_attn.k_norm.weight"] = torch.Ones([]int64{8}, torch.Float32, torch.CPU)
				})
				return d
			}, "tensor model.layers.0.self_attn.k_norm.weight has shape [8], the config implies [16]"},
			{"truncated shard", func() string {
				d := fresh(40000)
				p := filepath.Join(d, safetensors.ShardName(1, countShards(t, d)))
				st, err := os.Stat(p)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.Truncate(p, st.Size()-100); err != nil {
					t.Fatal(err)
				}
				return d
			}, "model-00002-of-"},
			{"unknown architecture", func() string {
				d := fresh(0)
				editConfig(t, d, func(c map[string]any) { c["architectures"] = []string{"MistralForCausalLM"} })
				return d
			}, `architectures: "MistralForCausalLM"`},
			{"unknown model_type", func() string {
				d := fresh(0)
				editConfig(t, d, func(c map[string]any) { c["model_type"] = "gemma" })
				return d
			}, `model_type "gemma" is not supported`},
			{"unsupported rope type", func() string {
				d := fresh(0)
				editConfig(t, d, func(c map[string]any) {
					c["rope_scaling"] = map[string]any{"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}
				})
				return d
			}, `rope_scaling.rope_type "yarn" is not supported`},
			{"num_hidden_layers 2e9", func() string {
				d := fresh(0)
				editConfig(t, d, func(c map[string]any) { c["num_hidden_layers"] = 2000000000 })
				return d
			}, "num_hidden_layers 2000000000 is larger than this program supports"},
			{"head_dim 2^40", func() string {
				d := fresh(0)
				editConfig(t, d, func(c map[string]any) { c["head_dim"] = 1 << 40 })
				return d
			}, "head_dim 1099511627776 is larger than this program supports"},
			{"more layers than the checkpoint", func() string {
				d := fresh(0)
				editConfig(t, d, func(c map[string]any) { c["num_hidden_layers"] = 40 })
				return d
			}, "num_hidden_layers is 40, but the checkpoint holds 2 layers (model.layers.0 to 1)"},
			{"no weights", func() string {
				d := fresh(0)
				os.Remove(filepath.Join(d, "model.safetensors"))
				return d
			}, "holds neither model.safetensors nor model.safetensors.index.json"},
		}
		for _, tc := range cases {
			dir := tc.setup()
			got, err := Load(dir, Options{Device: testDevice})
			if err == nil {
				got.Close()
				t.Errorf("%s: loaded", tc.name)
				continue
			}
			t.Logf("%s: %v", tc.name, err)
			if !contains(err.Error(), tc.want) {
				t.Errorf("%s: error %q does not contain %q", tc.name, err, tc.want)
			}
		}
		return nil
	})
}

func countShards(t *testing.T, dir string) int {
	ix, err := safetensors.ReadIndex(filepath.Join(dir, "model.safetensors.index.json"))
	if err != nil {
		t.Fatal(err)
	}
	return len(ix.Shards())
}

// Old checkpoints carry rotary_emb.inv_freq buffers, and some tied ones still store lm_head.weight:
// both are ignored, as transformers ignores them.
func TestLoadIgnoresBuffersAndTiedHead(t *testing.T) {
	onTorch(t, func() error {
		m := testModel(t, "llama", true, 27)
		defer m.Close()
		d := t.TempDir()
		if err := m.Export(d, ExportOptions{}); err != nil {
			return err
		}
		rewrite(t, d, func(ts map[string]*torch.Tensor) {
			ts["model.layers.0.self_attn.rotary_emb.inv_freq"] = torch.Ones([]int64{4}, torch.Float32, torch.CPU)
			ts["lm_head.weight"] = ts["model.embed_tokens.weight"].Clone()
		})
		m2, err := Load(d, Options{Device: testDevice})
		if err != nil {
			return err
		}
		defer m2.Close()
		sameWeights(t, m, m2)
		if m2.LMHead.Weight != m2.EmbedTokens {
			t.Errorf("tied head is not the embedding")
		}
		return nil
	})
}
