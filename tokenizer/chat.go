package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nikolalohinski/gonja/v2/builtins"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/parser"
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

// chatTemplate is a compiled, sandboxed template (chat_sandbox.go).
type chatTemplate struct {
	name string // where it came from, for errors: a file, with the entry's name in a list
	tpl  *exec.Template
	lim  templateLimits
}

// chatEnvironment is gonja's environment with transformers' differences (tojson is json.dumps
// over ordered dicts, items keeps dict order, raise_exception and strftime_now exist) and the
// sandbox's control structures. Its filters are the sandbox's guarded ones; its methods are
// empty: each render installs its own guarded ones (sandboxStart), so none is reachable
// unguarded.
func chatEnvironment() *exec.Environment {
	ctx := exec.EmptyContext().Update(builtins.GlobalFunctions).Update(builtins.GlobalVariables)
	ctx.Set("raise_exception", func(msg string) (string, error) {
		return "", fmt.Errorf("chat template raised: %s", msg)
	})
	ctx.Set("strftime_now", func(format string) string {
		return strftime(time.Now(), format)
	})
	return &exec.Environment{
		Context:           ctx,
		Filters:           sandboxFilters(),
		Tests:             builtins.Tests,
		ControlStructures: sandboxControlStructures(),
		Methods: exec.Methods{Bool: exec.NewMethodSet(map[string]exec.Method[bool]{}),
			Int: exec.NewMethodSet(map[string]exec.Method[int]{}), Float: exec.NewMethodSet(map[string]exec.Method[float64]{}),
			Str: exec.NewMethodSet(map[string]exec.Method[string]{}), Dict: exec.NewMethodSet(map[string]exec.Method[map[string]any]{}),
			List: exec.NewMethodSet(map[string]exec.Method[[]any]{})},
	}
}

// sandboxControlStructures are gonja's control structures that need no loader, the sandbox's
// set, with, filter, raw and block (chat_blocks.go, chat_sandbox.go), transformers' generation,
// and refusals for the four that load files. Others (trans) do not parse.
func sandboxControlStructures() *exec.ControlStructureSet {
	set := map[string]parser.ControlStructureParser{
		"set": setParser, "with": withParser, "filter": filterParser, "raw": rawParser,
		"block": inPlaceBlockParser, "generation": generationParser,
	}
	for _, tag := range []string{"include", "import", "from", "extends"} {
		set[tag] = refusedParser(tag)
	}
	for _, tag := range []string{"for", "if", "macro", "call", "do", "break", "continue", "autoescape"} {
		if p, ok := builtins.ControlStructures.Get(tag); ok {
			set[tag] = p
		}
	}
	return exec.NewControlStructureSet(set)
}

// compileTemplate parses src and sandboxes it. name says where it came from in render errors.
func compileTemplate(name, src string, lim templateLimits) (c *chatTemplate, err error) {
	defer func() { // the parser panics on a few malformed inputs
		if r := recover(); r != nil {
			c, err = nil, fmt.Errorf("chat template: %v", r)
		}
	}()
	if err := checkSource(src, lim); err != nil {
		return nil, fmt.Errorf("chat template: %w", err)
	}
	tpl, err := exec.NewTemplate(rootName, templateConfig(), noLoader{src}, chatEnvironment())
	if err != nil {
		if inner := errors.Unwrap(err); inner != nil {
			err = inner // gonja's wrapper quotes the whole source
		}
		return nil, fmt.Errorf("chat template: %w", err)
	}
	if err := sandboxTree(tpl.Root()); err != nil {
		return nil, fmt.Errorf("chat template: %w", err)
	}
	return &chatTemplate{name: name, tpl: tpl, lim: lim}, nil
}

// compileChat compiles the config's templates; origin is the file they came from.
func (t *Tokenizer) compileChat(origin string) error {
	t.chat, t.named = nil, nil
	for name, src := range t.config.NamedTemplates {
		c, err := compileTemplate(fmt.Sprintf("%s (%q)", origin, name), src, defaultLimits)
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
	c, err := compileTemplate(origin, t.config.ChatTemplate, defaultLimits)
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

// execute runs the template in its sandbox with a fresh budget. gonja panics on a few
// expressions where Python raises (1 % 0, "a" * -1); the template comes from the model's files
// and the messages from the caller, so a panic becomes the render's error. Errors name the
// template.
func execute(c *chatTemplate, vars map[string]any) (string, error) {
	return executeWith(c, vars, newBudget(c.lim, inputBytes(vars, 0)))
}

func executeWith(c *chatTemplate, vars map[string]any, b *renderBudget) (out string, err error) {
	for k, v := range b.renderVars() {
		vars[k] = v
	}
	defer func() {
		if r := recover(); r != nil {
			out, err = "", fmt.Errorf("chat template %s: %v", c.name, r)
		}
	}()
	var buf strings.Builder
	err = c.tpl.Execute(&buf, exec.NewContext(vars))
	if b.err != nil {
		err = b.err // the limit, however the template went on after it
	}
	if err != nil {
		return "", fmt.Errorf("chat template %s: %w", c.name, err)
	}
	return buf.String(), nil
}

// inputBytes is the size of the strings in the render's variables: the budget grows with the
// conversation it renders.
func inputBytes(v any, depth int) int {
	if depth > 100 {
		return 0
	}
	n := 0
	switch x := v.(type) {
	case string:
		n = len(x)
	case map[string]any:
		for _, e := range x {
			n += inputBytes(e, depth+1)
		}
	case []any:
		for _, e := range x {
			n += inputBytes(e, depth+1)
		}
	case exec.Dict:
		for _, p := range x.Pairs {
			n += inputBytes(p.Value.Interface(), depth+1)
		}
	}
	return n
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
	c, err := compileTemplate("set by SetChatTemplate", src, defaultLimits)
	if err != nil {
		return err
	}
	t.config.ChatTemplate, t.config.TemplateSource, t.chat = src, "SetChatTemplate", c
	return nil
}
