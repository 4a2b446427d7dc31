package model

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mtgrpo/mtgrpo/torch"
	"github.com/mtgrpo/mtgrpo/torch/safetensors"
)

// peftFixture is adapter_config.json as PEFT 0.13's save_pretrained writes it for
// LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], lora_dropout=0.05,
// task_type="CAUSAL_LM"): every field, keys sorted, target_modules in the set's order, with the
// later releases' exclude_modules, lora_bias and eva_config beside them.
const peftFixture = `{
  "alpha_pattern": {},
  "auto_mapping": null,
  "base_model_name_or_path": "Qwen/Qwen2.5-0.5B",
  "bias": "none",
  "eva_config": null,
  "exclude_modules": null,
  "fan_in_fan_out": false,
  "inference_mode": true,
  "init_lora_weights": true,
  "layer_replication": null,
  "layers_pattern": null,
  "layers_to_transform": null,
  "loftq_config": {},
  "lora_alpha": 8,
  "lora_bias": false,
  "lora_dropout": 0.05,
  "megatron_config": null,
  "megatron_core": "megatron.core",
  "modules_to_save": null,
  "peft_type": "LORA",
  "r": 4,
  "rank_pattern": {},
  "revision": null,
  "target_modules": [
    "v_proj",
    "q_proj"
  ],
  "task_type": "CAUSAL_LM",
  "use_dora": false,
  "use_rslora": false
}
`

