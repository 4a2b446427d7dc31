package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/mtgrpo/mtgrpo/internal/bounded"
)

// Config mirrors a Hugging Face config.json for the Llama, Qwen2 and Qwen3 families. Field names are
// the HF JSON names; fields absent from the file keep the HF default of the model_type (see
// defaultConfig). Keys we do not model are kept in Extra and written back unchanged by Export.
type Config struct {
	Architectures         []string `json:"architectures,omitempty"`
	ModelType             string   `json:"model_type"`
	VocabSize             int      `json:"vocab_size"`
	HiddenSize            int      `json:"hidden_size"`
	IntermediateSize      int      `json:"intermediate_size"`
	NumHiddenLayers       int      `json:"num_hidden_layers"`
	NumAttentionHeads     int      `json:"num_attention_heads"`
	NumKeyValueHeads      int      `json:"num_key_value_heads,omitempty"` // 0 = num_attention_heads
	HeadDim               int      `json:"head_dim,omitempty"`            // 0 = hidden_size / num_attention_heads
	HiddenAct             string   `json:"hidden_act"`
	MaxPositionEmbeddings int      `json:"max_position_embeddings"`
	InitializerRange      float64  `json:"initializer_range"`
	RMSNormEps            float64  `json:"rms_norm_eps"`

	// RoPE comes in two spellings: top-level rope_theta + rope_scaling (transformers 4.x), or
	// rope_parameters {rope_type, rope_theta, ...} (transformers 5.x). Rope() resolves both.
	RopeTheta      float64         `json:"rope_theta,omitempty"`
	RopeScaling    *RopeParameters `json:"rope_scaling,omitempty"`
	RopeParameters *RopeParameters `json:"rope_parameters,omitempty"`

	TieWordEmbeddings bool     `json:"tie_word_embeddings"`
	AttentionBias     bool     `json:"attention_bias"`           // llama, qwen3: bias on q/k/v/o (qwen2 has its own fixed biases)
	MLPBias           bool     `json:"mlp_bias"`                 // llama only
	UseSlidingWindow  bool     `json:"use_sliding_window"`       // qwen2/qwen3; must be false
	SlidingWindow     *int     `json:"sliding_window,omitempty"` // ignored while use_sliding_window is false
	MaxWindowLayers   int      `json:"max_window_layers,omitempty"`
	LayerTypes        []string `json:"layer_types,omitempty"` // all "full_attention" or absent
	AttentionDropout  float64  `json:"attention_dropout"`

	BOSTokenID *int     `json:"bos_token_id"`
	EOSTokenID TokenIDs `json:"eos_token_id"`
	PadTokenID *int     `json:"pad_token_id,omitempty"`

	// The stored dtype: "bfloat16", "float16" or "float32". Older files say torch_dtype, newer dtype;
	// Export writes back the key the file used (torch_dtype for configs made here).
	TorchDtype string `json:"torch_dtype,omitempty"`
	Dtype      string `json:"dtype,omitempty"`

	Extra map[string]json.RawMessage `json:"-"`
	keys  map[string]bool            // the keys of the file this was read from; nil for a config made in code
}

// RopeParameters is the rope_scaling / rope_parameters object. Only "default" and "llama3" types are
// supported; older files spell rope_type as "type".
type RopeParameters struct {
	RopeType                      string  `json:"rope_type,omitempty"`
	Type                          string  `json:"type,omitempty"`
	RopeTheta                     float64 `json:"rope_theta,omitempty"`
	Factor                        float64 `json:"factor,omitempty"`
	LowFreqFactor                 float64 `json:"low_freq_factor,omitempty"`
	HighFreqFactor                float64 `json:"high_freq_factor,omitempty"`
	OriginalMaxPositionEmbeddings int     `json:"original_max_position_embeddings,omitempty"`
	PartialRotaryFactor           float64 `json:"partial_rotary_factor,omitempty"`
}

