package mcp

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mtgrpo/mtgrpo/env"
)

func toolByName(t *testing.T, c *Client, name string) env.Tool {
	t.Helper()
	for _, tool := range c.Tools() {
		if tool.Name() == name {
			return tool
		}
	}
	t.Fatalf("no tool %q", name)
	return nil
}

func call(t *testing.T, tool env.Tool, args string) (string, error) {
	t.Helper()
	return tool.Call(context.Background(), json.RawMessage(args))
}

// The server's tools are listed with its descriptions and schemas, in its order, and a call
// runs on the server.
func TestStdioToolsAndCall(t *testing.T) {
	c := connect(t, Config{Servers: []ServerConfig{stdioServer(t)}})
	var names []string
	for _, tool := range c.Tools() {
		names = append(names, tool.Name())
	}
	if got := strings.Join(names, " "); got != "add big crash echo fail hang whoami" {
		t.Errorf("tools %q", got)
	}
	add := toolByName(t, c, "add")
	if add.Description() != "Add two integers." {
		t.Errorf("description %q", add.Description())
	}
	var schema struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if err := json.Unmarshal(add.Parameters(), &schema); err != nil || schema.Type != "object" ||
		len(schema.Properties) != 2 || schema.Properties["a"] == nil || len(schema.Required) != 2 {
		t.Errorf("schema %s (%v)", add.Parameters(), err)
	}
	if got, err := call(t, add, `{"a": 2, "b": 40}`); got != "42" || err != nil {
		t.Errorf("add = %q, %v; want 42", got, err)
	}
	// A result flagged isError is the call's error, shown to the model.
	if _, err := call(t, toolByName(t, c, "fail"), `{"text": "disk full"}`); err == nil || err.Error() != "failed: disk full" {
		t.Errorf("fail: %v", err)
	}
}

// A hung tool times out after CallTimeout; the session stays usable: the server process that
// answered before the hang answers after it. Only the hung call runs under the short limit; the
// calls around it have the default one, since a loaded machine can take longer than 300 ms for
// any round trip and such a call would fail for the wrong reason.
func TestCallTimeout(t *testing.T) {
	c := connect(t, Config{Servers: []ServerConfig{stdioServer(t)}})
	pid0, _ := whoami(t, c)
	srv := toolByName(t, c, "hang").(*Tool).srv
	srv.limits.CallTimeout = 300 * time.Millisecond
	t0 := time.Now()
	_, err := call(t, toolByName(t, c, "hang"), `{}`)
	if err == nil || !strings.Contains(err.Error(), "did not answer within 300ms") {
		t.Fatalf("hang: %v", err)
	}
	if d := time.Since(t0); d > 5*time.Second {
		t.Errorf("hang returned after %v", d)
	}
	srv.limits.CallTimeout = DefaultCallTimeout
	if got, err := call(t, toolByName(t, c, "echo"), `{"text": "still here"}`); got != "still here" || err != nil {
		t.Errorf("echo after a timeout = %q, %v", got, err)
	}
	if pid1, n := whoami(t, c); pid1 != pid0 || n != "3" {
		t.Errorf("after the timeout: pid %s call %s, want pid %s call 3 (the same process)", pid1, n, pid0)
	}
}

var pidRe = regexp.MustCompile(`^pid (\d+) calls (\d+)$`)

func whoami(t *testing.T, c *Client) (pid, calls string) {
	t.Helper()
	got, err := call(t, toolByName(t, c, "whoami"), `{}`)
	m := pidRe.FindStringSubmatch(got)
	if err != nil || m == nil {
		t.Fatalf("whoami = %q, %v", got, err)
	}
	return m[1], m[2]
}

// A server that crashes mid-call is restarted: the call is tried once more (and crashes it
// again), later calls run on a fresh process; past MaxRestarts its tools answer with an error.
func TestCrashRestartsStdioServer(t *testing.T) {
	c := connect(t, Config{Servers: []ServerConfig{stdioServer(t)}, MaxRestarts: 3})
	pid0, n := whoami(t, c)
	if n != "1" {
		t.Errorf("first call counted %s", n)
	}
	_, err := call(t, toolByName(t, c, "crash"), `{}`)
	if err == nil || !strings.Contains(err.Error(), "died during the call twice") {
		t.Fatalf("crash: %v", err)
	}
	pid1, n := whoami(t, c) // restart 3 of 3: crash used two
	if pid1 == pid0 || n != "1" {
		t.Errorf("after the crash: pid %s (was %s), call %s; want a new process", pid1, pid0, n)
	}
	call(t, toolByName(t, c, "crash"), `{}`)
	_, err = call(t, toolByName(t, c, "whoami"), `{}`)
	if err == nil || !strings.Contains(err.Error(), "restarted 3 times, the limit") {
		t.Errorf("past the restart limit: %v", err)
	}
}

// A 10 MB result is cut to MaxResultBytes, saying so.
func TestBigResultIsCapped(t *testing.T) {
	c := connect(t, Config{Servers: []ServerConfig{stdioServer(t)}, MaxResultBytes: 1000})
	got, err := call(t, toolByName(t, c, "big"), `{"bytes": 10000000}`)
	want := strings.Repeat("x", 1000) + "\n[truncated: the result has 10000000 bytes, the first 1000 are shown]"
	if err != nil || got != want {
		t.Errorf("big: %d bytes (%q...), %v", len(got), got[:min(len(got), 40)], err)
	}
}

