package agent

import (
	"strings"
	"testing"
)

// Every bad key is named, all at once.
func TestValidate(t *testing.T) {
	err := Config{TaskInput: "pipe", Reward: "oracle", MaxCalls: -1, Env: map[string]string{"OPENAI_API_KEY": "x"}}.Validate()
	for _, want := range []string{"agent.command", "agent.task_input", `"pipe"`, "agent.reward", "agent.max_calls", "agent.env"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in %v", want, err)
		}
	}
	if err := (Config{Command: []string{"node", "a.mjs"}}).Validate(); err != nil {
		t.Error(err)
	}
}

// A service needs a port it can be told and, where others can reach the endpoint, a key; the
// keys that bound a program are refused with it.
func TestValidateService(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string // "" : valid
	}{
		{Config{Service: true, Listen: "127.0.0.1:8400"}, ""},
		{Config{Service: true, Listen: "localhost:8400"}, ""},
		{Config{Service: true, Listen: "0.0.0.0:8400", ServiceKey: "k"}, ""},
		{Config{Service: true}, "agent.listen: a service must know where to call"},
		{Config{Service: true, Listen: "127.0.0.1:0"}, "agent.listen: \"127.0.0.1:0\": a service must know the port"},
		{Config{Service: true, Listen: "0.0.0.0:8400"}, "agent.service_key: required"},
		{Config{Service: true, Listen: "[::1]:8400", Command: []string{"node"}}, "agent.command: give a command"},
		{Config{Service: true, Listen: "[::1]:8400", MemoryMB: 100}, "agent.memory_mb: bounds a program"},
		{Config{Command: []string{"node"}, ServiceKey: "k"}, "agent.service_key: has no effect"},
	} {
		err := c.cfg.Validate()
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.want)
		}
	}
}

// The last output line's reward: read when it is one, refused by name when it is not a number.
func TestLastLineReward(t *testing.T) {
	for _, c := range []struct {
		out  string
		want float64
		err  string
	}{
		{"thinking\n{\"reward\": 0.5}\n", 0.5, ""},
		{"{\"reward\": NaN}", 0, "not a JSON object"},
		{"{\"reward\": 1e300}", 0, "magnitude"},
		{"just text", -1, ""},
		{"{\"other\": 1}", -1, ""},
	} {
		r, err := lastLineReward(c.out)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%q: %v", c.out, err)
		case c.err == "" && c.want < 0 && (r != nil || err != nil):
			t.Errorf("%q: %v %v", c.out, r, err)
		case c.err == "" && c.want >= 0 && (r == nil || *r != c.want):
			t.Errorf("%q: %v %v", c.out, r, err)
		}
	}
}
