package env

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Tool-call markup of the model families we train.
//
// Qwen2.5 / Qwen3 (hermes style, as their chat templates describe it to the model): any number of
//
//	<tool_call>
//	{"name": "python", "arguments": {"code": "print(1)"}}
//	</tool_call>
//
// blocks anywhere in the message. Llama 3.1 / 3.2 / 3.3 (JSON tool calling): the whole message,
// optionally after <|python_tag|>, is a JSON object {"name": ..., "parameters": {...}}, several
// of them separated by ";", or a JSON list of them.
const (
	qwenOpen   = "<tool_call>"
	qwenClose  = "</tool_call>"
	pythonTag  = "<|python_tag|>"
	thinkOpen  = "<think>"
	thinkClose = "</think>"
	maxCallErr = 200 // characters of a bad call quoted back to the model
)

// ParsedMessage is an assistant message split into prose and tool calls.
type ParsedMessage struct {
	// Content is the text with the tool-call markup removed (trimmed).
	Content string
	// Calls are the well-formed calls, in order. Their IDs are empty: the env assigns them.
	Calls []ToolCall
	// Errors describe malformed calls, one line each, written for the model to read.
	Errors []string
	// errAt[i] is the number of well-formed calls written before Errors[i], so that Toolset.Run
	// answers the attempts in the order the model wrote them.
	errAt []int
}

// fail records a malformed call at the current position.
func (p *ParsedMessage) fail(msg string) {
	p.Errors = append(p.Errors, msg)
	p.errAt = append(p.errAt, len(p.Calls))
}

// Attempts is the number of calls the model tried to make, well-formed or not.
func (p ParsedMessage) Attempts() int { return len(p.Calls) + len(p.Errors) }

// ParseToolCalls finds the tool calls in an assistant message in either format. It never fails:
// malformed calls are reported in Errors. Reasoning is not searched: with a <think>...</think>
// block (Qwen3), only the text after the last </think> can hold calls, and a <think> that is
// never closed (generation cut mid-thought) holds none. The reasoning stays in Content.
func ParseToolCalls(text string) ParsedMessage {
	if i := strings.LastIndex(text, thinkClose); i >= 0 {
		head := text[:i+len(thinkClose)]
		p := parseCalls(text[i+len(thinkClose):])
		p.Content = strings.TrimSpace(head + "\n\n" + p.Content)
		return p
	}
	if strings.Contains(text, thinkOpen) {
		return ParsedMessage{Content: strings.TrimSpace(text)}
	}
	return parseCalls(text)
}

func parseCalls(text string) ParsedMessage {
	if strings.Contains(text, qwenOpen) || strings.Contains(text, qwenClose) {
		return parseQwen(text)
	}
	if p, ok := parseLlama(text); ok {
		return p
	}
	return ParsedMessage{Content: strings.TrimSpace(text)}
}

// parseQwen extracts every <tool_call>...</tool_call> block. It runs in time linear in the
// text: the next opening and closing tags are searched for only once the cursor has passed them
// (searching the rest of the text for both on every block made a message of 20,000 stray
// closing tags take seconds).
func parseQwen(text string) ParsedMessage {
	var p ParsedMessage
	var prose strings.Builder
	pos := 0
	open, close := nextTag(text, qwenOpen, 0), nextTag(text, qwenClose, 0)
	for {
		if open < pos {
			open = nextTag(text, qwenOpen, pos)
		}
		if close < pos {
			close = nextTag(text, qwenClose, pos)
		}
		switch {
		case open == len(text) && close == len(text):
			prose.WriteString(text[pos:])
			p.Content = strings.TrimSpace(prose.String())
			return p
		case close < open:
			// A closing tag with no opening one: report it and keep the text around it.
			p.fail("tool call error: found </tool_call> without <tool_call>")
			prose.WriteString(text[pos:close])
			pos = close + len(qwenClose)
			continue
		}
		prose.WriteString(text[pos:open])
		body := open + len(qwenOpen)
		end := close
		if end < body {
			end = nextTag(text, qwenClose, body)
		}
		if end == len(text) {
			p.fail("tool call error: <tool_call> is not closed by </tool_call>: " + quote(text[body:]))
			p.Content = strings.TrimSpace(prose.String())
			return p
		}
		p.add(decodeCall(text[body:end], "arguments"))
		pos = end + len(qwenClose)
	}
}

// nextTag is the index of the first tag in text at or after from, or len(text) when there is
// none.
func nextTag(text, tag string, from int) int {
	if i := strings.Index(text[from:], tag); i >= 0 {
		return from + i
	}
	return len(text)
}