// writePEFTFixture writes an adapter directory in PEFT's layout by hand, without this package's
// writer: the config above and, for q_proj and v_proj of every layer of base, lora_A [4, in] and
// lora_B [out, 4] in bfloat16 (as PEFT saves a bf16 model's adapters), values from a fixed formula.
// It returns the float32 values the bf16 tensors hold, by tensor name.
func writePEFTFixture(t *testing.T, dir string, base *Model) map[string][]float32 {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, AdapterConfigFile), []byte(peftFixture), 0o644); err != nil {
		t.Fatal(err)
	}
	w := safetensors.NewWriter()
	w.SetMetadata("format", "pt")
	vals := map[string][]float32{}
	for i := range base.Layers {
		for j, mod := range []string{ModuleQ, ModuleV} {
			ws := base.linear(fmt.Sprintf("model.layers.%d.self_attn.%s", i, mod)).Weight.Shape()
			for k, p := range []struct {
				suffix string
				shape  []int64
			}{{"lora_A", []int64{4, ws[1]}}, {"lora_B", []int64{ws[0], 4}}} {
				x := make([]float32, p.shape[0]*p.shape[1])
				for e := range x { // a deterministic pattern in ±0.25
					x[e] = float32((e*7+i*13+j*5+k*3)%17-8) / 32
				}
				name := fmt.Sprintf("base_model.model.model.layers.%d.self_attn.%s.%s.weight", i, mod, p.suffix)
				b := safetensors.EncodeBF16(x)
				vals[name], _ = safetensors.DecodeBF16(b)
				if err := w.Add(name, safetensors.BF16, p.shape, b); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if err := w.WriteFile(filepath.Join(dir, AdapterWeightsFile)); err != nil {
		t.Fatal(err)
	}
	return vals
}

// mergeByHand writes base's weights with W + scale·B·A folded in (computed here in float64 from
// the adapter file's tensors, by name, as PEFT's merge does) into a model directory.
func mergeByHand(t *testing.T, base *Model, adapter map[string][]float32, scale float64) string {
	t.Helper()
	dir := t.TempDir()
	m32 := f32Twin(t, base)
	defer m32.Close()
	s := torch.NewScope()
	defer s.Close()
	torch.NoGrad(func() {
		for name, a := range adapter {
			mod, ok := strings.CutSuffix(strings.TrimPrefix(name, peftPrefix), ".lora_A.weight")
			if !ok {
				continue
			}
			l := m32.linear(mod)
			ws := l.Weight.Shape()
			out, in, r := int(ws[0]), int(ws[1]), len(a)/int(ws[1])
			b := adapter[peftPrefix+mod+".lora_B.weight"]
			w := l.Weight.Float32s()
			for o := range out {
				for i := range in {
					var d float64
					for k := range r {
						d += float64(b[o*r+k]) * float64(a[k*in+i])
					}
					w[o*in+i] = float32(float64(w[o*in+i]) + scale*d)
				}
			}
			l.Weight.Copy_(torch.FromSlice(w, ws[0], ws[1]).ToDevice(l.Weight.Device()))
		}
	})
	if err := m32.Export(dir, ExportOptions{}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// readAdapterFile is an adapter file's tensors in float32, by name.
func readAdapterFile(t *testing.T, dir string) (map[string][]float32, map[string][]int64) {
	t.Helper()
	f, err := safetensors.Open(filepath.Join(dir, AdapterWeightsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	vals, shapes := map[string][]float32{}, map[string][]int64{}
	for _, n := range f.Names() {
		info, _ := f.Info(n)
		if info.DType != safetensors.F32 {
			t.Errorf("%s is %s, want F32", n, info.DType)
		}
		b, err := f.Data(n)
		if err != nil {
			t.Fatal(err)
		}
		vals[n], _ = safetensors.DecodeF32(b)
		shapes[n] = info.Shape
	}
	return vals, shapes
}

// The saved directory is PEFT's: adapter_config.json's fields, and the tensors by PEFT's names
// with A [r, in] and B [out, r] in float32. Read back onto a fresh base it gives the adapted
// model's logits bit for bit, and the base with W + scale·B·A folded in by hand from the file's
// tensors gives them to merging's rounding (as TestLoRAMatchesMergedWeights).
func TestSaveAdaptersIsPEFTLayout(t *testing.T) {
	onTorch(t, func() error {
		c := LoRAConfig{Rank: 4, Alpha: 8, Dropout: 0.05, TargetModules: []string{ModuleQ, ModuleDown}, RSLoRA: true}
		m := loraModel(t, "qwen2", false, c)
		defer m.Close()
		dir := t.TempDir()
		if err := m.SaveAdapters(dir, AdapterBase{NameOrPath: "Qwen/Qwen2.5-0.5B", Revision: "abc123", Fingerprint: "sha256:00"}); err != nil {
			return err
		}
		var got map[string]any
		b, _ := os.ReadFile(filepath.Join(dir, AdapterConfigFile))
		if err := json.Unmarshal(b, &got); err != nil {
			return err
		}
		want := map[string]any{"peft_type": "LORA", "r": 4.0, "lora_alpha": 8.0, "lora_dropout": 0.05, "use_rslora": true,
			"bias": "none", "task_type": "CAUSAL_LM", "base_model_name_or_path": "Qwen/Qwen2.5-0.5B", "revision": "abc123",
			"fan_in_fan_out": false, "inference_mode": true, "init_lora_weights": true, "modules_to_save": nil,
			"use_dora": false, "layers_to_transform": nil, "target_modules": []any{"q_proj", "down_proj"}}
		for k, v := range want {
			if fmt.Sprint(got[k]) != fmt.Sprint(v) {
				t.Errorf("adapter_config.json %s = %v, want %v", k, got[k], v)
			}
		}
		vals, shapes := readAdapterFile(t, dir)
		h, in, inter := int64(m.Config.HiddenSize), m.linear("model.layers.1.self_attn.q_proj").Weight.Shape()[0], int64(m.Config.IntermediateSize)
		wantShapes := map[string][]int64{
			"base_model.model.model.layers.1.self_attn.q_proj.lora_A.weight": {4, h},
			"base_model.model.model.layers.1.self_attn.q_proj.lora_B.weight": {in, 4},
			"base_model.model.model.layers.0.mlp.down_proj.lora_A.weight":    {4, inter},
			"base_model.model.model.layers.0.mlp.down_proj.lora_B.weight":    {h, 4},
		}
		if len(shapes) != 4*len(m.Layers) {
			t.Errorf("%d tensors, want %d", len(shapes), 4*len(m.Layers))
		}
		for n, s := range wantShapes {
			if !slices.Equal(shapes[n], s) {
				t.Errorf("%s: shape %v, want %v", n, shapes[n], s)
			}
		}
		seq := randomSeqs(2, m.Config.VocabSize, 9)[0]
		adapted := seqLogits(t, m, seq)
		base := testModel(t, "qwen2", false, 5)
		defer base.Close()
		byHand := mergeByHand(t, base, vals, c.Scale())
		ad, err := ReadAdapter(dir)
		if err != nil {
			return err
		}
		if ad.Base.Revision != "abc123" || ad.Config.Rank != 4 || !ad.Config.RSLoRA || !slices.Equal(ad.Config.TargetModules, c.TargetModules) {
			t.Errorf("read back %+v", ad)
		}
		if err := base.LoadAdapters(ad); err != nil {
			return err
		}
		if ad.Base.Fingerprint != "sha256:00" {
			t.Errorf("fingerprint %q", ad.Base.Fingerprint)
		}
		if d := maxAbsDiff(seqLogits(t, base, seq), adapted); d != 0 {
			t.Errorf("adapters read back give logits %g away", d)
		}
		mh, err := Load(byHand, Options{Device: testDevice, DType: testDType})
		if err != nil {
			return err
		}
		defer mh.Close()
		merged := seqLogits(t, mh, seq)
		if d := maxAbsDiff(adapted, merged); d > tol(2e-6*maxAbs(merged), 0.05*maxAbs(merged)) {
			t.Errorf("merged by hand differs from the adapted model by %g (largest %g)", d, maxAbs(merged))
		}
		if err := m.Export(t.TempDir(), ExportOptions{}); err == nil || !strings.Contains(err.Error(), "LoRA adapters") {
			t.Errorf("a model with adapters exported as its base alone: %v", err)
		}
		return nil
	})
}

// An adapter written in PEFT's layout (by hand: PEFT's config fields and names, bf16 tensors)
// loads, and the adapted model's logits are those of the base with scale·B·A added by hand.
func TestLoadPEFTAdapter(t *testing.T) {
	onTorch(t, func() error {
		m := testModel(t, "qwen2", true, 5)
		defer m.Close()
		dir := t.TempDir()
		vals := writePEFTFixture(t, dir, m)
		seq := randomSeqs(3, m.Config.VocabSize, 9)[0]
		byHand := mergeByHand(t, m, vals, 8.0/4)
		ad, err := ReadAdapter(dir)
		if err != nil {
			return err
		}
		if ad.Base.NameOrPath != "Qwen/Qwen2.5-0.5B" || ad.Config.Dropout != 0.05 || !slices.Equal(ad.Config.Targets(), []string{ModuleQ, ModuleV}) {
			t.Errorf("read %+v", ad)
		}
		if err := m.LoadAdapters(ad); err != nil {
			return err
		}
		if len(m.Adapters()) != 2*len(m.Layers) {
			t.Errorf("%d adapters", len(m.Adapters()))
		}
		mh, err := Load(byHand, Options{Device: testDevice, DType: testDType})
		if err != nil {
			return err
		}
		defer mh.Close()
		merged := seqLogits(t, mh, seq)
		if d := maxAbsDiff(seqLogits(t, m, seq), merged); d > tol(2e-6*maxAbs(merged), 0.05*maxAbs(merged)) {
			t.Errorf("the PEFT adapter's logits differ from the hand-merged model's by %g (largest %g)", d, maxAbs(merged))
		}
		return nil
	})
}

// Bad adapter directories are refused with the tensor or field and the file named, and the model
// is left without adapters.
func TestLoadAdapterRefusals(t *testing.T) {
	onTorch(t, func() error {
		m := testModel(t, "qwen2", true, 5)
		defer m.Close()
		other := testModel(t, "qwen3", true, 5) // head_dim 16 instead of 8: q_proj is [64, 32]
		defer other.Close()
		deep, err := New(func() *Config { c := testConfig(t, "qwen2", true); c.NumHiddenLayers = 3; return c }(), nil,
			Options{Device: testDevice, DType: testDType}, 5)
		if err != nil {
			return err
		}
		defer deep.Close()
		// edit rewrites the fixture: cfg changes adapter_config.json, drop removes a tensor, add
		// adds (or replaces) float32 zeros of the given shapes.
		edit := func(dir string, cfg func(map[string]any), drop string, add map[string][]int64) {
			b, _ := os.ReadFile(filepath.Join(dir, AdapterConfigFile))
			var c map[string]any
			json.Unmarshal(b, &c)
			if cfg != nil {
				cfg(c)
			}
			b, _ = json.Marshal(c)
			os.WriteFile(filepath.Join(dir, AdapterConfigFile), b, 0o644)
			f, err := safetensors.Open(filepath.Join(dir, AdapterWeightsFile))
			if err != nil {
				t.Fatal(err)
			}
			w := safetensors.NewWriter()
			for n, shape := range add {
				w.Add(n, safetensors.F32, shape, make([]byte, 4*shape[0]*shape[1]))
			}
			for _, n := range f.Names() {
				if _, ok := add[n]; ok || n == drop {
					continue
				}
				info, _ := f.Info(n)
				d, _ := f.Data(n)
				w.Add(n, info.DType, info.Shape, d)
			}
			f.Close()
			if err := w.WriteFile(filepath.Join(dir, AdapterWeightsFile)); err != nil {
				t.Fatal(err)
			}
		}
		const qA = "base_model.model.model.layers.1.self_attn.q_proj.lora_A.weight"
		cases := []struct {
			name string
			base *Model
			cfg  func(map[string]any)
			drop string
			add  map[string][]int64
			want []string
		}{
			{"wrong shape", m, nil, "", map[string][]int64{qA: {4, 7}}, []string{qA, "shape [4 7]", "want [4 32]", AdapterWeightsFile}},
			{"missing tensor", m, nil, qA, nil, []string{"missing tensor " + qA, AdapterWeightsFile}},
			{"rank mismatch", m, func(c map[string]any) { c["r"] = 8 }, "", nil, []string{"has shape [4 32], want [8 32]"}},
			{"other architecture", other, nil, "", nil, []string{"base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight", "want [64 4]"}},
			{"more layers", m, nil, "", nil, []string{"base_model.model.model.layers.2.self_attn.", "the model has 2 layers"}},
			{"dora", m, func(c map[string]any) { c["use_dora"] = true }, "", nil, []string{AdapterConfigFile, "use_dora true", "DoRA"}},
			{"head adapter", m, nil, "", map[string][]int64{"base_model.model.lm_head.lora_A.weight": {4, 32}},
				[]string{"unexpected tensor base_model.model.lm_head.lora_A.weight"}},
			{"listed target without tensors", m, func(c map[string]any) { c["target_modules"] = []string{"q_proj", "v_proj", "k_proj"} }, "", nil,
				[]string{"missing tensor base_model.model.model.layers.0.self_attn.k_proj.lora_A.weight"}},
			{"embedding target", m, func(c map[string]any) { c["target_modules"] = []string{"q_proj", "embed_tokens"} }, "", nil,
				[]string{`"embed_tokens"`, "linear layers"}},
		}
		for _, tc := range cases {
			dir, from := t.TempDir(), m
			switch tc.name {
			case "more layers": // an adapter of the 3-layer model read onto the 2-layer one
				from = deep
			}
			writePEFTFixture(t, dir, from)
			edit(dir, tc.cfg, tc.drop, tc.add)
			ad, err := ReadAdapter(dir)
			if err == nil {
				err = tc.base.LoadAdapters(ad)
			}
			if err == nil {
				t.Errorf("%s: accepted", tc.name)
				tc.base.MergeAdapters()
				continue
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%s: error %q does not say %q", tc.name, err, w)
				}
			}
			if tc.base.Adapters() != nil {
				t.Errorf("%s: adapters left on the model after the error", tc.name)
			}
		}
		dir := t.TempDir()
		writePEFTFixture(t, dir, m)
		os.Rename(filepath.Join(dir, AdapterWeightsFile), filepath.Join(dir, "adapter_model.bin"))
		ad, err := ReadAdapter(dir)
		if err == nil {
			err = m.LoadAdapters(ad)
		}
		if err == nil || !strings.Contains(err.Error(), "adapter_model.bin") {
			t.Errorf("a pickled adapter: %v", err)
		}
		if _, err := ReadAdapter(t.TempDir()); err == nil || !strings.Contains(err.Error(), AdapterConfigFile) {
			t.Errorf("an empty directory: %v", err)
		}
		return nil
	})
}

// A fingerprint names the weight files' contents: the same for a copy elsewhere, another for
// other weights of the same shapes.
func TestFingerprint(t *testing.T) {
	onTorch(t, func() error {
		a, b := t.TempDir(), t.TempDir()
		for i, dir := range []string{a, b} {
			m := testModel(t, "qwen2", true, uint64(5+i))
			if err := m.Export(dir, ExportOptions{}); err != nil {
				return err
			}
			m.Close()
		}
		fa, err := Fingerprint(a)
		if err != nil {
			return err
		}
		c := filepath.Join(t.TempDir(), "moved")
		if err := os.Rename(a, c); err != nil {
			return err
		}
		fc, _ := Fingerprint(c)
		fb, _ := Fingerprint(b)
		if !strings.HasPrefix(fa, "sha256:") || fa != fc || fa == fb {
			t.Errorf("fingerprints: %s, moved %s, other weights %s", fa, fc, fb)
		}
		return nil
	})
}