func TestCapTextUTF8(t *testing.T) {
	// "é" is 2 bytes: a cut at 3 would split the second one, so 2 bytes stay.
	if got := capText("éé", 3); got != "é\n[truncated: the result has 4 bytes, the first 2 are shown]" {
		t.Errorf("%q", got)
	}
	if got := capText("abc", 3); got != "abc" {
		t.Errorf("%q", got)
	}
}

func TestHTTPServer(t *testing.T) {
	url, stop := httpServer(t, "127.0.0.1:0")
	c := connect(t, Config{Servers: []ServerConfig{{Name: "web", URL: url}}, MaxResultBytes: 64})
	if got, err := call(t, toolByName(t, c, "add"), `{"a": 1, "b": 2}`); got != "3" || err != nil {
		t.Errorf("add = %q, %v", got, err)
	}
	got, err := call(t, toolByName(t, c, "big"), `{"bytes": 10000000}`)
	if err != nil || !strings.HasPrefix(got, strings.Repeat("x", 64)+"\n[truncated: the result has 10000000 bytes") {
		t.Errorf("big over HTTP: %.100q, %v", got, err)
	}
	short := connect(t, Config{Servers: []ServerConfig{{Name: "web", URL: url, Tools: []string{"hang"}}}, CallTimeout: 300 * time.Millisecond})
	if _, err := call(t, toolByName(t, short, "hang"), `{}`); err == nil || !strings.Contains(err.Error(), "did not answer within 300ms") {
		t.Errorf("hang over HTTP: %v", err)
	}
	// The server dies: calls fail with an error naming it; once it is back on the same address,
	// the next call reconnects.
	pid0, _ := whoami(t, c)
	stop()
	if _, err := call(t, toolByName(t, c, "echo"), `{"text": "x"}`); err == nil || !strings.Contains(err.Error(), "web") {
		t.Errorf("server down: %v", err)
	}
	httpServer(t, strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/mcp"))
	if pid1, _ := whoami(t, c); pid1 == pid0 {
		t.Errorf("same pid %s after the restart", pid1)
	}
}

func TestConnectErrors(t *testing.T) {
	bin := testServer(t)
	twice := Config{Servers: []ServerConfig{{Name: "a", Command: bin}, {Name: "b", Command: bin}}}
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"missing command", Config{Servers: []ServerConfig{{Name: "gone", Command: "/nonexistent/server"}}},
			"mcp.servers[0] (gone): cannot start or reach the server"},
		{"no tools", Config{Servers: []ServerConfig{stdioServer(t, "-no-tools")}}, "mcp.servers[0] (test): "},
		{"unreachable url", Config{Servers: []ServerConfig{{URL: "http://127.0.0.1:1/mcp"}}, ConnectTimeout: 5 * time.Second},
			"mcp.servers[0] (http://127.0.0.1:1/mcp): cannot start or reach the server"},
		{"same tool twice", twice, `mcp.servers[1] (b): tool "add" is also listed by server a`},
		{"filtered to a missing tool", Config{Servers: []ServerConfig{{Command: bin, Tools: []string{"add", "mul"}}}},
			`tools: the server lists no tool "mul"`},
	}
	for _, tc := range cases {
		_, err := Connect(context.Background(), tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want %q", tc.name, err, tc.want)
		}
	}
	// -no-tools: the server's listing fails or is empty; either way it says no tools.
	_, err := Connect(context.Background(), Config{Servers: []ServerConfig{stdioServer(t, "-no-tools")}})
	if err == nil || !strings.Contains(err.Error(), "lists no tools") {
		t.Errorf("no tools: %v", err)
	}
	// The filter keeps only the named tools.
	c := connect(t, Config{Servers: []ServerConfig{{Command: bin, Tools: []string{"echo", "add"}}}})
	if len(c.Tools()) != 2 || c.Tools()[0].Name() != "add" {
		t.Errorf("filtered tools %v", c.Tools())
	}
}

func TestValidate(t *testing.T) {
	err := Config{MaxResultBytes: -1, Servers: []ServerConfig{
		{},
		{Command: "x", URL: "http://h/mcp"},
		{URL: "ftp://h"},
		{Name: "s", URL: "http://h/mcp", Args: []string{"-v"}},
		{Name: "s", Command: "y"},
	}}.Validate()
	for _, want := range []string{
		"mcp.max_result_bytes: -1 < 0",
		"mcp.servers[0]: needs a command (stdio) or a url (streamable HTTP)",
		"mcp.servers[1]: has both a command and a url",
		`mcp.servers[2].url: "ftp://h" is not an http(s) URL`,
		"mcp.servers[3]: args, env and dir apply to a command, not to a url",
		`mcp.servers[4].name: "s" is also the name of servers[3]`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in %v", want, err)
		}
	}
	if err := (Config{}).Validate(); err == nil || !strings.Contains(err.Error(), "mcp.servers: no server listed") {
		t.Errorf("empty: %v", err)
	}
}
