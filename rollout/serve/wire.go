package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strings"

	"github.com/mtgrpo/mtgrpo/env"
)

// The wire format of OpenAI's chat completions API (POST /v1/chat/completions, GET /v1/models),
// as its API reference and the openai-node client define it: request fields, the
// chat.completion object, chat.completion.chunk events of a stream, and the error body
// {"error": {"message", "type", "param", "code"}}.

// chatRequest is a request body. Pointers tell an absent field from a zero one.
type chatRequest struct {
	Model               string          `json:"model"`
	Messages            []wireMessage   `json:"messages"`
	Tools               []wireTool      `json:"tools"`
	ToolChoice          json.RawMessage `json:"tool_choice"`
	ParallelToolCalls   *bool           `json:"parallel_tool_calls"`
	Temperature         *float64        `json:"temperature"`
	TopP                *float64        `json:"top_p"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Stop                json.RawMessage `json:"stop"`
	Seed                *int64          `json:"seed"`
	Stream              *bool           `json:"stream"`
	StreamOptions       *streamOptions  `json:"stream_options"`
	N                   *int            `json:"n"`
	Logprobs            *bool           `json:"logprobs"`
	TopLogprobs         *int            `json:"top_logprobs"`
	FrequencyPenalty    *float64        `json:"frequency_penalty"`
	PresencePenalty     *float64        `json:"presence_penalty"`
	LogitBias           map[string]any  `json:"logit_bias"`
	ResponseFormat      *responseFormat `json:"response_format"`
	Modalities          []string        `json:"modalities"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type responseFormat struct {
	Type string `json:"type"`
}

// knownFields are the request fields this server reads; ignoredFields are accepted and have no
// effect on generation (bookkeeping on OpenAI's side); refusedFields ask for what this server
// cannot do. Any other field is refused as OpenAI refuses it ("Unrecognized request argument").
var (
	knownFields = map[string]bool{"model": true, "messages": true, "tools": true, "tool_choice": true,
		"parallel_tool_calls": true, "temperature": true, "top_p": true, "max_tokens": true,
		"max_completion_tokens": true, "stop": true, "seed": true, "stream": true, "stream_options": true,
		"n": true, "logprobs": true, "top_logprobs": true, "frequency_penalty": true, "presence_penalty": true,
		"logit_bias": true, "response_format": true, "modalities": true}
	ignoredFields = map[string]bool{"user": true, "store": true, "metadata": true, "service_tier": true,
		"prompt_cache_key": true, "safety_identifier": true}
	refusedFields = map[string]string{
		"audio":              "audio output is not supported",
		"functions":          "the deprecated functions field is not supported: use tools",
		"function_call":      "the deprecated function_call field is not supported: use tool_choice",
		"prediction":         "predicted outputs are not supported",
		"reasoning_effort":   "reasoning_effort is not supported (the chat template's own variables, such as enable_thinking, are set in the run's configuration)",
		"verbosity":          "verbosity is not supported",
		"web_search_options": "web search is not supported",
	}
)

// wireMessage is one message of the request. Content is a string, null or an array of parts.
type wireMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Name       string          `json:"name"`
	ToolCalls  []wireToolCall  `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
	Refusal    *string         `json:"refusal"`
	Audio      json.RawMessage `json:"audio"`
	// FunctionCall is the deprecated single call of an assistant message.
	FunctionCall json.RawMessage `json:"function_call"`
}

type contentPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// wireToolCall is a call in an assistant message: arguments are a JSON string.
type wireToolCall struct {
	Index    *int   `json:"index,omitempty"` // only in stream deltas
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type wireTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
		Strict      *bool           `json:"strict"`
	} `json:"function"`
}

// apiError is an error answered in OpenAI's shape, with its HTTP status.
type apiError struct {
	Status  int     `json:"-"`
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func (e *apiError) Error() string { return e.Message }

// Error types and codes, as OpenAI spells them.
const (
	typeInvalid     = "invalid_request_error"
	typeServer      = "server_error"
	codeInvalidKey  = "invalid_api_key"
	codeContext     = "context_length_exceeded"
	codeLimit       = "episode_limit_exceeded"
	codeEnded       = "episode_ended"
	codeUnsupported = "unsupported_parameter"
	codeValue       = "invalid_value"
)

func strp(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// invalid is a 400 naming the parameter.
func invalid(param, code, format string, a ...any) *apiError {
	return &apiError{Status: http.StatusBadRequest, Message: fmt.Sprintf(format, a...), Type: typeInvalid,
		Param: strp(param), Code: strp(code)}
}

// unsupported refuses a parameter this server cannot honour.
func unsupported(param, why string) *apiError {
	return invalid(param, codeUnsupported, "%s: %s", param, why)
}

// writeError sends e as OpenAI's error body.
func writeError(w http.ResponseWriter, e *apiError) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Should-Retry", "false") // the openai clients would retry a 429 or 5xx otherwise
	w.WriteHeader(e.Status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": e})
}

// decodeRequest reads a request body: unknown fields are refused by name as OpenAI refuses
// them, fields of the wrong type are named, and what cannot be served is refused naming the
// field (check).
func decodeRequest(body []byte) (*chatRequest, *apiError) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, invalid("", "", "the request body is not a JSON object: %v", err)
	}
	names := make([]string, 0, len(raw))
	for k := range raw {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if why, ok := refusedFields[k]; ok && !isNull(raw[k]) {
			return nil, unsupported(k, why)
		}
		if !knownFields[k] && !ignoredFields[k] && refusedFields[k] == "" {
			return nil, invalid(k, "", "Unrecognized request argument supplied: %s", k)
		}
	}
	var r chatRequest
	if err := json.Unmarshal(body, &r); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, invalid(te.Field, codeValue, "%s: expected %s, got a JSON %s", te.Field, te.Type, te.Value)
		}
		return nil, invalid("", "", "the request body: %v", err)
	}
	if e := r.check(); e != nil {
		return nil, e
	}
	return &r, nil
}

func isNull(m json.RawMessage) bool { return len(m) == 0 || string(bytes.TrimSpace(m)) == "null" }

// check refuses values this server cannot serve, naming the field.
func (r *chatRequest) check() *apiError {
	switch {
	case len(r.Messages) == 0:
		return invalid("messages", codeValue, "messages: at least one message is required")
	case r.N != nil && *r.N != 1:
		return unsupported("n", fmt.Sprintf("%d choices were asked for; this server returns one choice per request (n = 1)", *r.N))
	case r.Temperature != nil && !(*r.Temperature >= 0 && *r.Temperature <= 2):
		return invalid("temperature", codeValue, "temperature: %v is not in [0, 2]", *r.Temperature)
	case r.TopP != nil && !(*r.TopP > 0 && *r.TopP <= 1):
		return invalid("top_p", codeValue, "top_p: %v is not in (0, 1]", *r.TopP)
	case r.MaxTokens != nil && *r.MaxTokens < 1:
		return invalid("max_tokens", codeValue, "max_tokens: %d must be at least 1", *r.MaxTokens)
	case r.MaxCompletionTokens != nil && *r.MaxCompletionTokens < 1:
		return invalid("max_completion_tokens", codeValue, "max_completion_tokens: %d must be at least 1", *r.MaxCompletionTokens)
	case r.TopLogprobs != nil && *r.TopLogprobs > 0:
		return unsupported("top_logprobs", "the alternatives of each token are not computed; logprobs: true returns the sampled tokens' own")
	case r.FrequencyPenalty != nil && *r.FrequencyPenalty != 0:
		return unsupported("frequency_penalty", "penalties are not supported (they would change the distribution the trainer recomputes)")
	case r.PresencePenalty != nil && *r.PresencePenalty != 0:
		return unsupported("presence_penalty", "penalties are not supported (they would change the distribution the trainer recomputes)")
	case len(r.LogitBias) > 0:
		return unsupported("logit_bias", "logit biases are not supported (they would change the distribution the trainer recomputes)")
	case r.ResponseFormat != nil && r.ResponseFormat.Type != "" && r.ResponseFormat.Type != "text":
		return unsupported("response_format", fmt.Sprintf("type %q needs constrained decoding, which this server does not do; only \"text\"", r.ResponseFormat.Type))
	case r.StreamOptions != nil && (r.Stream == nil || !*r.Stream):
		return invalid("stream_options", codeValue, "stream_options: only allowed when stream is true")
	}
	for _, m := range r.Modalities {
		if m != "text" {
			return unsupported("modalities", fmt.Sprintf("%q output is not supported; only \"text\"", m))
		}
	}
	if r.Temperature != nil && math.IsNaN(*r.Temperature) {
		return invalid("temperature", codeValue, "temperature: NaN")
	}
	if _, e := r.stops(); e != nil {
		return e
	}
	if _, e := r.toolChoice(); e != nil {
		return e
	}
	return nil
}

// maxNew is the request's output cap (0: none given). max_completion_tokens is the current name,
// max_tokens the deprecated one; when both are given the smaller applies.
func (r *chatRequest) maxNew() int {
	n := 0
	for _, p := range []*int{r.MaxTokens, r.MaxCompletionTokens} {
		if p != nil && (n == 0 || *p < n) {
			n = *p
		}
	}
	return n
}

// stops is stop as a list: a string or up to 4 strings.
func (r *chatRequest) stops() ([]string, *apiError) {
	if isNull(r.Stop) {
		return nil, nil
	}
	var one string
	if json.Unmarshal(r.Stop, &one) == nil {
		if one == "" {
			return nil, invalid("stop", codeValue, "stop: an empty string")
		}
		return []string{one}, nil
	}
	var list []string
	if err := json.Unmarshal(r.Stop, &list); err != nil {
		return nil, invalid("stop", codeValue, "stop: want a string or an array of strings")
	}
	if len(list) > 4 {
		return nil, invalid("stop", codeValue, "stop: %d sequences, at most 4", len(list))
	}
	for i, s := range list {
		if s == "" {
			return nil, invalid(fmt.Sprintf("stop[%d]", i), codeValue, "stop[%d]: an empty string", i)
		}
	}
	return list, nil
}

// toolChoice reads tool_choice: "auto" (the default) and "none" are served; "required" and a
// named function would need constrained decoding and are refused.
func (r *chatRequest) toolChoice() (string, *apiError) {
	if isNull(r.ToolChoice) {
		return "auto", nil
	}
	var s string
	if json.Unmarshal(r.ToolChoice, &s) == nil {
		switch s {
		case "auto", "none":
			return s, nil
		case "required":
			return "", unsupported("tool_choice", "\"required\" needs constrained decoding, which this server does not do; use \"auto\"")
		}
		return "", invalid("tool_choice", codeValue, "tool_choice: %q (want auto or none)", s)
	}
	return "", unsupported("tool_choice", "naming a function needs constrained decoding, which this server does not do; use \"auto\"")
}

// messages converts the request's messages for the chat template, naming the first bad one.
func (r *chatRequest) messages() ([]env.Message, *apiError) {
	out := make([]env.Message, len(r.Messages))
	for i, m := range r.Messages {
		at := fmt.Sprintf("messages[%d]", i)
		if !isNull(m.Audio) {
			return nil, unsupported(at+".audio", "audio is not supported")
		}
		if !isNull(m.FunctionCall) {
			return nil, unsupported(at+".function_call", "the deprecated function_call is not supported: use tool_calls")
		}
		text, e := contentText(m.Content, at+".content")
		if e != nil {
			return nil, e
		}
		msg := env.Message{Content: text, Name: m.Name}
		switch m.Role {
		case "system", "developer":
			msg.Role = env.RoleSystem
		case "user":
			msg.Role = env.RoleUser
		case "assistant":
			msg.Role = env.RoleAssistant
			for j, c := range m.ToolCalls {
				call, e := toolCallOf(c, fmt.Sprintf("%s.tool_calls[%d]", at, j))
				if e != nil {
					return nil, e
				}
				msg.ToolCalls = append(msg.ToolCalls, call)
			}
		case "tool":
			if m.ToolCallID == "" {
				return nil, invalid(at+".tool_call_id", codeValue, "%s.tool_call_id: a tool message must answer a call", at)
			}
			msg.Role, msg.ToolCallID = env.RoleTool, m.ToolCallID
		case "function":
			return nil, unsupported(at+".role", "the deprecated function role is not supported: use tool")
		case "":
			return nil, invalid(at+".role", codeValue, "%s.role: missing", at)
		default:
			return nil, invalid(at+".role", codeValue, "%s.role: %q (want system, developer, user, assistant or tool)", at, m.Role)
		}
		if m.Role != "assistant" && len(m.ToolCalls) > 0 {
			return nil, invalid(at+".tool_calls", codeValue, "%s.tool_calls: only assistant messages make tool calls", at)
		}
		out[i] = msg
	}
	return out, nil
}

// contentText reads a message's content: a string, null, or an array of text parts (joined with
// newlines, as the openai-agents SDK and vLLM join them). Other parts are refused.
func contentText(raw json.RawMessage, at string) (string, *apiError) {
	if isNull(raw) {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []contentPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", invalid(at, codeValue, "%s: want a string, null or an array of content parts", at)
	}
	texts := make([]string, 0, len(parts))
	for j, p := range parts {
		if p.Type != "text" {
			return "", unsupported(fmt.Sprintf("%s[%d].type", at, j), fmt.Sprintf("%q content is not supported; only text", p.Type))
		}
		texts = append(texts, p.Text)
	}
	return strings.Join(texts, "\n"), nil
}

// toolCallOf converts a request's tool call: its arguments string must hold a JSON object.
func toolCallOf(c wireToolCall, at string) (env.ToolCall, *apiError) {
	if c.Type != "" && c.Type != "function" {
		return env.ToolCall{}, unsupported(at+".type", fmt.Sprintf("%q tool calls are not supported; only function", c.Type))
	}
	if c.Function.Name == "" {
		return env.ToolCall{}, invalid(at+".function.name", codeValue, "%s.function.name: missing", at)
	}
	args := strings.TrimSpace(c.Function.Arguments)
	if args == "" {
		args = "{}"
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(args), &obj); err != nil {
		return env.ToolCall{}, invalid(at+".function.arguments", codeValue, "%s.function.arguments: not a JSON object: %v", at, err)
	}
	return env.ToolCall{ID: c.ID, Type: "function", Function: env.FunctionCall{Name: c.Function.Name,
		Arguments: json.RawMessage(args)}}, nil
}

// tools converts the request's tool specs, naming the first bad one.
func (r *chatRequest) tools() ([]env.ToolSpec, *apiError) {
	var out []env.ToolSpec
	for i, t := range r.Tools {
		at := fmt.Sprintf("tools[%d]", i)
		if t.Type != "function" {
			return nil, unsupported(at+".type", fmt.Sprintf("%q tools are not supported; only function", t.Type))
		}
		if t.Function.Name == "" {
			return nil, invalid(at+".function.name", codeValue, "%s.function.name: missing", at)
		}
		params := t.Function.Parameters
		if isNull(params) {
			params = json.RawMessage(`{"type": "object", "properties": {}}`)
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(params, &obj); err != nil {
			return nil, invalid(at+".function.parameters", codeValue, "%s.function.parameters: not a JSON object: %v", at, err)
		}
		out = append(out, env.ToolSpec{Type: "function", Function: env.FunctionSpec{Name: t.Function.Name,
			Description: t.Function.Description, Parameters: params}})
	}
	return out, nil
}

// The response objects.

type completion struct {
	ID                string   `json:"id"`
	Object            string   `json:"object"`
	Created           int64    `json:"created"`
	Model             string   `json:"model"`
	Choices           []choice `json:"choices"`
	Usage             *usage   `json:"usage"`
	SystemFingerprint *string  `json:"system_fingerprint"`
}

type choice struct {
	Index        int          `json:"index"`
	Message      replyMessage `json:"message"`
	Logprobs     *logprobs    `json:"logprobs"`
	FinishReason string       `json:"finish_reason"`
}

type replyMessage struct {
	Role      string         `json:"role"`
	Content   *string        `json:"content"`
	Refusal   *string        `json:"refusal"`
	ToolCalls []wireToolCall `json:"tool_calls,omitempty"`
}

type usage struct {
	PromptTokens        int            `json:"prompt_tokens"`
	CompletionTokens    int            `json:"completion_tokens"`
	TotalTokens         int            `json:"total_tokens"`
	PromptTokensDetails *promptDetails `json:"prompt_tokens_details,omitempty"`
}

// promptDetails.CachedTokens counts the prompt tokens whose KV cache was reused.
type promptDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

type logprobs struct {
	Content []tokenLogprob `json:"content"`
	Refusal []tokenLogprob `json:"refusal"`
}

type tokenLogprob struct {
	Token       string  `json:"token"`
	Logprob     float64 `json:"logprob"`
	Bytes       []int   `json:"bytes"`
	TopLogprobs []any   `json:"top_logprobs"`
}

type chunk struct {
	ID                string        `json:"id"`
	Object            string        `json:"object"`
	Created           int64         `json:"created"`
	Model             string        `json:"model"`
	SystemFingerprint *string       `json:"system_fingerprint"`
	Choices           []chunkChoice `json:"choices"`
	// Usage is null on every chunk but the last when stream_options.include_usage is set, and
	// absent otherwise.
	Usage *usage `json:"usage,omitempty"`
}

// chunkWithUsage is a chunk whose usage field is always written (null until the last one).
type chunkWithUsage struct {
	chunk
	Usage *usage `json:"usage"`
}

type chunkChoice struct {
	Index        int       `json:"index"`
	Delta        delta     `json:"delta"`
	Logprobs     *logprobs `json:"logprobs"`
	FinishReason *string   `json:"finish_reason"`
}

type delta struct {
	Role      string         `json:"role,omitempty"`
	Content   *string        `json:"content,omitempty"`
	Refusal   *string        `json:"refusal,omitempty"`
	ToolCalls []wireToolCall `json:"tool_calls,omitempty"`
}

type modelList struct {
	Object string      `json:"object"`
	Data   []modelInfo `json:"data"`
}

type modelInfo struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}
