package tokenizer

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mtgrpo/mtgrpo/internal/bounded"
)

// Config is what mtgrpo reads from tokenizer_config.json.
type Config struct {
	BOSToken string // "" when the file sets none
	EOSToken string
	PadToken string
	UnkToken string
	// AdditionalSpecialTokens is passed to chat templates as additional_special_tokens.
	AdditionalSpecialTokens []string
	// ChatTemplate is the default template; NamedTemplates holds every template of a file
	// that lists several (e.g. "default", "tool_use").
	ChatTemplate   string
	NamedTemplates map[string]string
	// TemplateSource says where ChatTemplate came from: "tokenizer_config.json",
	// "chat_template.jinja", or "" when there was none (see ApplyChatTemplate).
	TemplateSource string
	// CleanUpTokenizationSpaces is transformers' decode-time cleanup flag (true for Llama 3).
	// Decode never applies it; see CleanUpTokenizationSpaces.
	CleanUpTokenizationSpaces bool
}

type configSpec struct {
	BOSToken                json.RawMessage   `json:"bos_token"`
	EOSToken                json.RawMessage   `json:"eos_token"`
	PadToken                json.RawMessage   `json:"pad_token"`
	UnkToken                json.RawMessage   `json:"unk_token"`
	AdditionalSpecialTokens []json.RawMessage `json:"additional_special_tokens"`
	ChatTemplate            json.RawMessage   `json:"chat_template"`
	CleanUp                 *bool             `json:"clean_up_tokenization_spaces"`
}

// tokenString reads a special-token field: null, "string", or an AddedToken object.
func tokenString(raw json.RawMessage, field string) (string, error) {
	if isNull(raw) {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var obj struct {
		Content string `json:"content"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return "", fmt.Errorf("%s: want a string or an object with \"content\": %w", field, err)
	}
	return obj.Content, nil
}

func parseConfig(data []byte) (Config, error) {
	var sp configSpec
	var c Config
	if err := json.Unmarshal(data, &sp); err != nil {
		return c, err
	}
	var err error
	fields := []struct {
		raw  json.RawMessage
		name string
		dst  *string
	}{{sp.BOSToken, "bos_token", &c.BOSToken}, {sp.EOSToken, "eos_token", &c.EOSToken},
		{sp.PadToken, "pad_token", &c.PadToken}, {sp.UnkToken, "unk_token", &c.UnkToken}}
	for _, f := range fields {
		if *f.dst, err = tokenString(f.raw, f.name); err != nil {
			return c, err
		}
	}
	for i, raw := range sp.AdditionalSpecialTokens {
		s, err := tokenString(raw, fmt.Sprintf("additional_special_tokens[%d]", i))
		if err != nil {
			return c, err
		}
		c.AdditionalSpecialTokens = append(c.AdditionalSpecialTokens, s)
	}
	if err := parseTemplates(sp.ChatTemplate, &c); err != nil {
		return c, err
	}
	c.CleanUpTokenizationSpaces = sp.CleanUp != nil && *sp.CleanUp
	return c, nil
}

// parseTemplates reads chat_template: a string, or a list of {"name", "template"}.
func parseTemplates(raw json.RawMessage, c *Config) error {
	if isNull(raw) {
		return nil
	}
	c.TemplateSource = "tokenizer_config.json"
	if err := json.Unmarshal(raw, &c.ChatTemplate); err == nil {
		return nil
	}
	var list []struct {
		Name     string `json:"name"`
		Template string `json:"template"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		return fmt.Errorf("chat_template: want a string or a list of {name, template}: %w", err)
	}
	c.NamedTemplates = map[string]string{}
	for _, nt := range list {
		c.NamedTemplates[nt.Name] = nt.Template
	}
	c.ChatTemplate = c.NamedTemplates["default"]
	return nil
}

// setConfig applies tokenizer_config.json. A chat_template.jinja file beside it (the
// layout transformers writes since 4.43) takes precedence over the inline template.
func (t *Tokenizer) setConfig(data []byte, path string) error {
	c, err := parseConfig(data)
	if err != nil {
		return err
	}
	t.config = c
	return t.compileChat(path)
}

func (t *Tokenizer) loadTemplateFile(dir string) error {
	path := filepath.Join(dir, "chat_template.jinja")
	data, err := bounded.ReadFile(path, bounded.Small)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	t.config.ChatTemplate = string(data)
	t.config.TemplateSource = "chat_template.jinja"
	return t.compileChat(path)
}

// Config returns what was read from tokenizer_config.json.
func (t *Tokenizer) Config() Config { return t.config }
