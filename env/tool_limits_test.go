package env

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// stall is a tool for the limits: {"block": false} answers at once; {"block": true} waits for
// its context to end, or, with Stubborn, sleeps for Stubborn whatever the context says.
type stall struct{ Stubborn time.Duration }

func (stall) Name() string                { return "stall" }
func (stall) Description() string         { return "waits" }
func (stall) Parameters() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }
func (s stall) Call(ctx context.Context, args json.RawMessage) (string, error) {
	var a struct{ Block bool }
	if err := json.Unmarshal(args, &a); err != nil || !a.Block {
		return "done", err
	}
	if s.Stubborn > 0 {
		time.Sleep(s.Stubborn)
		return "late", nil
	}
	<-ctx.Done()
	return "", ctx.Err()
}

func stallCalls(blocks ...bool) ParsedMessage {
	var b strings.Builder
	for _, bl := range blocks {
		fmt.Fprintf(&b, `<tool_call>{"name": "stall", "arguments": {"block": %v}}</tool_call>`, bl)
	}
	return ParseToolCalls(b.String())
}

// Eight calls in one message under MaxCalls 5 and a 200ms budget: two quick calls succeed, the
// third blocks until the budget ends and is cancelled, the fourth and fifth are not started,
// and the last three are past the cap: one message says so. Every call is answered or counted.
func TestToolLimitsCapCallsAndTime(t *testing.T) {
	ts, _ := NewToolset(stall{})
	ts.Limits = ToolLimits{MaxCalls: 5, Time: 200 * time.Millisecond}
	t0 := time.Now()
	msgs, outs, info := ts.Run(context.Background(), 0, stallCalls(false, false, true, false, false, false, false, false))
	if d := time.Since(t0); d < 200*time.Millisecond || d > 2*time.Second {
		t.Errorf("took %v, want the 200ms budget", d)
	}
	want := TurnInfo{ToolCalls: 8, ToolSuccesses: 2, ToolErrors: 6, ToolTimeouts: 3, ToolCallsDropped: 3}
	if info != want {
		t.Fatalf("info %+v\nwant %+v", info, want)
	}
	contents := []string{"done", "done",
		"Error: cancelled: timed out: the message's tool calls may take 200ms in all",
		"Error: not run: timed out: the message's tool calls may take 200ms in all",
		"Error: not run: timed out: the message's tool calls may take 200ms in all",
		"Error: 3 more tool calls not run: a message may make at most 5."}
	if len(msgs) != len(contents) || len(outs) != 5 {
		t.Fatalf("%d messages, %d outcomes: %+v", len(msgs), len(outs), msgs)
	}
	for i, c := range contents {
		if msgs[i].Content != c || msgs[i].Role != RoleTool {
			t.Errorf("message %d: %q, want %q", i, msgs[i].Content, c)
		}
	}
	if msgs[4].ToolCallID != "call_0_4" || msgs[5].ToolCallID != "" {
		t.Errorf("ids %q %q", msgs[4].ToolCallID, msgs[5].ToolCallID)
	}
}

// Malformed attempts count toward the cap in the order written; the defaults apply when the
// limits are zero.
func TestToolLimitsCountMalformedAttempts(t *testing.T) {
	ts, _ := NewToolset(stall{})
	p := ParseToolCalls(strings.Repeat(`<tool_call>{broken</tool_call><tool_call>{"name": "stall", "arguments": {}}</tool_call>`, 4))
	msgs, outs, info := ts.Run(context.Background(), 0, p)
	// 8 attempts, default cap 5: broken, ok, broken, ok, broken answered; 3 dropped.
	if info.ToolCalls != 8 || info.ToolSuccesses != 2 || info.ToolErrors != 6 || info.ToolCallsDropped != 3 || len(msgs) != 6 || len(outs) != 2 {
		t.Fatalf("info %+v, %d messages, %d outcomes", info, len(msgs), len(outs))
	}
	if !strings.HasPrefix(msgs[4].Content, "Error: tool call error") || msgs[5].Content != "Error: 3 more tool calls not run: a message may make at most 5." {
		t.Fatalf("%q / %q", msgs[4].Content, msgs[5].Content)
	}
}

