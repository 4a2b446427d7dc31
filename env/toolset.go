package env

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// Toolset is the tools of one environment, by name.
type Toolset struct {
	tools  []Tool
	byName map[string]Tool
}

// NewToolset indexes tools by name; a repeated name is an error.
func NewToolset(tools ...Tool) (*Toolset, error) {
	ts := &Toolset{byName: map[string]Tool{}}
	for _, t := range tools {
		if _, dup := ts.byName[t.Name()]; dup {
			return nil, fmt.Errorf("env: tool %q listed twice", t.Name())
		}
		ts.byName[t.Name()] = t
		ts.tools = append(ts.tools, t)
	}
	return ts, nil
}

// Specs lists the tools for a chat template, in the order given.
func (ts *Toolset) Specs() []ToolSpec {
	if ts == nil {
		return nil
	}
	specs := make([]ToolSpec, len(ts.tools))
	for i, t := range ts.tools {
		specs[i] = Spec(t)
	}
	return specs
}

// Len is the number of tools.
func (ts *Toolset) Len() int {
	if ts == nil {
		return 0
	}
	return len(ts.tools)
}

// ToolOutcome is the result of one attempted call.
type ToolOutcome struct {
	Call   ToolCall
	Result string // what the model sees
	Err    error  // nil when the tool ran successfully
}

// Run executes the parsed calls and returns one tool message per attempt, in the order the model
// wrote them (a malformed attempt answered by its error message; without position information,
// as for a ParsedMessage built by hand, errors come first), and the turn's counts. Call IDs are
// "call_<turn>_<i>". A tool's panic is recovered and reported as its error: a tool bug must not
// kill the episode's goroutine.
func (ts *Toolset) Run(ctx context.Context, turn int, p ParsedMessage) ([]Message, []ToolOutcome, TurnInfo) {
	var msgs []Message
	var outs []ToolOutcome
	var info TurnInfo
	next := 0 // next error to report
	flushErrors := func(before int) {
		for ; next < len(p.Errors) && (next >= len(p.errAt) || p.errAt[next] <= before); next++ {
			msgs = append(msgs, Message{Role: RoleTool, Content: "Error: " + p.Errors[next]})
			info.ToolCalls++
			info.ToolErrors++
		}
	}
	for i := range p.Calls {
		flushErrors(i)
		c := &p.Calls[i]
		c.ID = fmt.Sprintf("call_%d_%d", turn, i)
		out := ToolOutcome{Call: *c}
		out.Result, out.Err = ts.call(ctx, *c)
		info.ToolCalls++
		content := out.Result
		if out.Err != nil {
			info.ToolErrors++
			content = "Error: " + out.Err.Error()
		} else {
			info.ToolSuccesses++
		}
		msgs = append(msgs, Message{Role: RoleTool, Name: c.Function.Name, ToolCallID: c.ID, Content: content})
		outs = append(outs, out)
	}
	flushErrors(len(p.Calls))
	return msgs, outs, info
}

func (ts *Toolset) call(ctx context.Context, c ToolCall) (res string, err error) {
	t, ok := ts.byName[c.Function.Name]
	if !ok {
		return "", fmt.Errorf("unknown tool %q (available: %s)", c.Function.Name, strings.Join(ts.names(), ", "))
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("tool %s failed: %v", c.Function.Name, r)
		}
	}()
	return t.Call(ctx, c.Function.Arguments)
}

func (ts *Toolset) names() []string {
	var n []string
	for _, t := range ts.tools {
		n = append(n, t.Name())
	}
	return n
}

// DecodeArgs decodes a tool's JSON arguments into v strictly: unknown fields are errors, and each
// name in required must be present. The error text is written for the model.
func DecodeArgs(args json.RawMessage, v any, required ...string) error {
	var present map[string]json.RawMessage
	if err := json.Unmarshal(args, &present); err != nil {
		return fmt.Errorf("bad arguments: %v", err)
	}
	for _, r := range required {
		if _, ok := present[r]; !ok {
			return fmt.Errorf("bad arguments: missing required argument %q", r)
		}
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("bad arguments: %v", err)
	}
	return nil
}
