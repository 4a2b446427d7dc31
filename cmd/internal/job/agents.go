package job

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/mtgrpo/mtgrpo/cmd/internal/config"
	"github.com/mtgrpo/mtgrpo/cmd/internal/setup"
	"github.com/mtgrpo/mtgrpo/env/sandbox"
	"github.com/mtgrpo/mtgrpo/rollout"
	"github.com/mtgrpo/mtgrpo/rollout/serve"
)

// agentRunner is the endpoint of env.agent's programs, listening for the whole run, and the
// runner that plays training and evaluation batches through it.
type agentRunner struct {
	agents *serve.Agents
	http   *http.Server
	url    string
}

// openAgents starts the endpoint when env.agent is set (nil otherwise). log receives refused
// and failed calls.
func openAgents(c *config.Config, p *setup.Policy, gen rollout.Generator, log func(string)) (*agentRunner, error) {
	a := c.Env.Agent
	if a == nil {
		return nil, nil
	}
	srv, err := serve.New(gen, p.Cache, p.Tok, p.Backend.StopTokenIDs(), serve.Config{Model: a.Model, Log: log})
	if err != nil {
		return nil, err
	}
	addr := a.Listen
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("env.agent.listen %s: %w", addr, err)
	}
	var progs *sandbox.Programs
	if !a.Service {
		if progs, err = sandbox.NewPrograms(sandbox.ProgramConfig{Helper: a.Helper}); err != nil {
			ln.Close()
			return nil, fmt.Errorf("env.agent.helper: %w", err)
		}
	}
	host := ln.Addr().String()
	if strings.HasPrefix(host, "[::]") || strings.HasPrefix(host, "0.0.0.0") {
		host = "127.0.0.1" + host[strings.LastIndex(host, ":"):]
	}
	r := &agentRunner{http: &http.Server{Handler: srv.Handler()}, url: "http://" + host + "/v1"}
	if r.agents, err = serve.NewAgents(srv, p.Cache, progs, *a, r.url); err != nil {
		ln.Close()
		return nil, err
	}
	go func() { _ = r.http.Serve(ln) }()
	switch {
	case log == nil:
	case a.Service:
		log(fmt.Sprintf("agent endpoint %s: agent services take episodes at POST %s/mtgrpo/episodes/next", r.url, r.url))
	default:
		log(fmt.Sprintf("agent endpoint %s for %s; %s", r.url, strings.Join(a.Command, " "), progs))
	}
	return r, nil
}

// runner is the batches' runner (nil: the multi-turn driver).
func (r *agentRunner) runner() rollout.NewRunner {
	if r == nil {
		return nil
	}
	return r.agents.Runner
}

// Close stops the endpoint.
func (r *agentRunner) Close() error {
	if r == nil {
		return nil
	}
	if err := r.http.Shutdown(context.Background()); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
