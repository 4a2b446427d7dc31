package env

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Toolset is the tools of one environment, by name, and the limits on the tool work of one
// assistant message.
type Toolset struct {
	// Limits bound each message's calls; zero fields take the defaults.
	Limits ToolLimits

	tools  []Tool
	byName map[string]Tool
}

// ToolLimits bound the tool work of one assistant message, so that a message cannot hold its
// episode (and the rollout step waiting for it) for long: without them, eight spinning python
// calls in one message ran one after another for 40 s.
type ToolLimits struct {
	// MaxCalls is the most tool calls one message may make (default DefaultMaxToolCalls).
	// Attempts past it, well-formed or not, are not run: one tool message says how many were
	// left out, and each counts as a failed call (TurnInfo.ToolCallsDropped).
	MaxCalls int
	// Time is the wall-clock budget of all the message's calls together (default
	// DefaultToolTime). Calls run one after another, each under a context that ends with the
	// budget; when it runs out, the running call's context is cancelled and it and the calls not
	// yet run are answered with a timeout message, each counted as a failed call
	// (TurnInfo.ToolTimeouts). A tool that ignores its context is not waited for: its answer is
	// discarded when it comes.
	Time time.Duration
}

// Defaults of ToolLimits: a message rarely needs more than a few calls, and the budget covers
// four python runs at the sandbox's default 5 s wall limit.
const (
	DefaultMaxToolCalls = 5
	DefaultToolTime     = 20 * time.Second
)

func (l ToolLimits) withDefaults() ToolLimits {
	if l.MaxCalls <= 0 {
		l.MaxCalls = DefaultMaxToolCalls
	}
	if l.Time <= 0 {
		l.Time = DefaultToolTime
	}
	return l
}

// Validate rejects negative limits (zero means the default).
func (l ToolLimits) Validate() error {
	if l.MaxCalls < 0 {
		return fmt.Errorf("max tool calls per message %d: want >= 0 (0 = default %d)", l.MaxCalls, DefaultMaxToolCalls)
	}
	if l.Time < 0 {
		return fmt.Errorf("tool time per message %v: want >= 0 (0 = default %v)", l.Time, DefaultToolTime)
	}
	return nil
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

// list is the tools in order (nil for a nil Toolset).
func (ts *Toolset) list() []Tool {
	if ts == nil {
		return nil
	}
	return ts.tools
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

// attempt is one call attempt in the order written: a well-formed call (call >= 0) or a
// malformed one (the index of its error).
type attempt struct{ call, err int }

// attempts lists p's attempts in the order the model wrote them; without position information
// (a ParsedMessage built by hand) errors come first.
func (p *ParsedMessage) attempts() []attempt {
	out := make([]attempt, 0, p.Attempts())
	e := 0
	for i := 0; i <= len(p.Calls); i++ {
		for ; e < len(p.Errors) && (e >= len(p.errAt) || p.errAt[e] <= i); e++ {
			out = append(out, attempt{call: -1, err: e})
		}
		if i < len(p.Calls) {
			out = append(out, attempt{call: i})
		}
	}
	return out
}

// Run executes the parsed calls under ts.Limits and returns one tool message per attempt, in the
// order the model wrote them (a malformed attempt answered by its error message), then one
// message for the attempts past Limits.MaxCalls, if any; the outcomes of the well-formed calls
// answered one by one (run or timed out); and the turn's counts. Call IDs are "call_<turn>_<i>".
// A tool's panic is recovered and reported as its error: a tool bug must not kill the episode's
// goroutine.
func (ts *Toolset) Run(ctx context.Context, turn int, p ParsedMessage) ([]Message, []ToolOutcome, TurnInfo) {
	lim := ts.Limits.withDefaults()
	budget, cancel := context.WithTimeout(ctx, lim.Time)
	defer cancel()
	var msgs []Message
	var outs []ToolOutcome
	var info TurnInfo
	all := p.attempts()
	info.ToolCalls = len(all)
	for _, a := range all[:min(len(all), lim.MaxCalls)] {
		if a.call < 0 {
			msgs = append(msgs, Message{Role: RoleTool, Content: "Error: " + p.Errors[a.err]})
			info.ToolErrors++
			continue
		}
		c := &p.Calls[a.call]
		c.ID = fmt.Sprintf("call_%d_%d", turn, a.call)
		out := ToolOutcome{Call: *c}
		started := budget.Err() == nil
		timedOut := !started
		if started {
			out.Result, out.Err = ts.call(budget, *c)
			timedOut = out.Err != nil && budget.Err() != nil
		}
		if timedOut {
			out.Result, out.Err = "", timeoutError(ctx, lim.Time, started)
			info.ToolTimeouts++
		}
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
	if extra := len(all) - lim.MaxCalls; extra > 0 {
		msgs = append(msgs, Message{Role: RoleTool, Content: fmt.Sprintf(
			"Error: %d more tool calls not run: a message may make at most %d.", extra, lim.MaxCalls)})
		info.ToolErrors += extra
		info.ToolCallsDropped = extra
	}
	return msgs, outs, info
}

// timeoutError explains a call stopped, or never started, because the message's tool time ran
// out (or the episode's own context ended).
func timeoutError(parent context.Context, budget time.Duration, started bool) error {
	what := "not run"
	if started {
		what = "cancelled"
	}
	if err := parent.Err(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return fmt.Errorf("%s: timed out: the message's tool calls may take %v in all", what, budget)
}

// call runs one call on its own goroutine and waits for it or for ctx, whichever comes first.
func (ts *Toolset) call(ctx context.Context, c ToolCall) (string, error) {
	t, ok := ts.byName[c.Function.Name]
	if !ok {
		return "", fmt.Errorf("unknown tool %q (available: %s)", c.Function.Name, strings.Join(ts.names(), ", "))
	}
	type result struct {
		out string
		err error
	}
	done := make(chan result, 1) // buffered: a tool that ignores ctx can still finish and exit
	go func() {
		var r result
		defer func() {
			if p := recover(); p != nil {
				r.err = fmt.Errorf("tool %s failed: %v", c.Function.Name, p)
			}
			done <- r
		}()
		r.out, r.err = t.Call(ctx, c.Function.Arguments)
	}()
	select {
	case r := <-done:
		return r.out, r.err
	case <-ctx.Done():
		// A tool that honours ctx cleans up before it returns (the python sandbox kills its
		// process and removes its run directory): give it that time, so that a run cancelled
		// meanwhile exits after the cleanup, not before. One that ignores ctx is abandoned.
		select {
		case <-done:
		case <-time.After(cancelGrace):
		}
		return "", ctx.Err()
	}
}

// cancelGrace is how long a cancelled tool call may take to return before it is abandoned.
const cancelGrace = 500 * time.Millisecond

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
