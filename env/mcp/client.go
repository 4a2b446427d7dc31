package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/mtgrpo/mtgrpo/env"
)

// Client holds the sessions with the configured MCP servers and their tools.
type Client struct {
	servers []*server
	tools   []*Tool
}

// Connect validates cfg, starts or reaches every server and lists its tools. It fails, naming
// the server, when one cannot be reached, lists no tools (after the Tools filter), lists a
// tool another server also lists, or lacks a tool that Tools names. On failure every server
// already started is closed.
func Connect(ctx context.Context, cfg Config) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	c := &Client{}
	owner := map[string]string{}
	for i, sc := range cfg.Servers {
		s := newServer(sc, cfg)
		c.servers = append(c.servers, s)
		tools, err := c.addServer(ctx, s, owner)
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("mcp.servers[%d] (%s): %w", i, sc.name(), err)
		}
		c.tools = append(c.tools, tools...)
	}
	return c, nil
}

func (c *Client) addServer(ctx context.Context, s *server, owner map[string]string) ([]*Tool, error) {
	listed, err := s.start(ctx)
	if err != nil {
		return nil, err
	}
	var out []*Tool
	for _, t := range listed {
		if len(s.cfg.Tools) > 0 && !slices.Contains(s.cfg.Tools, t.Name) {
			continue
		}
		if o, dup := owner[t.Name]; dup {
			return nil, fmt.Errorf("tool %q is also listed by server %s (keep one with `tools:`)", t.Name, o)
		}
		owner[t.Name] = s.cfg.name()
		params, err := json.Marshal(t.InputSchema)
		if err != nil || t.InputSchema == nil {
			params = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		out = append(out, &Tool{srv: s, name: t.Name, desc: t.Description, params: params})
	}
	for _, want := range s.cfg.Tools {
		if !slices.ContainsFunc(out, func(t *Tool) bool { return t.name == want }) {
			return nil, fmt.Errorf("tools: the server lists no tool %q", want)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("the server lists no tools")
	}
	return out, nil
}

// Tools returns the servers' tools, in server order then listing order, for env.Config's
// ExtraTools.
func (c *Client) Tools() []env.Tool {
	out := make([]env.Tool, len(c.tools))
	for i, t := range c.tools {
		out[i] = t
	}
	return out
}

// Close ends every session (a stdio server's stdin is closed, then it is terminated if it does
// not exit). It is idempotent.
func (c *Client) Close() error {
	for _, s := range c.servers {
		s.close()
	}
	return nil
}
