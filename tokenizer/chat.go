package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nikolalohinski/gonja/v2/builtins"
	"github.com/nikolalohinski/gonja/v2/config"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/loaders"
)

// Message is one chat message, as transformers' apply_chat_template takes it. Keys reach
// the template in this order: role, content, reasoning_content, tool_calls, tool_call_id,
// name (empty optional fields are left out, so `is defined` tests behave as in Python).
type Message struct {
	Role             string
	Content          string
	ReasoningContent string // Qwen3 <think> text, when kept apart from Content
	ToolCalls        []ToolCall
	ToolCallID       string // for role "tool"
	Name             string
}

// ToolCall is an assistant's function call, rendered as {"id"?, "type": "function",
// "function": {"name", "arguments"}}.
type ToolCall struct {
	ID        string
	Name      string
	Arguments json.RawMessage // a JSON object (kept in order) or a JSON string
}

// ChatOptions are the keyword arguments of apply_chat_template.
type ChatOptions struct {
	AddGenerationPrompt bool
	// Tools are JSON schemas ({"type": "function", "function": {...}}), key order kept.
	Tools []json.RawMessage
	// Vars are extra template variables, e.g. "enable_thinking": false or "date_string".
	Vars map[string]any
	// Template names one of several templates in tokenizer_config.json (e.g. "tool_use");
	// empty picks "tool_use" when Tools are given and it exists, else the default.
	Template string
}

// ErrNoChatTemplate is wrapped by the error ApplyChatTemplate returns together with the
// fallback rendering when the tokenizer has no chat template.
var ErrNoChatTemplate = errors.New("tokenizer has no chat_template; rendered with the built-in fallback")

// chatTemplate is a compiled template plus the environment it runs in.
type chatTemplate struct {
	tpl *exec.Template
	env *exec.Environment
}

// templateConfig is transformers' jinja setup: trim_blocks and lstrip_blocks on.
func templateConfig() *config.Config {
	c := config.New()
	c.TrimBlocks = true
	c.LeftStripBlocks = true
	c.KeepTrailingNewline = false
	return c
}

// chatEnvironment is gonja's default environment with transformers' differences: tojson is
// json.dumps over ordered dicts, items keeps dict order, and raise_exception and
// strftime_now exist.
func chatEnvironment() *exec.Environment {
	filters := exec.NewFilterSet(map[string]exec.FilterFunction{})
	filters.Update(builtins.Filters)
	_ = filters.Replace("tojson", filterToJSON)
	_ = filters.Replace("items", filterItems)
	ctx := exec.EmptyContext().Update(builtins.GlobalFunctions).Update(builtins.GlobalVariables)
	ctx.Set("raise_exception", func(msg string) (string, error) {
		return "", fmt.Errorf("chat template raised: %s", msg)
	})
	ctx.Set("strftime_now", func(format string) string {
		return strftime(time.Now(), format)
	})
	methods := builtins.Methods
	methods.Dict = orderedDictMethods(builtins.Methods.Dict)
	return &exec.Environment{
		Context:           ctx,
		Filters:           filters,
		Tests:             builtins.Tests,
		ControlStructures: chatControlStructures(builtins.ControlStructures),
		Methods:           methods,
	}
}

func compileTemplate(src string) (*chatTemplate, error) {
	env := chatEnvironment()
	loader, err := loaders.NewFileSystemLoader("")
	if err != nil {
		return nil, err
	}
	root, err := loaders.NewShiftedLoader("chat_template", stringReader(src), loader)
	if err != nil {
		return nil, err
	}
	tpl, err := exec.NewTemplate("chat_template", templateConfig(), root, env)
	if err != nil {
		return nil, fmt.Errorf("chat template: %w", err)
	}
	return &chatTemplate{tpl: tpl, env: env}, nil
}

func (t *Tokenizer) compileChat() error {
	t.chat, t.named = nil, nil
	for name, src := range t.config.NamedTemplates {
		c, err := compileTemplate(src)
		if err != nil {
			return fmt.Errorf("chat template %q: %w", name, err)
		}
		if t.named == nil {
			t.named = map[string]*chatTemplate{}
		}
		t.named[name] = c
	}
	if t.config.ChatTemplate == "" {
		return nil
	}
	c, err := compileTemplate(t.config.ChatTemplate)
	if err != nil {
		return err
	}
	t.chat = c
	return nil
}

// pickTemplate follows transformers: an explicit name, else "tool_use" when tools are
// given and the file has such a template, else the default.
func (t *Tokenizer) pickTemplate(opts ChatOptions) (*chatTemplate, error) {
	if opts.Template != "" {
		c, ok := t.named[opts.Template]
		if !ok {
			return nil, fmt.Errorf("no chat template named %q", opts.Template)
		}
		return c, nil
	}
	if c, ok := t.named["tool_use"]; ok && len(opts.Tools) > 0 {
		return c, nil
	}
	return t.chat, nil
}

// ApplyChatTemplate renders messages with the tokenizer's chat_template exactly as
// transformers' apply_chat_template(..., tokenize=False) does. Without a template it renders
// the built-in ChatML (or Llama 3, for Llama vocabularies) fallback and returns it together
// with an error wrapping ErrNoChatTemplate, so callers can log it or refuse.
func (t *Tokenizer) ApplyChatTemplate(messages []Message, opts ChatOptions) (string, error) {
	list, err := messageList(messages)
	if err != nil {
		return "", err
	}
	return t.render(list, opts, false)
}

