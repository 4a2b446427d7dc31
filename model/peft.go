package model

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/mtgrpo/mtgrpo/internal/bounded"
	"github.com/mtgrpo/mtgrpo/torch"
	"github.com/mtgrpo/mtgrpo/torch/safetensors"
)

// An adapter directory in PEFT's layout (what PeftModel.save_pretrained writes and
// PeftModel.from_pretrained reads): adapter_config.json with LoraConfig's fields, and
// adapter_model.safetensors with, for each targeted module, its lora_A.weight [r, in] and
// lora_B.weight [out, r] named below base_model.model. (the adapter's own name, "default", is not
// part of the saved names).
const (
	AdapterConfigFile  = "adapter_config.json"
	AdapterWeightsFile = "adapter_model.safetensors"
	peftPrefix         = "base_model.model."
	// metaBase is the safetensors metadata entry that holds the base model's fingerprint (PEFT
	// reads the tensors only; its own metadata entry is format: pt).
	metaBase = "mtgrpo.base_fingerprint"
)

// AdapterBase names the base model an adapter belongs to.
type AdapterBase struct {
	// NameOrPath is a Hub id or a directory (adapter_config.json's base_model_name_or_path).
	NameOrPath string
	// Revision is the Hub revision ("" for a directory).
	Revision string
	// Fingerprint identifies the base's weights (Fingerprint), "" when unknown.
	Fingerprint string
}

// peftConfig is adapter_config.json as PEFT's LoraConfig writes it (keys sorted, as PEFT's
// save_pretrained does), with the fields every PEFT release since LoRA's rsLoRA and DoRA options
// reads.
type peftConfig struct {
	AlphaPattern        map[string]float64 `json:"alpha_pattern"`
	AutoMapping         any                `json:"auto_mapping"`
	BaseModelNameOrPath string             `json:"base_model_name_or_path"`
	Bias                string             `json:"bias"`
	FanInFanOut         bool               `json:"fan_in_fan_out"`
	InferenceMode       bool               `json:"inference_mode"`
	InitLoraWeights     bool               `json:"init_lora_weights"`
	LayerReplication    any                `json:"layer_replication"`
	LayersPattern       any                `json:"layers_pattern"`
	LayersToTransform   any                `json:"layers_to_transform"`
	LoftqConfig         map[string]any     `json:"loftq_config"`
	LoraAlpha           float64            `json:"lora_alpha"`
	LoraDropout         float64            `json:"lora_dropout"`
	MegatronConfig      any                `json:"megatron_config"`
	MegatronCore        string             `json:"megatron_core"`
	ModulesToSave       []string           `json:"modules_to_save"`
	PeftType            string             `json:"peft_type"`
	R                   int                `json:"r"`
	RankPattern         map[string]int     `json:"rank_pattern"`
	Revision            *string            `json:"revision"`
	TargetModules       []string           `json:"target_modules"`
	TaskType            string             `json:"task_type"`
	UseDora             bool               `json:"use_dora"`
	UseRslora           bool               `json:"use_rslora"`
}

// SaveAdapters writes the model's adapters into dir in PEFT's layout (float32 tensors), naming
// base as the base model. Run it on the torch thread.
func (m *Model) SaveAdapters(dir string, base AdapterBase) (err error) {
	defer torch.Recover(&err)
	if m.lora == nil {
		return fmt.Errorf("lora: the model has no adapters to save")
	}
	c := m.lora.cfg
	pc := peftConfig{
		AlphaPattern: map[string]float64{}, BaseModelNameOrPath: base.NameOrPath, Bias: "none", InferenceMode: true,
		InitLoraWeights: true, LoftqConfig: map[string]any{}, LoraAlpha: c.Alpha, LoraDropout: c.Dropout,
		MegatronCore: "megatron.core", PeftType: "LORA", R: c.Rank, RankPattern: map[string]int{},
		TargetModules: c.Targets(), TaskType: "CAUSAL_LM", UseRslora: c.RSLoRA,
	}
	if base.Revision != "" {
		pc.Revision = &base.Revision
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("lora: %w", err)
	}
	s := torch.NewScope()
	defer s.Close()
	tensors := map[string]*torch.Tensor{}
	for _, a := range m.lora.list {
		tensors[peftPrefix+a.Name+".lora_A.weight"] = a.A.Detach().ToDevice(torch.CPU)
		tensors[peftPrefix+a.Name+".lora_B.weight"] = a.B.Detach().ToDevice(torch.CPU)
	}
	meta := map[string]string{"format": "pt"}
	if base.Fingerprint != "" {
		meta[metaBase] = base.Fingerprint
	}
	if err := torch.SaveSafetensors(filepath.Join(dir, AdapterWeightsFile), tensors, meta); err != nil {
		return fmt.Errorf("lora: %s: %w", dir, err)
	}
	return writeJSON(filepath.Join(dir, AdapterConfigFile), pc)
}

