package external

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mtgrpo/mtgrpo/env"
	"github.com/mtgrpo/mtgrpo/env/extreward"
	"github.com/mtgrpo/mtgrpo/env/mcp"
	"github.com/mtgrpo/mtgrpo/env/openenv"
)

func TestValidate(t *testing.T) {
	oe := &openenv.Config{URLs: []string{"http://127.0.0.1:8000"}}
	for _, c := range []struct {
		name string
		ext  Config
		want string
	}{
		{"openenv", Config{}, "env openenv needs an openenv: section"},
		{"gsm8k", Config{OpenEnv: oe}, `an openenv: section is given but env is "gsm8k"`},
		{"openenv", Config{OpenEnv: oe, MCP: &mcp.Config{Servers: []mcp.ServerConfig{{Command: "x"}}}}, "mcp: tools cannot be added to an OpenEnv environment"},
		{"data", Config{MCP: &mcp.Config{}}, "mcp.servers: no server listed"},
		{"data", Config{Reward: &extreward.Config{Type: "lambda"}}, `reward_computation.type: "lambda"`},
	} {
		if err := c.ext.Validate(c.name); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %+v: %v", c.name, c.ext, err)
		}
	}
	if err := (Config{OpenEnv: oe}).Validate("openenv"); err != nil {
		t.Error(err)
	}
}

func TestOpen(t *testing.T) {
	ctx := context.Background()
	// An OpenEnv environment: its servers are probed (any HTTP answer will do), sessions are
	// opened only by resets.
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	e, c, err := Open(ctx, "openenv", env.Config{}, Config{OpenEnv: &openenv.Config{URLs: []string{srv.URL, srv.URL + "/"}, MaxSessions: 3}})
	if err != nil || e.MaxConcurrent != 6 || !e.MultiTurn {
		t.Fatalf("openenv: %+v, %v", e, err)
	}
	c.Close()
	// A server that does not answer stops the run at start, named.
	_, c, err = Open(ctx, "openenv", env.Config{}, Config{OpenEnv: &openenv.Config{URLs: []string{srv.URL, "http://127.0.0.1:1"}}})
	if err == nil || !strings.Contains(err.Error(), "openenv.urls[1] http://127.0.0.1:1: cannot reach the server") {
		t.Errorf("unreachable openenv server: %v", err)
	}
	c.Close()
	// A built-in environment scored by a reward script.
	e, c, err = Open(ctx, "gsm8k", env.Config{}, Config{Reward: &extreward.Config{Type: extreward.Command,
		Command: []string{"python3", "../extreward/testdata/reward.py"}, Name: "script"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ep := e.New()
	task := env.Task{ID: "1", GroundTruth: "7", Prompt: []env.Message{env.Text(env.RoleUser, "3+4?")}}
	start, _ := ep.Reset(ctx, task)
	res, _ := ep.Step(ctx, "#### 7")
	s, err := ep.Rubric().Score(&env.Trajectory{Task: task, Start: start, Turns: []env.Turn{{Assistant: "#### 7", Result: res}}})
	if err != nil || s.Metrics["reward/script"] != 1 || s.Reward != 1 || e.MultiTurn {
		t.Errorf("score %+v, %v, multi-turn %v", s, err, e.MultiTurn)
	}
	// An MCP server that cannot start: a clear error.
	_, c, err = Open(ctx, "gsm8k", env.Config{}, Config{MCP: &mcp.Config{Servers: []mcp.ServerConfig{{Name: "gone", Command: "/nonexistent"}}}})
	if err == nil || !strings.Contains(err.Error(), "mcp.servers[0] (gone): cannot start or reach the server") || c == nil {
		t.Errorf("missing server: %v", err)
	}
}