// parseLlama recognises Llama 3 JSON calls: the whole message (optionally after
// <|python_tag|>) is one call {"name": ..., "parameters": ...}, several calls separated by ";"
// (as Llama 3.1-3.3 write parallel calls, and vLLM's llama3_json parser reads them), or a JSON
// list of calls. ok is false when the message is not a call attempt at all. A malformed call is
// reported and the parse stops there: what follows it cannot be delimited reliably.
func parseLlama(text string) (ParsedMessage, bool) {
	s := strings.TrimSpace(text)
	tagged := strings.HasPrefix(s, pythonTag)
	if tagged {
		s = strings.TrimSpace(strings.TrimPrefix(s, pythonTag))
	}
	if !tagged && !looksLikeJSONCall(s) {
		return ParsedMessage{}, false
	}
	var p ParsedMessage
	if strings.HasPrefix(s, "[") {
		var list []json.RawMessage
		if err := json.Unmarshal([]byte(s), &list); err != nil {
			p.fail(fmt.Sprintf("tool call error: not a valid JSON list of calls (%v): %s", err, quote(s)))
			return p, true
		}
		for _, raw := range list {
			p.add(decodeCall(string(raw), "parameters"))
		}
		return p, true
	}
	for s != "" {
		dec := json.NewDecoder(strings.NewReader(s))
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			p.fail(fmt.Sprintf("tool call error: not valid JSON (%v): %s", err, quote(s)))
			break
		}
		if !p.add(decodeCall(string(raw), "parameters")) {
			break
		}
		rest := strings.TrimSpace(s[dec.InputOffset():])
		if rest != "" && rest[0] != ';' && rest[0] != '{' { // calls on separate lines are read too
			p.fail("tool call error: unexpected text after a call (separate calls with \";\"): " + quote(rest))
			break
		}
		s = strings.TrimSpace(strings.TrimPrefix(rest, ";"))
	}
	return p, true
}

// add records a decoded call or its error and reports whether it was well-formed.
func (p *ParsedMessage) add(c ToolCall, err error) bool {
	if err != nil {
		p.fail(err.Error())
		return false
	}
	p.Calls = append(p.Calls, c)
	return true
}

// looksLikeJSONCall is true for a message that starts like a JSON object naming a function (or
// a list of them).
func looksLikeJSONCall(s string) bool {
	if strings.HasPrefix(s, "[") {
		s = strings.TrimSpace(s[1:])
	}
	if !strings.HasPrefix(s, "{") {
		return false
	}
	head := s
	if len(head) > 40 {
		head = head[:40]
	}
	return strings.Contains(head, `"name"`)
}

// decodeCall decodes {"name": ..., "<argsKey>": {...}}. Either "arguments" or "parameters" is
// accepted whatever the format, and arguments given as a JSON string holding an object are
// unwrapped (some models write them that way).
func decodeCall(body, argsKey string) (ToolCall, error) {
	body = strings.TrimSpace(body)
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &raw); err != nil {
		return ToolCall{}, fmt.Errorf("tool call error: not valid JSON (%v): %s", err, quote(body))
	}
	var name string
	if err := json.Unmarshal(raw["name"], &name); err != nil || name == "" {
		return ToolCall{}, fmt.Errorf("tool call error: missing \"name\" string: %s", quote(body))
	}
	args, ok := raw[argsKey]
	if !ok {
		if argsKey == "arguments" {
			args, ok = raw["parameters"]
		} else {
			args, ok = raw["arguments"]
		}
	}
	if !ok || len(bytes.TrimSpace(args)) == 0 || string(bytes.TrimSpace(args)) == "null" {
		args = json.RawMessage("{}")
	}
	args, err := objectArgs(args)
	if err != nil {
		return ToolCall{}, fmt.Errorf("tool call error: %s: %v", name, err)
	}
	return ToolCall{Type: "function", Function: FunctionCall{Name: name, Arguments: args}}, nil
}

// objectArgs returns args as a compact JSON object, unwrapping a string that holds one.
func objectArgs(args json.RawMessage) (json.RawMessage, error) {
	args = bytes.TrimSpace(args)
	if len(args) > 0 && args[0] == '"' {
		var s string
		if err := json.Unmarshal(args, &s); err != nil {
			return nil, fmt.Errorf("arguments: %v", err)
		}
		args = bytes.TrimSpace([]byte(s))
	}
	if len(args) == 0 || args[0] != '{' {
		return nil, fmt.Errorf("arguments must be a JSON object, got %s", quote(string(args)))
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, args); err != nil {
		return nil, fmt.Errorf("arguments are not valid JSON: %v", err)
	}
	return buf.Bytes(), nil
}

// quote shortens s for an error message shown to the model.
func quote(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > maxCallErr {
		s = s[:maxCallErr] + "..."
	}
	return fmt.Sprintf("%q", s)
}