// AdapterDir is an adapter directory read by ReadAdapter: its configuration, the base it names and
// the weights file, checked against nothing yet (LoadAdapters checks it against a model).
type AdapterDir struct {
	Dir    string
	Config LoRAConfig
	Base   AdapterBase
	// targets says how adapter_config.json chose the modules: listed (every layer has each
	// of them) or by a pattern (the tensors tell).
	listed bool
}

// ReadAdapter reads and checks dir's adapter_config.json: a LoRA adapter for a causal LM whose
// settings this program applies as PEFT does (no bias, DoRA, per-module ranks, layer subsets or
// extra trained modules: each is refused by name); and the base's fingerprint from the weights
// file's header, when this program wrote it.
func ReadAdapter(dir string) (*AdapterDir, error) {
	path := filepath.Join(dir, AdapterConfigFile)
	b, err := bounded.ReadFile(path, bounded.Small)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("lora: %s is not an adapter directory: no %s", dir, AdapterConfigFile)
		}
		return nil, fmt.Errorf("lora: %w", err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("lora: %s: %w", path, err)
	}
	bad := func(format string, a ...any) error {
		return fmt.Errorf("lora: %s: "+format, append([]any{path}, a...)...)
	}
	var pt string
	if err := json.Unmarshal(raw["peft_type"], &pt); err != nil || pt != "LORA" {
		return nil, bad("peft_type %s: only LORA adapters are read", raw["peft_type"])
	}
	if err := checkPEFTDefaults(raw); err != nil {
		return nil, bad("%v", err)
	}
	var r struct {
		R           int     `json:"r"`
		Alpha       float64 `json:"lora_alpha"`
		Dropout     float64 `json:"lora_dropout"`
		RSLoRA      bool    `json:"use_rslora"`
		Base        string  `json:"base_model_name_or_path"`
		Revision    *string `json:"revision"`
		TaskType    *string `json:"task_type"`
		FanInFanOut bool    `json:"fan_in_fan_out"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, bad("%v", err)
	}
	if r.TaskType != nil && *r.TaskType != "CAUSAL_LM" {
		return nil, bad("task_type %q: the adapter must be a causal LM's (CAUSAL_LM)", *r.TaskType)
	}
	if r.FanInFanOut {
		return nil, bad("fan_in_fan_out true: the decoder's linear layers store W as [out, in] (Conv1D's transposed layout is GPT-2's)")
	}
	targets, listed, err := peftTargets(raw["target_modules"])
	if err != nil {
		return nil, bad("target_modules: %v", err)
	}
	a := &AdapterDir{Dir: dir, listed: listed, Base: AdapterBase{NameOrPath: r.Base},
		Config: LoRAConfig{Rank: r.R, Alpha: r.Alpha, Dropout: r.Dropout, RSLoRA: r.RSLoRA, TargetModules: targets}}
	if r.Revision != nil {
		a.Base.Revision = *r.Revision
	}
	if err := a.Config.Validate(); err != nil {
		return nil, bad("%v", err)
	}
	if f, err := safetensors.Open(filepath.Join(dir, AdapterWeightsFile)); err == nil { // else LoadAdapters says why
		a.Base.Fingerprint = f.Metadata()[metaBase]
		f.Close()
	}
	return a, nil
}

// peftDefaults are LoraConfig's fields this program has no counterpart for: an adapter whose
// value is not the default (absent, null, false, "none", empty) is refused, with why.
var peftDefaults = []struct{ key, why string }{
	{"bias", "trained biases (bias all or lora_only) are not applied"},
	{"use_dora", "DoRA's magnitude vectors are not applied"},
	{"lora_bias", "lora_B biases are not applied"},
	{"modules_to_save", "fully trained modules beside the adapters are not loaded"},
	{"layers_to_transform", "adapters on a subset of the layers are not applied"},
	{"layer_replication", "replicated layers are not built"},
	{"rank_pattern", "per-module ranks are not applied"},
	{"alpha_pattern", "per-module alphas are not applied"},
	{"trainable_token_indices", "trained token embeddings are not loaded"},
	{"target_parameters", "adapters on parameters (not modules) are not applied"},
	{"use_qalora", "QA-LoRA is not applied"},
}

// checkPEFTDefaults refuses the fields of peftDefaults that are set.
func checkPEFTDefaults(raw map[string]json.RawMessage) error {
	for _, d := range peftDefaults {
		v, ok := raw[d.key]
		if !ok {
			continue
		}
		switch s := strings.TrimSpace(string(v)); s {
		case "null", "false", `"none"`, "{}", "[]":
		default:
			return fmt.Errorf("%s %s: %s", d.key, s, d.why)
		}
	}
	return nil
}

// peftTargets reads target_modules: a list of module names (or of paths ending in one, as PEFT
// matches them), "all-linear", or another string, which PEFT reads as a regular expression over
// module paths (listed false: the tensors tell which modules carry adapters).
func peftTargets(v json.RawMessage) (targets []string, listed bool, err error) {
	var list []string
	if json.Unmarshal(v, &list) == nil && list != nil {
		for _, t := range list {
			m := t[strings.LastIndexByte(t, '.')+1:]
			if !slices.Contains(LinearModules, m) {
				return nil, false, fmt.Errorf("%q: adapters apply to the decoder's linear layers only (%s)", t, strings.Join(LinearModules, ", "))
			}
			if !slices.Contains(targets, m) {
				targets = append(targets, m)
			}
		}
		return targets, true, nil
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return nil, false, fmt.Errorf("%s: want a list of module names or a string", v)
	}
	if s == AllLinear {
		return []string{AllLinear}, true, nil
	}
	if _, err := regexp.Compile(s); err != nil {
		return nil, false, fmt.Errorf("%q: %v", s, err)
	}
	return nil, false, nil
}

// LoadAdapters attaches the adapters of a PEFT adapter directory (ReadAdapter) to the model:
// every tensor of adapter_model.safetensors must be a targeted module's lora_A or lora_B of this
// model's shapes (A [r, in], B [out, r]), every layer must have the same modules, and nothing may
// be missing; errors name the tensor and the file. The tensors are kept in float32 whatever
// dtype they were saved in. Run it on the torch thread.
func (m *Model) LoadAdapters(a *AdapterDir) (err error) {
	path := filepath.Join(a.Dir, AdapterWeightsFile)
	f, err := safetensors.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			if _, berr := os.Stat(filepath.Join(a.Dir, "adapter_model.bin")); berr == nil {
				return fmt.Errorf("lora: %s holds adapter_model.bin (a pickle), which is not read: save the adapter with safe_serialization (the default since PEFT 0.7)", a.Dir)
			}
		}
		return fmt.Errorf("lora: %w", err)
	}
	defer f.Close()
	c := a.Config
	if c.TargetModules, err = m.adapterModules(f, path, a.listed, c.Targets()); err != nil {
		return err
	}
	err = m.attach(c, func(name string, out, in int64) (ta, tb *torch.Tensor, err error) {
		for _, p := range []struct {
			suffix string
			shape  []int64
			t      **torch.Tensor
		}{{".lora_A.weight", []int64{int64(c.Rank), in}, &ta}, {".lora_B.weight", []int64{out, int64(c.Rank)}, &tb}} {
			n := peftPrefix + name + p.suffix
			info, err := f.Info(n)
			if err != nil {
				return nil, nil, fmt.Errorf("lora: %s: missing tensor %s", path, n)
			}
			if !slices.Equal(info.Shape, p.shape) {
				return nil, nil, fmt.Errorf("lora: %s: tensor %s has shape %v, want %v (r %d, the model's %s is [%d, %d])",
					path, n, info.Shape, p.shape, c.Rank, moduleOf(name), out, in)
			}
			if *p.t, err = torch.LoadTensor(f, n, m.Device, torch.Float32); err != nil {
				return nil, nil, fmt.Errorf("lora: %s: %w", path, err)
			}
		}
		return ta, tb, nil
	})
	return err
}

// peftName matches an adapter tensor: layer, module path, A or B.
var peftName = regexp.MustCompile(`^base_model\.model\.model\.layers\.(\d+)\.((?:self_attn|mlp)\.[a-z_]+)\.lora_(A|B)\.weight$`)

// adapterModules checks the file's tensor names and returns the modules that carry adapters, in
// LinearModules order: every name must be a layer's module of this model, and when the config
// lists its targets (listed), they must be those.
func (m *Model) adapterModules(f *safetensors.File, path string, listed bool, targets []string) ([]string, error) {
	paths := map[string]string{} // module → its path in a layer
	for _, nl := range m.Layers[0].linears() {
		paths[moduleOf(nl.path)] = nl.path
	}
	found := map[string]bool{}
	for _, n := range f.Names() {
		g := peftName.FindStringSubmatch(n)
		if g == nil {
			return nil, fmt.Errorf("lora: %s: unexpected tensor %s (an adapter holds base_model.model.model.layers.N.<module>.lora_A.weight and lora_B.weight)", path, n)
		}
		layer, _ := strconv.Atoi(g[1])
		mod := moduleOf(g[2])
		if paths[mod] != g[2] {
			return nil, fmt.Errorf("lora: %s: tensor %s: %s is not a linear layer of a %s decoder layer", path, n, g[2], m.Config.ModelType)
		}
		if layer >= len(m.Layers) {
			return nil, fmt.Errorf("lora: %s: tensor %s: the model has %d layers", path, n, len(m.Layers))
		}
		found[mod] = true
	}
	var mods []string
	for _, mod := range LinearModules {
		if found[mod] {
			mods = append(mods, mod)
		}
	}
	if len(mods) == 0 {
		return nil, fmt.Errorf("lora: %s: no adapter tensors", path)
	}
	if listed {
		for _, t := range targets {
			if !found[t] {
				return nil, fmt.Errorf("lora: %s: missing tensor %s%s.lora_A.weight (target_modules lists %s)", path, peftPrefix,
					fmt.Sprintf("model.layers.0.%s", paths[t]), t)
			}
		}
		for _, mod := range mods {
			if !slices.Contains(targets, mod) {
				return nil, fmt.Errorf("lora: %s: holds %s adapters, which %s's target_modules does not list", path, mod, AdapterConfigFile)
			}
		}
	}
	return mods, nil
}
