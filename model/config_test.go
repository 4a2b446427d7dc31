package model

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The config.json of Qwen2.5-0.5B-Instruct as shipped.
const qwen25Config = `{
  "architectures": ["Qwen2ForCausalLM"],
  "attention_dropout": 0.0,
  "bos_token_id": 151643,
  "eos_token_id": 151645,
  "hidden_act": "silu",
  "hidden_size": 896,
  "initializer_range": 0.02,
  "intermediate_size": 4864,
  "max_position_embeddings": 32768,
  "max_window_layers": 21,
  "model_type": "qwen2",
  "num_attention_heads": 14,
  "num_hidden_layers": 24,
  "num_key_value_heads": 2,
  "rms_norm_eps": 1e-06,
  "rope_theta": 1000000.0,
  "sliding_window": 32768,
  "tie_word_embeddings": true,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.43.1",
  "use_cache": true,
  "use_sliding_window": false,
  "vocab_size": 151936
}`

// The config.json of Llama-3.2-1B-Instruct as shipped.
const llama32Config = `{
  "architectures": ["LlamaForCausalLM"],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "bos_token_id": 128000,
  "eos_token_id": [128001, 128008, 128009],
  "head_dim": 64,
  "hidden_act": "silu",
  "hidden_size": 2048,
  "initializer_range": 0.02,
  "intermediate_size": 8192,
  "max_position_embeddings": 131072,
  "mlp_bias": false,
  "model_type": "llama",
  "num_attention_heads": 32,
  "num_hidden_layers": 16,
  "num_key_value_heads": 8,
  "pretraining_tp": 1,
  "rms_norm_eps": 1e-05,
  "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
    "original_max_position_embeddings": 8192, "rope_type": "llama3"},
  "rope_theta": 500000.0,
  "tie_word_embeddings": true,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.45.0.dev0",
  "use_cache": true,
  "vocab_size": 128256
}`

func TestParseQwen25Config(t *testing.T) {
	c, err := ParseConfig([]byte(qwen25Config))
	if err != nil {
		t.Fatal(err)
	}
	if c.HeadDimension() != 64 || c.KVHeads() != 2 || !c.TieWordEmbeddings {
		t.Fatalf("head_dim %d kv %d tied %v, want 64 (896/14) 2 true", c.HeadDimension(), c.KVHeads(), c.TieWordEmbeddings)
	}
	r, err := c.Rope()
	if err != nil || r.Type != "default" || r.Theta != 1e6 {
		t.Fatalf("rope %+v %v", r, err)
	}
	if d, _ := c.StoredDType(); d != "bfloat16" {
		t.Fatalf("dtype %s", d)
	}
	if got := c.EOSTokenID.IDs; len(got) != 1 || got[0] != 151645 || c.EOSTokenID.List {
		t.Fatalf("eos %+v", c.EOSTokenID)
	}
	if string(c.Extra["transformers_version"]) != `"4.43.1"` || c.Extra["use_cache"] == nil {
		t.Fatalf("unmodelled keys not kept: %v", sortedKeys(c.Extra))
	}
}

func TestParseLlama32Config(t *testing.T) {
	c, err := ParseConfig([]byte(llama32Config))
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.Rope()
	if err != nil {
		t.Fatal(err)
	}
	want := Rope{Type: "llama3", Theta: 500000, Factor: 32, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositionEmbeddings: 8192}
	if r != want {
		t.Fatalf("rope %+v, want %+v", r, want)
	}
	if !c.EOSTokenID.List || len(c.EOSTokenID.IDs) != 3 || c.EOSTokenID.IDs[2] != 128009 {
		t.Fatalf("eos %+v", c.EOSTokenID)
	}
}

// transformers 5 writes rope_parameters and dtype instead of rope_theta / rope_scaling / torch_dtype.
func TestParseRopeParametersForm(t *testing.T) {
	c, err := ParseConfig([]byte(`{"model_type": "qwen3", "hidden_size": 64, "num_attention_heads": 4,
		"num_key_value_heads": 2, "head_dim": 32, "dtype": "float32",
		"rope_parameters": {"rope_type": "default", "rope_theta": 1000000.0}}`))
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := c.Rope(); r.Theta != 1e6 || r.Type != "default" {
		t.Fatalf("rope %+v", r)
	}
	// The older "type" key in rope_scaling, theta at top level.
	c, err = ParseConfig([]byte(`{"model_type": "llama", "rope_theta": 500000.0, "rope_scaling": {"type": "llama3",
		"factor": 8, "low_freq_factor": 1, "high_freq_factor": 4, "original_max_position_embeddings": 8192}}`))
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := c.Rope(); r.Type != "llama3" || r.Theta != 5e5 || r.Factor != 8 {
		t.Fatalf("rope %+v", r)
	}
}

