package model

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/mtgrpo/mtgrpo/internal/bounded"
)

// GenerationConfig mirrors generation_config.json (HF names). Pointer fields are absent when nil.
// Keys not modelled here are kept in Extra and written back by Export.
type GenerationConfig struct {
	BOSTokenID        *int     `json:"bos_token_id,omitempty"`
	EOSTokenID        TokenIDs `json:"eos_token_id"`
	PadTokenID        *int     `json:"pad_token_id,omitempty"`
	DoSample          *bool    `json:"do_sample,omitempty"`
	Temperature       *float64 `json:"temperature,omitempty"`
	TopP              *float64 `json:"top_p,omitempty"`
	TopK              *int     `json:"top_k,omitempty"`
	RepetitionPenalty *float64 `json:"repetition_penalty,omitempty"`
	MaxNewTokens      *int     `json:"max_new_tokens,omitempty"`

	Extra map[string]json.RawMessage `json:"-"`
}

var knownGenerationKeys = map[string]bool{"bos_token_id": true, "eos_token_id": true, "pad_token_id": true,
	"do_sample": true, "temperature": true, "top_p": true, "top_k": true, "repetition_penalty": true,
	"max_new_tokens": true}

// LoadGenerationConfig reads dir/generation_config.json. A missing file is not an error: the result is
// derived from the model config (bos/eos/pad ids), as transformers does.
func LoadGenerationConfig(dir string, c *Config) (*GenerationConfig, error) {
	path := filepath.Join(dir, "generation_config.json")
	data, err := bounded.ReadFile(path, bounded.Small)
	if errors.Is(err, fs.ErrNotExist) {
		return generationFromConfig(c), nil
	}
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	g, err := ParseGenerationConfig(data)
	if err != nil {
		return nil, fmt.Errorf("model: %s: %w", path, err)
	}
	return g, nil
}

// ParseGenerationConfig decodes generation_config.json bytes.
func ParseGenerationConfig(data []byte) (*GenerationConfig, error) {
	var g GenerationConfig
	if err := json.Unmarshal(data, &g); err != nil {
		return nil, fmt.Errorf("invalid generation config: %w", err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, err
	}
	for k, v := range raw {
		if !knownGenerationKeys[k] {
			if g.Extra == nil {
				g.Extra = map[string]json.RawMessage{}
			}
			g.Extra[k] = v
		}
	}
	return &g, nil
}

func generationFromConfig(c *Config) *GenerationConfig {
	return &GenerationConfig{BOSTokenID: c.BOSTokenID, EOSTokenID: c.EOSTokenID, PadTokenID: c.PadTokenID}
}

// MarshalJSON writes the modelled fields plus Extra.
func (g GenerationConfig) MarshalJSON() ([]byte, error) {
	type plain GenerationConfig
	b, err := json.Marshal(plain(g))
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	floatify(m, "temperature", "top_p", "repetition_penalty")
	for k, v := range g.Extra {
		if _, ok := m[k]; !ok {
			m[k] = v
		}
	}
	return json.Marshal(m)
}

// StopTokenIDs is the union of the eos ids of config.json and generation_config.json: generation stops
// on any of them (Qwen2.5-Instruct: 151645 and 151643; Llama-3.x-Instruct: 128001, 128008, 128009).
func StopTokenIDs(c *Config, g *GenerationConfig) []int {
	var gen []int
	if g != nil {
		gen = g.EOSTokenID.IDs
	}
	return unionIDs(c.EOSTokenID.IDs, gen)
}
