package env

import "encoding/json"

// Roles of chat messages, as Hugging Face chat templates spell them.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one chat message in the shape Hugging Face chat templates and the OpenAI API use:
// {"role", "content", "tool_calls", "tool_call_id", "name"}. A tool result is a message with
// Role "tool", the tool's Name and the ToolCallID of the call it answers.
type Message struct {
	Role       string     `json:"role"`
	Content    string     `json:"content"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	Name       string     `json:"name,omitempty"`
}

// ToolCall is one function call made by the assistant: {"id", "type": "function", "function":
// {"name", "arguments"}}. Arguments holds the JSON object exactly as the model wrote it (key
// order kept), so a chat template that re-renders the call with tojson reproduces the model's
// own order.
type ToolCall struct {
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type"`
	Function FunctionCall `json:"function"`
}

// FunctionCall is the name and JSON arguments of a ToolCall.
type FunctionCall struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// ToolSpec describes a tool to a chat template, in the OpenAI / Hugging Face shape
// {"type": "function", "function": {"name", "description", "parameters"}}.
type ToolSpec struct {
	Type     string       `json:"type"`
	Function FunctionSpec `json:"function"`
}

// FunctionSpec is the function part of a ToolSpec. Parameters is a JSON Schema object kept as raw
// JSON so its key order survives into the rendered prompt (templates print it with tojson, and
// transformers' json.dumps keeps insertion order).
type FunctionSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// Spec builds the ToolSpec of a tool.
func Spec(t Tool) ToolSpec {
	return ToolSpec{Type: "function", Function: FunctionSpec{
		Name: t.Name(), Description: t.Description(), Parameters: t.Parameters(),
	}}
}

// Text is a convenience constructor for a message with only a role and content.
func Text(role, content string) Message { return Message{Role: role, Content: content} }