func messageList(messages []Message) ([]any, error) {
	list := make([]any, len(messages))
	for i, m := range messages {
		d, err := messageDict(m)
		if err != nil {
			return nil, fmt.Errorf("messages[%d]: %w", i, err)
		}
		list[i] = d
	}
	return list, nil
}

// ApplyChatTemplateJSON is ApplyChatTemplate for messages given as a JSON array of
// transformers-style message objects (key order is kept).
func (t *Tokenizer) ApplyChatTemplateJSON(messages []byte, opts ChatOptions) (string, error) {
	v, err := parseOrdered(messages)
	if err != nil {
		return "", fmt.Errorf("messages: %w", err)
	}
	list, ok := v.([]any)
	if !ok {
		return "", fmt.Errorf("messages: want a JSON array")
	}
	return t.render(list, opts, false)
}

// EncodeChat renders the messages and encodes the text without adding special tokens (the
// template writes them), as apply_chat_template(..., tokenize=True) does, with one deviation
// (chat_protect.go): special tokens that the messages' text, tool calls or the tool specs spell
// are encoded as plain text, so data can never forge the template's markup.
func (t *Tokenizer) EncodeChat(messages []Message, opts ChatOptions) ([]int, error) {
	list, err := messageList(messages)
	if err != nil {
		return nil, err
	}
	text, err := t.render(list, opts, true)
	if err != nil {
		return nil, err
	}
	return t.encode(text, false, specialUnmarked), nil
}

// render runs the template; with protect, the strings of messages and tools are marked first
// (see chat_protect.go) and the result is for encode with specialUnmarked only.
func (t *Tokenizer) render(messages []any, opts ChatOptions, protect bool) (string, error) {
	vars, err := t.templateVars(messages, opts)
	if err != nil {
		return "", err
	}
	if protect {
		for _, k := range []string{"messages", "tools"} {
			if v, ok := vars[k]; ok {
				vars[k] = t.added.protectData(v)
			}
		}
	}
	c, err := t.pickTemplate(opts)
	if err != nil {
		return "", err
	}
	if c == nil {
		return fallbackChat(t, messages, opts.AddGenerationPrompt), ErrNoChatTemplate
	}
	return execute(c, vars)
}

// execute runs the template. gonja panics on a few expressions where Python raises (1 % 0,
// "a" * -1); the template comes from the model's files and the messages from the caller, so a
// panic becomes the render's error.
func execute(c *chatTemplate, vars map[string]any) (out string, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = "", fmt.Errorf("chat template: %v", r)
		}
	}()
	out, err = c.tpl.ExecuteToString(exec.NewContext(vars))
	if err != nil {
		return "", fmt.Errorf("chat template: %w", err)
	}
	return out, nil
}

// templateVars are the variables transformers passes: messages, tools, documents,
// add_generation_prompt, the special tokens, then the caller's extras.
func (t *Tokenizer) templateVars(messages []any, opts ChatOptions) (map[string]any, error) {
	vars := map[string]any{
		"messages":              messages,
		"add_generation_prompt": opts.AddGenerationPrompt,
	}
	if len(opts.Tools) > 0 {
		tools := make([]any, len(opts.Tools))
		for i, raw := range opts.Tools {
			v, err := parseOrdered(raw)
			if err != nil {
				return nil, fmt.Errorf("tools[%d]: %w", i, err)
			}
			tools[i] = v
		}
		vars["tools"] = tools
	}
	for name, tok := range map[string]string{"bos_token": t.config.BOSToken, "eos_token": t.config.EOSToken,
		"pad_token": t.config.PadToken, "unk_token": t.config.UnkToken} {
		if tok != "" {
			vars[name] = tok
		}
	}
	if len(t.config.AdditionalSpecialTokens) > 0 {
		list := make([]any, len(t.config.AdditionalSpecialTokens))
		for i, s := range t.config.AdditionalSpecialTokens {
			list[i] = s
		}
		vars["additional_special_tokens"] = list
	}
	for k, v := range opts.Vars {
		vars[k] = v
	}
	return vars, nil
}

func messageDict(m Message) (exec.Dict, error) {
	kv := []any{"role", m.Role, "content", m.Content}
	if m.ReasoningContent != "" {
		kv = append(kv, "reasoning_content", m.ReasoningContent)
	}
	if len(m.ToolCalls) > 0 {
		calls := make([]any, len(m.ToolCalls))
		for i, tc := range m.ToolCalls {
			var args any = dictOf()
			if len(tc.Arguments) > 0 {
				v, err := parseOrdered(tc.Arguments)
				if err != nil {
					return exec.Dict{}, fmt.Errorf("tool_calls[%d].arguments: %w", i, err)
				}
				args = v
			}
			fn := dictOf("name", tc.Name, "arguments", args)
			if tc.ID != "" {
				calls[i] = dictOf("id", tc.ID, "type", "function", "function", fn)
			} else {
				calls[i] = dictOf("type", "function", "function", fn)
			}
		}
		kv = append(kv, "tool_calls", calls)
	}
	if m.ToolCallID != "" {
		kv = append(kv, "tool_call_id", m.ToolCallID)
	}
	if m.Name != "" {
		kv = append(kv, "name", m.Name)
	}
	return dictOf(kv...), nil
}

// SetChatTemplate replaces the chat template (as assigning tokenizer.chat_template does in
// transformers).
func (t *Tokenizer) SetChatTemplate(src string) error {
	c, err := compileTemplate(src)
	if err != nil {
		return err
	}
	t.config.ChatTemplate, t.config.TemplateSource, t.chat = src, "SetChatTemplate", c
	return nil
}
