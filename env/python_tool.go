package env

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mtgrpo/mtgrpo/env/sandbox"
)

// PythonTool runs model-written Python in the sandbox (see package sandbox for the guarantees).
// A run that exits non-zero, prints a traceback, hits a limit or times out is a failed call: the
// model sees its output and the error. So is a run the sandbox could not carry out or whose
// output it could not collect in full, and one stopped because ctx ended (a turn's tool-time
// cap): the run is killed and reaped before Call returns.
type PythonTool struct {
	SB *sandbox.Sandbox
}

// NewPythonTool makes the tool over a new sandbox with cfg.
func NewPythonTool(cfg sandbox.Config) (*PythonTool, error) {
	sb, err := sandbox.New(cfg)
	if err != nil {
		return nil, err
	}
	return &PythonTool{SB: sb}, nil
}

func (*PythonTool) Name() string { return "python" }
func (*PythonTool) Description() string {
	return "Run a Python 3 program and return what it prints. Each call is a fresh process: print the values you need. No network, no files outside the working directory."
}
func (*PythonTool) Parameters() json.RawMessage {
	return json.RawMessage(`{"type": "object", "properties": {"code": {"type": "string", "description": "The Python program to run."}}, "required": ["code"]}`)
}

// Call runs {"code": "..."}. When ctx ends first, the sandbox kills the run and Call returns
// ctx's error (not the kill signal, which would read as a resource limit).
func (t *PythonTool) Call(ctx context.Context, args json.RawMessage) (string, error) {
	var a struct {
		Code string `json:"code"`
	}
	if err := DecodeArgs(args, &a, "code"); err != nil {
		return "", err
	}
	r, err := t.SB.Run(ctx, StripCodeFence(a.Code))
	if cerr := ctx.Err(); cerr != nil {
		return "", fmt.Errorf("cancelled: %w", cerr)
	}
	if err != nil {
		return "", err
	}
	return describeRun(r, t.SB.Limits())
}

// describeRun turns a run into the tool's answer: its output, or an error carrying the output
// and what went wrong.
func describeRun(r sandbox.Result, l sandbox.Limits) (string, error) {
	out := r.Stdout
	if r.Stderr != "" {
		out = strings.TrimRight(out, "\n") + "\n" + r.Stderr
	}
	out = strings.TrimSpace(out)
	switch {
	case r.TimedOut:
		return "", fmt.Errorf("timed out after %v\n%s", l.Wall, out)
	case r.OutOfMemory:
		return "", fmt.Errorf("killed: out of memory (all the run held, its files included, passed its limit)\n%s", out)
	case r.Signal != "":
		return "", fmt.Errorf("killed by %s (CPU or memory limit)\n%s", r.Signal, out)
	case r.ExitCode != 0:
		return "", fmt.Errorf("exit status %d\n%s", r.ExitCode, out)
	case strings.Contains(r.Stderr, "Traceback (most recent call last)"):
		// The program printed a traceback and went on (traceback.print_exc()): MT-GRPO counts
		// a call with a traceback as failed.
		return "", fmt.Errorf("traceback\n%s", out)
	}
	if out == "" {
		out = "(no output; use print to see values)"
	}
	return out, nil
}

// StripCodeFence removes a surrounding ```python ... ``` fence, which models often add.
func StripCodeFence(code string) string {
	s := strings.TrimSpace(code)
	if !strings.HasPrefix(s, "```") {
		return code
	}
	s = strings.TrimPrefix(s, "```")
	if nl := strings.IndexByte(s, '\n'); nl >= 0 {
		s = s[nl+1:] // drop the language tag line
	}
	return strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "```"))
}