// Rope is the resolved RoPE setting of a config.
type Rope struct {
	Type  string  // "default" or "llama3"
	Theta float64 // base
	// llama3 only:
	Factor, LowFreqFactor, HighFreqFactor float64
	OriginalMaxPositionEmbeddings         int
}

// Architecture names accepted in config.json, by model_type.
var architectures = map[string]string{
	"llama": "LlamaForCausalLM",
	"qwen2": "Qwen2ForCausalLM",
	"qwen3": "Qwen3ForCausalLM",
}

// defaultConfig returns the HF defaults of a model_type (configuration_{llama,qwen2,qwen3}.py), so that
// fields absent from config.json take the value transformers would give them.
func defaultConfig(modelType string) Config {
	switch modelType {
	case "llama":
		one, two := 1, 2
		return Config{ModelType: "llama", VocabSize: 32000, HiddenSize: 4096, IntermediateSize: 11008,
			NumHiddenLayers: 32, NumAttentionHeads: 32, HiddenAct: "silu", MaxPositionEmbeddings: 2048,
			InitializerRange: 0.02, RMSNormEps: 1e-6, BOSTokenID: &one, EOSTokenID: TokenIDs{IDs: []int{two}}}
	case "qwen2":
		return Config{ModelType: "qwen2", VocabSize: 151936, HiddenSize: 4096, IntermediateSize: 22016,
			NumHiddenLayers: 32, NumAttentionHeads: 32, NumKeyValueHeads: 32, HiddenAct: "silu",
			MaxPositionEmbeddings: 32768, InitializerRange: 0.02, RMSNormEps: 1e-6, MaxWindowLayers: 28}
	case "qwen3":
		return Config{ModelType: "qwen3", VocabSize: 151936, HiddenSize: 4096, IntermediateSize: 22016,
			NumHiddenLayers: 32, NumAttentionHeads: 32, NumKeyValueHeads: 32, HeadDim: 128, HiddenAct: "silu",
			MaxPositionEmbeddings: 32768, InitializerRange: 0.02, RMSNormEps: 1e-6, MaxWindowLayers: 28}
	}
	return Config{ModelType: modelType}
}

// defaultRopeTheta is transformers' default_theta, used when a config names no theta at all.
const defaultRopeTheta = 10000.0

// LoadConfig reads dir/config.json and validates it (see ParseConfig).
func LoadConfig(dir string) (*Config, error) {
	path := filepath.Join(dir, "config.json")
	data, err := bounded.ReadFile(path, bounded.Small)
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	c, err := ParseConfig(data)
	if err != nil {
		return nil, fmt.Errorf("model: %s: %w", path, err)
	}
	return c, nil
}

// knownConfigKeys are the JSON names of Config's fields; everything else goes to Extra.
var knownConfigKeys = func() map[string]bool {
	keys := map[string]bool{}
	b, _ := json.Marshal(fullConfigForKeys())
	var m map[string]json.RawMessage
	_ = json.Unmarshal(b, &m)
	for k := range m {
		keys[k] = true
	}
	return keys
}()

// fullConfigForKeys has every field non-empty so that marshalling it lists every JSON key.
func fullConfigForKeys() Config {
	one := 1
	return Config{Architectures: []string{"x"}, ModelType: "x", NumKeyValueHeads: 1, HeadDim: 1,
		RopeTheta: 1, RopeScaling: &RopeParameters{}, RopeParameters: &RopeParameters{}, MLPBias: true,
		SlidingWindow: &one, MaxWindowLayers: 1, LayerTypes: []string{"x"}, PadTokenID: &one,
		TorchDtype: "x", Dtype: "x"}
}