// A tool that ignores its context does not hold the turn: its answer is not waited for.
func TestToolLimitsDoNotWaitForStubbornTools(t *testing.T) {
	ts, _ := NewToolset(stall{Stubborn: 3 * time.Second})
	ts.Limits.Time = 100 * time.Millisecond
	t0 := time.Now()
	_, _, info := ts.Run(context.Background(), 0, stallCalls(true))
	if d := time.Since(t0); d > time.Second {
		t.Errorf("waited %v for a tool that ignores its context", d)
	}
	if info.ToolTimeouts != 1 || info.ToolErrors != 1 {
		t.Fatalf("%+v", info)
	}
}

// tidy is a tool that, cancelled, takes a while to clean up (as the python sandbox removes its
// run directory) before it returns.
type tidy struct{ cleaned chan struct{} }

func (tidy) Name() string                { return "tidy" }
func (tidy) Description() string         { return "cleans up when cancelled" }
func (tidy) Parameters() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }
func (t tidy) Call(ctx context.Context, _ json.RawMessage) (string, error) {
	<-ctx.Done()
	time.Sleep(100 * time.Millisecond)
	close(t.cleaned)
	return "", ctx.Err()
}

// A call cancelled (its time ran out, or the run was aborted) returns after the tool's own
// clean-up, so a process that exits next leaves nothing behind; a tool that ignores its
// context is still not waited for (above).
func TestCancelledCallWaitsForCleanup(t *testing.T) {
	for _, cancelRun := range []bool{false, true} {
		tool := tidy{cleaned: make(chan struct{})}
		ts, _ := NewToolset(tool)
		ts.Limits.Time = 100 * time.Millisecond
		ctx, cancel := context.WithCancel(context.Background())
		if cancelRun {
			ts.Limits.Time = time.Minute
			time.AfterFunc(50*time.Millisecond, cancel)
		}
		msgs, _, _ := ts.Run(ctx, 0, ParseToolCalls(`<tool_call>{"name": "tidy", "arguments": {}}</tool_call>`))
		cancel()
		select {
		case <-tool.cleaned:
		default:
			t.Errorf("cancel run %v: the call returned (%q) before the tool cleaned up", cancelRun, msgs[0].Content)
		}
	}
}

// The python tool cancelled mid-run (the message's time ran out, or the run was aborted) has
// removed its run directory (main.py, the root's mount point) when the call returns: a process
// that exits next leaves nothing in TMPDIR.
func TestPythonCancelledLeavesNoRunDirectory(t *testing.T) {
	cfg := quickPython
	cfg.TempDir = t.TempDir()
	py, err := NewPythonTool(cfg)
	if err != nil {
		t.Skipf("no python3: %v", err)
	}
	ts, _ := NewToolset(py)
	for _, abort := range []bool{false, true} {
		ctx, cancel := context.WithCancel(context.Background())
		ts.Limits.Time = 300 * time.Millisecond
		if abort {
			ts.Limits.Time = time.Minute
			time.AfterFunc(300*time.Millisecond, cancel)
		}
		msgs, _, _ := ts.Run(ctx, 0, ParseToolCalls(`<tool_call>{"name": "python", "arguments": {"code": "while True: pass"}}</tool_call>`))
		cancel()
		left, _ := os.ReadDir(cfg.TempDir)
		var names []string
		for _, e := range left {
			names = append(names, e.Name())
		}
		if len(names) > 0 {
			t.Errorf("abort %v: %q, and left behind in TMPDIR: %v", abort, msgs[0].Content, names)
		}
	}
}