// Fields absent from config.json take the HF defaults of the model_type.
func TestConfigDefaults(t *testing.T) {
	c, err := ParseConfig([]byte(`{"model_type": "qwen3"}`))
	if err != nil {
		t.Fatal(err)
	}
	// Qwen3Config: head_dim 128 (equal to hidden/heads = 4096/32 here; the next case tells them apart),
	// rms_norm_eps 1e-6, vocab 151936, rope_theta 10000 (default_theta), eos absent.
	if c.HeadDimension() != 128 || c.RMSNormEps != 1e-6 || c.VocabSize != 151936 || len(c.EOSTokenID.IDs) != 0 {
		t.Fatalf("qwen3 defaults: %+v", c)
	}
	c, err = ParseConfig([]byte(`{"model_type": "qwen3", "hidden_size": 1024, "num_attention_heads": 16,
		"num_key_value_heads": 8}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.HeadDimension() != 128 {
		t.Fatalf("qwen3 head_dim default must stay 128 (hidden/heads = 64): %v", c.HeadDimension())
	}
	c, err = ParseConfig([]byte(`{"model_type": "llama", "hidden_size": 256, "num_attention_heads": 8}`))
	if err != nil {
		t.Fatal(err)
	}
	// LlamaConfig: kv heads = heads when absent, head_dim = hidden/heads, bos 1, eos 2, eps 1e-6.
	if c.KVHeads() != 8 || c.HeadDimension() != 32 || *c.BOSTokenID != 1 || c.EOSTokenID.IDs[0] != 2 {
		t.Fatalf("llama defaults: %+v", c)
	}
	if r, _ := c.Rope(); r.Theta != 10000 {
		t.Fatalf("default theta %v", r.Theta)
	}
	c, err = ParseConfig([]byte(`{"architectures": ["Qwen3ForCausalLM"], "hidden_size": 64}`))
	if err != nil || c.ModelType != "qwen3" {
		t.Fatalf("model_type from architectures: %v %v", c, err)
	}
	c, err = ParseConfig([]byte(`{"model_type": "qwen2", "num_attention_heads": 16, "num_key_value_heads": null}`))
	if err != nil || c.KVHeads() != 16 {
		t.Fatalf("null num_key_value_heads means = heads: %d %v", c.KVHeads(), err)
	}
}

func TestConfigRefusals(t *testing.T) {
	cases := []struct{ json, want string }{
		{`{"model_type": "gpt2"}`, `model_type "gpt2" is not supported`},
		{`{"model_type": "llama", "architectures": ["LlamaForSequenceClassification"]}`, `architectures: "LlamaForSequenceClassification"`},
		{`{"model_type": "qwen2", "architectures": ["MistralForCausalLM"]}`, `architectures: "MistralForCausalLM"`},
		{`{"model_type": "llama", "hidden_act": "gelu"}`, `hidden_act "gelu"`},
		{`{"model_type": "qwen2", "use_sliding_window": true}`, `use_sliding_window`},
		{`{"model_type": "qwen3", "num_hidden_layers": 2, "layer_types": ["full_attention", "sliding_attention"]}`, `layer_types[1]`},
		{`{"model_type": "llama", "rope_scaling": {"rope_type": "yarn", "factor": 4}}`, `rope_scaling.rope_type "yarn"`},
		{`{"model_type": "llama", "rope_scaling": {"type": "dynamic", "factor": 2}}`, `rope_scaling.rope_type "dynamic"`},
		{`{"model_type": "qwen3", "rope_parameters": {"rope_type": "yarn", "rope_theta": 1e6}}`, `rope_parameters.rope_type "yarn"`},
		{`{"model_type": "llama", "rope_scaling": {"rope_type": "llama3", "factor": 8}}`, `llama3 needs`},
		{`{"model_type": "llama", "torch_dtype": "int8"}`, `torch_dtype "int8"`},
		{`{"model_type": "llama", "num_attention_heads": 32, "num_key_value_heads": 5}`, `multiple of num_key_value_heads`},
		{`{"model_type": "llama", "eos_token_id": "x"}`, `token id`},
		{`{"model_type": "llama", "hidden_size": 0}`, `hidden_size must be positive`},
		// Sizes that would make building the model allocate without bound (2e9 layers, a 2^40
		// head_dim) are refused before anything is allocated.
		{`{"model_type": "qwen3", "num_hidden_layers": 2000000000}`, `num_hidden_layers 2000000000 is larger than this program supports (at most 1024)`},
		{`{"model_type": "qwen3", "head_dim": 1099511627776}`, `head_dim 1099511627776 is larger than this program supports (at most 1024)`},
		{`{"model_type": "llama", "hidden_size": 1099511627776, "num_attention_heads": 1}`, `hidden_size 1099511627776 is larger`},
		{`{"model_type": "llama", "vocab_size": 4294967296}`, `vocab_size 4294967296 is larger`},
		{`{"model_type": "llama", "intermediate_size": 1099511627776}`, `intermediate_size 1099511627776 is larger`},
		{`{"model_type": "llama", "num_attention_heads": 65536, "hidden_size": 65536}`, `num_attention_heads 65536 is larger`},
		{`{"model_type": "llama", "max_position_embeddings": 4294967296}`, `max_position_embeddings 4294967296 is larger`},
		{`{"model_type": "qwen3", "num_key_value_heads": -4}`, `must not be negative`},
		{`{"model_type": "qwen3", "head_dim": -128}`, `must not be negative`},
		{`{"model_type": "qwen2", "mlp_bias": true}`, `mlp_bias`},
		{`{"model_type": "llama"`, `invalid JSON`},
		{`{"model_type": "llama", "hidden_size": "64"}`, `hidden_size`},
		{`{"architectures": ["GPT2LMHeadModel"]}`, `model_type "" is not supported`},
	}
	for _, tc := range cases {
		_, err := ParseConfig([]byte(tc.json))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want error containing %q", tc.json, err, tc.want)
		}
	}
}

// Export writes back what was read: the same keys and values (including unmodelled ones).
func TestConfigJSONRoundTrip(t *testing.T) {
	for _, src := range []string{qwen25Config, llama32Config} {
		c, err := ParseConfig([]byte(src))
		if err != nil {
			t.Fatal(err)
		}
		out, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		var a, b map[string]any
		_ = json.Unmarshal([]byte(src), &a)
		_ = json.Unmarshal(out, &b)
		for k, v := range a {
			if jsonString(b[k]) != jsonString(v) {
				t.Errorf("%s: %s written as %s", k, jsonString(v), jsonString(b[k]))
			}
		}
		for k := range b {
			if _, ok := a[k]; !ok {
				t.Errorf("key %s added on export", k)
			}
		}
	}
}

func jsonString(v any) string { b, _ := json.Marshal(v); return string(b) }

func TestGenerationConfigStopIDs(t *testing.T) {
	c, _ := ParseConfig([]byte(qwen25Config))
	g, err := ParseGenerationConfig([]byte(`{"bos_token_id": 151643, "do_sample": true,
		"eos_token_id": [151645, 151643], "pad_token_id": 151643, "repetition_penalty": 1.1,
		"temperature": 0.7, "top_k": 20, "top_p": 0.8, "transformers_version": "4.37.0"}`))
	if err != nil {
		t.Fatal(err)
	}
	got := StopTokenIDs(c, g)
	if len(got) != 2 || got[0] != 151645 || got[1] != 151643 {
		t.Fatalf("stop ids %v, want [151645 151643]", got)
	}
	if *g.TopK != 20 || *g.Temperature != 0.7 || g.Extra["transformers_version"] == nil {
		t.Fatalf("generation config %+v", g)
	}
}

// A config made in code writes only the fields the model_type's HF config class has.
func TestPresetConfigKeys(t *testing.T) {
	for arch, absent := range map[string][]string{
		"llama": {"use_sliding_window", "max_window_layers", "layer_types"},
		"qwen2": {"attention_bias", "mlp_bias", "head_dim"},
		"qwen3": {"mlp_bias"},
	} {
		c, _, err := PresetConfig(arch, "qwen2.5-0.5b", nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(c)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		for _, k := range absent {
			if _, ok := m[k]; ok {
				t.Errorf("%s config writes %s", arch, k)
			}
		}
		if m["model_type"] != arch || m["torch_dtype"] != "bfloat16" {
			t.Errorf("%s config: %v", arch, m)
		}
		// Floats are written as Python writes them: 1000000.0, 32.0.
		if !strings.Contains(string(b), `"rope_theta":1000000.0`) && !strings.Contains(string(b), `"rope_theta":500000.0`) {
			t.Errorf("%s: rope_theta not written as a float: %s", arch, b)
		}
		if arch == "llama" && !strings.Contains(string(b), `"factor":32.0`) {
			t.Errorf("llama3 factor not written as a float: %s", b)
		}
	}
}

// A config.json or generation_config.json that is a stream without end (a link to /dev/zero) is
// an error naming it, read no further than its cap.
func TestConfigFilesStopAtTheirCap(t *testing.T) {
	dir := t.TempDir()
	os.Symlink("/dev/zero", filepath.Join(dir, "config.json"))
	if _, err := LoadConfig(dir); err == nil || !strings.Contains(err.Error(), "config.json: too large: over 16777216 bytes") {
		t.Errorf("config.json -> /dev/zero: %v", err)
	}
	c, err := ParseConfig([]byte(qwen25Config))
	if err != nil {
		t.Fatal(err)
	}
	os.Symlink("/dev/zero", filepath.Join(dir, "generation_config.json"))
	if _, err := LoadGenerationConfig(dir, c); err == nil || !strings.Contains(err.Error(), "generation_config.json: too large") {
		t.Errorf("generation_config.json -> /dev/zero: %v", err)
	}
}