// ParseConfig decodes config.json bytes: model_type picks the HF defaults, the file overrides them, and
// Validate refuses what this package does not implement.
func ParseConfig(data []byte) (*Config, error) {
	var probe struct {
		ModelType     string   `json:"model_type"`
		Architectures []string `json:"architectures"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	if probe.ModelType == "" && len(probe.Architectures) == 1 {
		for mt, a := range architectures { // an old file without model_type: take it from the class
			if a == probe.Architectures[0] {
				probe.ModelType = mt
			}
		}
	}
	if _, ok := architectures[probe.ModelType]; !ok {
		return nil, fmt.Errorf("model_type %q is not supported (supported: llama, qwen2, qwen3)", probe.ModelType)
	}
	c := defaultConfig(probe.ModelType)
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("invalid field: %w", err)
	}
	c.ModelType = probe.ModelType
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	// null means "absent" for these two: transformers derives them from the other sizes.
	for _, k := range []string{"num_key_value_heads", "head_dim"} {
		if v, ok := raw[k]; ok && string(bytes.TrimSpace(v)) == "null" {
			if k == "head_dim" {
				c.HeadDim = 0
			} else {
				c.NumKeyValueHeads = 0
			}
		}
	}
	c.keys = map[string]bool{}
	for k, v := range raw {
		c.keys[k] = true
		if !knownConfigKeys[k] {
			if c.Extra == nil {
				c.Extra = map[string]json.RawMessage{}
			}
			c.Extra[k] = v
		}
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

// Validate checks sizes and refuses settings this package does not implement, naming the field.
func (c *Config) Validate() error {
	want, ok := architectures[c.ModelType]
	if !ok {
		return fmt.Errorf("model_type %q is not supported (supported: llama, qwen2, qwen3)", c.ModelType)
	}
	for _, a := range c.Architectures {
		if a != want {
			return fmt.Errorf("architectures: %q is not supported for model_type %q (want %s)", a, c.ModelType, want)
		}
	}
	if c.HiddenAct != "silu" {
		return fmt.Errorf("hidden_act %q is not supported (only silu)", c.HiddenAct)
	}
	if err := c.checkSizes(); err != nil {
		return err
	}
	if c.NumAttentionHeads%c.KVHeads() != 0 {
		return fmt.Errorf("num_attention_heads (%d) must be a multiple of num_key_value_heads (%d)",
			c.NumAttentionHeads, c.KVHeads())
	}
	if c.HeadDim == 0 && c.HiddenSize%c.NumAttentionHeads != 0 {
		return fmt.Errorf("hidden_size (%d) is not a multiple of num_attention_heads (%d) and head_dim is absent",
			c.HiddenSize, c.NumAttentionHeads)
	}
	if c.HeadDimension()%2 != 0 {
		return fmt.Errorf("head_dim %d must be even for RoPE", c.HeadDimension())
	}
	if c.RMSNormEps <= 0 {
		return fmt.Errorf("rms_norm_eps must be positive, got %g", c.RMSNormEps)
	}
	if c.UseSlidingWindow {
		return errors.New("use_sliding_window: true is not supported (sliding-window attention is not implemented)")
	}
	for i, t := range c.LayerTypes {
		if t != "full_attention" {
			return fmt.Errorf("layer_types[%d] = %q is not supported (only full_attention)", i, t)
		}
	}
	if len(c.LayerTypes) != 0 && len(c.LayerTypes) != c.NumHiddenLayers {
		return fmt.Errorf("layer_types has %d entries, num_hidden_layers is %d", len(c.LayerTypes), c.NumHiddenLayers)
	}
	if p := c.PadTokenID; p != nil && (*p >= c.VocabSize || *p < -c.VocabSize) {
		return fmt.Errorf("pad_token_id %d is outside the vocabulary of %d tokens", *p, c.VocabSize)
	}
	if c.ModelType != "llama" && c.MLPBias {
		return fmt.Errorf("mlp_bias is not a %s setting", c.ModelType)
	}
	if _, err := c.StoredDType(); err != nil {
		return err
	}
	_, err := c.Rope()
	return err
}

// PaddingIdx is the embedding row that pad_token_id names, taken as transformers' models take it
// (nn.Embedding(vocab_size, hidden_size, padding_idx=pad_token_id): a negative id counts from the
// end), or -1 when pad_token_id is absent. That row gets no gradient from the embedding lookup and
// starts at zero in a fresh model.
func (c *Config) PaddingIdx() int {
	if c.PadTokenID == nil {
		return -1
	}
	if p := *c.PadTokenID; p < 0 {
		return p + c.VocabSize
	}
	return *c.PadTokenID
}

// Upper bounds on the sizes in config.json. Building a model allocates by these numbers (a slice
// of layers, the RoPE frequencies, the weight table) before any tensor is read, so a corrupt or
// hostile file (num_hidden_layers 2e9, head_dim 2^40) must fail here rather than run out of
// memory. They are far above every released model: Llama 3.1 405B has 126 layers, 128 heads,
// head_dim 128, hidden 16384, intermediate 53248, vocabulary 128256; Llama 4's context is 10M.
// Within them, Load still compares every size with the checkpoint's tensors before reading one.
const (
	maxVocabSize    = 1 << 24 // the tokenizer's bound on token ids too
	maxHiddenSize   = 1 << 16
	maxIntermediate = 1 << 20
	maxLayers       = 1 << 10
	maxHeads        = 1 << 10
	maxHeadDim      = 1 << 10
	maxPositions    = math.MaxInt32 // positions are int32 in the RoPE tables and the KV cache
)

// SizeLimit is the most this program supports for the config.json size field name
// (hidden_size, intermediate_size, num_hidden_layers, num_attention_heads, num_key_value_heads,
// head_dim, vocab_size, max_position_embeddings); ok is false for another name.
func SizeLimit(name string) (limit int, ok bool) {
	limit, ok = sizeLimits[name]
	return limit, ok
}

var sizeLimits = map[string]int{
	"vocab_size": maxVocabSize, "hidden_size": maxHiddenSize, "intermediate_size": maxIntermediate,
	"num_hidden_layers": maxLayers, "num_attention_heads": maxHeads, "num_key_value_heads": maxHeads,
	"head_dim": maxHeadDim, "max_position_embeddings": maxPositions,
}

// checkSizes checks every size field against zero and its bound, naming the field.
func (c *Config) checkSizes() error {
	if c.NumKeyValueHeads < 0 || c.HeadDim < 0 {
		return fmt.Errorf("num_key_value_heads (%d) and head_dim (%d) must not be negative", c.NumKeyValueHeads, c.HeadDim)
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"vocab_size", c.VocabSize}, {"hidden_size", c.HiddenSize}, {"intermediate_size", c.IntermediateSize},
		{"num_hidden_layers", c.NumHiddenLayers}, {"num_attention_heads", c.NumAttentionHeads},
		{"num_key_value_heads", c.KVHeads()}, {"head_dim", c.HeadDimension()}, {"max_position_embeddings", c.MaxPositionEmbeddings}} {
		if f.v <= 0 {
			return fmt.Errorf("%s must be positive, got %d", f.name, f.v)
		}
		if f.v > sizeLimits[f.name] {
			return fmt.Errorf("%s %d is larger than this program supports (at most %d)", f.name, f.v, sizeLimits[f.name])
		}
	}
	return nil
}

// CheckLayerCount compares num_hidden_layers with the layers a checkpoint's tensor names hold
// (model.layers.N.*), so that a count that does not fit the weights is one error before the model
// is built, not thousands of missing or unexpected tensors after.
func (c *Config) CheckLayerCount(names []string) error {
	n := 0
	for _, name := range names {
		rest, ok := strings.CutPrefix(name, "model.layers.")
		if !ok {
			continue
		}
		idx, _, _ := strings.Cut(rest, ".")
		i, err := strconv.Atoi(idx)
		if err != nil || i < 0 {
			return fmt.Errorf("tensor %s: %q is not a layer index", name, idx)
		}
		n = max(n, i+1)
	}
	if n != c.NumHiddenLayers {
		return fmt.Errorf("num_hidden_layers is %d, but the checkpoint holds %d layers (model.layers.0 to %d)",
			c.NumHiddenLayers, n, n-1)
	}
	return nil
}

// KVHeads is num_key_value_heads, defaulting to num_attention_heads.
func (c *Config) KVHeads() int {
	if c.NumKeyValueHeads > 0 {
		return c.NumKeyValueHeads
	}
	return c.NumAttentionHeads
}

// HeadDimension is head_dim, defaulting to hidden_size / num_attention_heads.
func (c *Config) HeadDimension() int {
	if c.HeadDim > 0 {
		return c.HeadDim
	}
	if c.NumAttentionHeads <= 0 {
		return 0
	}
	return c.HiddenSize / c.NumAttentionHeads
}

// StoredDType is the checkpoint's dtype name (torch_dtype or dtype), "float32" when absent.
func (c *Config) StoredDType() (string, error) {
	d := c.Dtype
	field := "dtype"
	if d == "" {
		d, field = c.TorchDtype, "torch_dtype"
	}
	switch d {
	case "":
		return "float32", nil
	case "float32", "bfloat16", "float16":
		return d, nil
	}
	return "", fmt.Errorf("%s %q is not supported (float32, bfloat16, float16)", field, d)
}

// Rope resolves rope_theta / rope_scaling / rope_parameters into one setting, refusing RoPE types other
// than default and llama3 (yarn, dynamic, linear, longrope ...) by name.
func (c *Config) Rope() (Rope, error) {
	p, field := c.RopeParameters, "rope_parameters"
	if p == nil {
		p, field = c.RopeScaling, "rope_scaling"
	}
	r := Rope{Type: "default", Theta: c.RopeTheta}
	if p != nil {
		if p.RopeTheta != 0 {
			r.Theta = p.RopeTheta
		}
		switch {
		case p.RopeType != "":
			r.Type = p.RopeType
		case p.Type != "":
			r.Type = p.Type
		}
		if p.PartialRotaryFactor != 0 && p.PartialRotaryFactor != 1 {
			return Rope{}, fmt.Errorf("%s.partial_rotary_factor %g is not supported (only 1)", field, p.PartialRotaryFactor)
		}
		r.Factor, r.LowFreqFactor, r.HighFreqFactor = p.Factor, p.LowFreqFactor, p.HighFreqFactor
		r.OriginalMaxPositionEmbeddings = p.OriginalMaxPositionEmbeddings
	}
	if r.Theta == 0 {
		r.Theta = defaultRopeTheta
	}
	if r.Theta < 0 {
		return Rope{}, fmt.Errorf("rope_theta must be positive, got %g", r.Theta)
	}
	switch r.Type {
	case "default":
	case "llama3":
		if r.Factor <= 0 || r.LowFreqFactor <= 0 || r.HighFreqFactor <= r.LowFreqFactor || r.OriginalMaxPositionEmbeddings <= 0 {
			return Rope{}, fmt.Errorf("%s: llama3 needs factor > 0, 0 < low_freq_factor < high_freq_factor and "+
				"original_max_position_embeddings > 0 (got %+v)", field, *p)
		}
	default:
		return Rope{}, fmt.Errorf("%s.rope_type %q is not supported (supported: default, llama3)", field, r.Type)
	}
	return r, nil
}

// MarshalJSON writes the modelled fields plus Extra, keys sorted (Go's map order). For a config read
// from a file, a field the file did not have is written only when it holds a non-zero value, so that
// load → export gives back the same keys.
func (c Config) MarshalJSON() ([]byte, error) {
	type plain Config
	b, err := json.Marshal(plain(c))
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	for _, k := range foreignKeys[c.ModelType] {
		if !c.keys[k] {
			delete(m, k) // not a field of this model_type's HF config class
		}
	}
	if c.keys != nil {
		for k, v := range m {
			switch string(v) {
			case "false", "0", "null", `""`, "[]":
				if !c.keys[k] {
					delete(m, k)
				}
			}
		}
	}
	floatify(m, "initializer_range", "rms_norm_eps", "rope_theta", "attention_dropout")
	for k, v := range c.Extra {
		if _, ok := m[k]; !ok {
			m[k] = v
		}
	}
	return json.Marshal(m)
}

// MarshalJSON writes the float fields with a decimal point, as Python does (transformers checks
// isinstance(factor, float) for llama3 scaling).
func (r RopeParameters) MarshalJSON() ([]byte, error) {
	type plain RopeParameters
	b, err := json.Marshal(plain(r))
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	floatify(m, "rope_theta", "factor", "low_freq_factor", "high_freq_factor", "partial_rotary_factor")
	return json.Marshal(m)
}

// floatify rewrites integral numbers under keys as floats (32 → 32.0): Go writes float64 32 as 32,
// Python's json writes 32.0, and Python code tells the two apart.
func floatify(m map[string]json.RawMessage, keys ...string) {
	for _, k := range keys {
		v, ok := m[k]
		if !ok || len(v) == 0 || v[0] == 'n' || bytes.ContainsAny(v, ".eE") {
			continue
		}
		m[k] = append(append(json.RawMessage{}, v...), ".0"...)
	}
}

// foreignKeys are Config fields that the HF config class of a model_type does not have
// (LlamaConfig has no sliding window, Qwen2Config no attention_bias, only Llama has mlp_bias): they are
// not written unless the file they came from had them.
var foreignKeys = map[string][]string{
	"llama": {"use_sliding_window", "sliding_window", "max_window_layers", "layer_types"},
	"qwen2": {"attention_bias", "mlp_bias"},
	"qwen3": {"mlp_bias"},
}

// TokenIDs is a token-id field that HF writes as an int, a list of ints or null.
type TokenIDs struct {
	IDs  []int
	List bool // written as a list
}

// UnmarshalJSON accepts null, an int or a list of ints.
func (t *TokenIDs) UnmarshalJSON(b []byte) error {
	s := strings.TrimSpace(string(b))
	switch {
	case s == "null":
		*t = TokenIDs{}
		return nil
	case strings.HasPrefix(s, "["):
		var ids []int
		if err := json.Unmarshal(b, &ids); err != nil {
			return fmt.Errorf("token ids: %w", err)
		}
		*t = TokenIDs{IDs: ids, List: true}
		return nil
	}
	var id int
	if err := json.Unmarshal(b, &id); err != nil {
		return fmt.Errorf("token id: want an int or a list of ints, got %s", s)
	}
	*t = TokenIDs{IDs: []int{id}}
	return nil
}

// MarshalJSON writes the form that was read: null, an int or a list.
func (t TokenIDs) MarshalJSON() ([]byte, error) {
	switch {
	case len(t.IDs) == 0 && !t.List:
		return []byte("null"), nil
	case len(t.IDs) == 1 && !t.List:
		return json.Marshal(t.IDs[0])
	}
	if t.IDs == nil {
		return []byte("[]"), nil
	}
	return json.Marshal(t.IDs)
}

// unionIDs merges id lists, keeping first-seen order and dropping duplicates.
func unionIDs(lists ...[]int) []int {
	seen := map[int]bool{}
	var out []int
	for _, l := range lists {
		for _, id := range l {
			if !seen[id] {
				seen[id] = true
				out = append(out, id)
			}
		}
	}
	return out
}

// writeJSON writes v as indented JSON with a trailing newline, as save_pretrained does.
func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("model: %s: %w", path, err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("model: %w", err)
	}
	return nil
}

// sortedKeys returns m's keys in order (deterministic error messages).
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