// A cancelled episode context ends Step with its error; the tool messages say why.
func TestStepCancelledWhileToolsRun(t *testing.T) {
	ts, _ := NewToolset(stall{})
	e := &ChatEnv{Tools: ts, MaxTurns: 3, RubricFor: fixed(MathRubric)}
	if _, err := e.Reset(context.Background(), Task{ID: "t", Prompt: []Message{Text(RoleUser, "go")}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err := e.Step(ctx, `<tool_call>{"name": "stall", "arguments": {"block": true}}</tool_call>`)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Step: %v", err)
	}
	msgs, _, _ := ts.Run(ctx, 0, stallCalls(false))
	if msgs[0].Content != "Error: not run: context canceled" {
		t.Fatalf("%q", msgs[0].Content)
	}
}

// The limits come from Config; negative values are refused by Open.
func TestToolLimitsConfig(t *testing.T) {
	if _, err := Open("calc_mult", Config{MaxToolCalls: -1}); err == nil || !strings.Contains(err.Error(), "env.max_tool_calls: -1") {
		t.Errorf("negative MaxToolCalls: %v", err)
	}
	if _, err := Open("calc_mult", Config{ToolTime: -time.Second}); err == nil || !strings.Contains(err.Error(), "env.tool_time: -1s") {
		t.Errorf("negative ToolTime: %v", err)
	}
	e, err := Open("calc_mult", Config{MaxToolCalls: 1})
	if err != nil {
		t.Fatal(err)
	}
	env := e.New()
	if _, err := env.Reset(context.Background(), Task{ID: "t", Prompt: []Message{Text(RoleUser, "go")}}); err != nil {
		t.Fatal(err)
	}
	call := `<tool_call>{"name": "calculator", "arguments": {"expression": "6*7"}}</tool_call>`
	res, err := env.Step(context.Background(), call+call)
	if err != nil || res.Info.ToolSuccesses != 1 || res.Info.ToolCallsDropped != 1 || len(res.Assistant.ToolCalls) != 1 || len(res.Messages) != 2 {
		t.Fatalf("%v %+v", err, res)
	}
}

// The spinning-python reproduction: eight `while True: pass` calls in one message. Under a 1s
// tool budget the turn ends after about a second instead of running the calls one after
// another (8 × the sandbox's wall limit); five are answered (one cancelled, four not run) and
// three are dropped.
func TestSpinningPythonCallsAreBounded(t *testing.T) {
	e, err := Open("gsm8k_python", Config{Python: quickPython, ToolTime: time.Second})
	if err != nil {
		t.Skipf("no python3: %v", err)
	}
	env := e.New()
	if _, err := env.Reset(context.Background(), Task{ID: "t", Prompt: []Message{Text(RoleUser, "go")}}); err != nil {
		t.Fatal(err)
	}
	spin := `<tool_call>{"name": "python", "arguments": {"code": "while True: pass"}}</tool_call>`
	t0 := time.Now()
	res, err := env.Step(context.Background(), strings.Repeat(spin, 8))
	d := time.Since(t0)
	if err != nil {
		t.Fatal(err)
	}
	if d > 3*time.Second {
		t.Errorf("the turn took %v under a 1s tool budget", d)
	}
	want := TurnInfo{ToolCalls: 8, ToolErrors: 8, ToolTimeouts: 5, ToolCallsDropped: 3}
	if res.Info != want {
		t.Fatalf("info %+v\nwant %+v", res.Info, want)
	}
	if !strings.HasPrefix(res.Messages[0].Content, "Error: cancelled: timed out") {
		t.Fatalf("%q", res.Messages[0].Content)
	}
}

// The search and python tools honour their context: a done context stops them with its error.
func TestToolsHonourContext(t *testing.T) {
	st := &SearchTool{Index: NewIndex(GenerateCorpus(DefaultCorpusSeed, 50))}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := st.Call(done, json.RawMessage(`{"query": "capital city"}`)); !errors.Is(err, context.Canceled) {
		t.Errorf("search with a cancelled context: %v", err)
	}
	long, _ := json.Marshal(map[string]string{"query": strings.Repeat("word ", maxQueryTerms+1)})
	if _, err := st.Call(context.Background(), long); err == nil || !strings.Contains(err.Error(), "query has 257 words; at most 256") {
		t.Errorf("long query: %v", err)
	}
	py, err := NewPythonTool(quickPython)
	if err != nil {
		t.Skipf("no python3: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	_, err = py.Call(ctx, json.RawMessage(`{"code": "while True: pass"}`))
	if d := time.Since(t0); d > 1500*time.Millisecond || err == nil || !strings.HasPrefix(err.Error(), "cancelled: context deadline exceeded") {
		t.Errorf("python under a 300ms context (wall limit 2s): %v after %v", err, d)
	}
}
