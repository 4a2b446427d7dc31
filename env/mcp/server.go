package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mtgrpo/mtgrpo/internal/bounded"
)

// server is one configured MCP server and its live session. A session that died (the process
// exited, the connection broke) is replaced on the next call: a stdio server is started again,
// an HTTP server reconnected, at most MaxRestarts times over the run.
type server struct {
	cfg    ServerConfig
	limits Config
	client *sdk.Client

	mu       sync.Mutex
	sess     *sdk.ClientSession
	gen      int  // bumped with each new session
	dead     bool // the current session is known dead
	restarts int
	closed   bool

	oversize atomic.Bool // an HTTP answer passed the frame limit (cappedTransport)
}

func newServer(cfg ServerConfig, limits Config) *server {
	return &server{cfg: cfg, limits: limits,
		client: sdk.NewClient(&sdk.Implementation{Name: "mtgrpo", Version: "1"}, nil)}
}

// transport makes a fresh transport: a new process for a command, a new session for a URL.
func (s *server) transport() sdk.Transport {
	if s.cfg.URL != "" {
		return &sdk.StreamableClientTransport{Endpoint: s.cfg.URL, HTTPClient: &http.Client{Transport: cappedTransport{hit: &s.oversize}},
			DisableStandaloneSSE: true, MaxRetries: -1}
	}
	cmd := exec.Command(s.cfg.Command, s.cfg.Args...)
	cmd.Dir = s.cfg.Dir
	cmd.Env = os.Environ()
	for k, v := range s.cfg.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stderr = os.Stderr // a server's own diagnostics go to the run's log
	// A server stuck in a handler may not exit when its stdin closes: terminate it soon after.
	return &sdk.CommandTransport{Command: cmd, TerminateDuration: time.Second}
}

// connect opens a session, bounded by ConnectTimeout.
func (s *server) connect(ctx context.Context) (*sdk.ClientSession, error) {
	ctx, cancel := context.WithTimeout(ctx, s.limits.ConnectTimeout)
	defer cancel()
	sess, err := s.client.Connect(ctx, s.transport(), nil)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("no answer within %v: %w", s.limits.ConnectTimeout, err)
		}
		return nil, err
	}
	return sess, nil
}

// start opens the first session and lists the server's tools.
func (s *server) start(ctx context.Context) ([]*sdk.Tool, error) {
	sess, err := s.connect(ctx)
	if err != nil {
		return nil, fmt.Errorf("cannot start or reach the server: %w", err)
	}
	lctx, cancel := context.WithTimeout(ctx, s.limits.ConnectTimeout)
	defer cancel()
	var tools []*sdk.Tool
	for t, err := range sess.Tools(lctx, nil) {
		if err != nil {
			sess.Close()
			return nil, fmt.Errorf("listing tools: %w", err)
		}
		tools = append(tools, t)
	}
	s.mu.Lock()
	s.sess, s.gen = sess, 1
	s.mu.Unlock()
	s.watch(sess, 1)
	return tools, nil
}

// watch marks session gen dead when its connection ends (a stdio server that exited).
func (s *server) watch(sess *sdk.ClientSession, gen int) {
	go func() {
		_ = sess.Wait()
		s.markDead(gen)
	}()
}

func (s *server) markDead(gen int) {
	s.mu.Lock()
	if s.gen == gen {
		s.dead = true
	}
	s.mu.Unlock()
}

var errClosed = errors.New("the MCP client is closed")

// session returns a live session, starting a new one when the last died.
func (s *server) session(ctx context.Context) (*sdk.ClientSession, int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, 0, errClosed
	}
	if !s.dead && s.sess != nil {
		return s.sess, s.gen, nil
	}
	if s.restarts >= s.limits.MaxRestarts {
		return nil, 0, fmt.Errorf("server %s is down (restarted %d times, the limit)", s.cfg.name(), s.restarts)
	}
	s.restarts++
	if s.sess != nil {
		go s.sess.Close() // reaps a dead process; never blocks the caller
	}
	sess, err := s.connect(ctx)
	if err != nil {
		s.sess, s.dead = nil, true
		return nil, 0, fmt.Errorf("server %s died and did not come back (restart %d): %w", s.cfg.name(), s.restarts, err)
	}
	s.gen++
	s.sess, s.dead = sess, false
	s.watch(sess, s.gen)
	return sess, s.gen, nil
}

// call runs one tool call. When the session breaks under it (the server crashed), the server is
// restarted and the call tried once more on the fresh session.
func (s *server) call(ctx context.Context, name string, args any) (*sdk.CallToolResult, error) {
	var last error
	for attempt := 0; attempt < 2; attempt++ {
		sess, gen, err := s.session(ctx)
		if err != nil {
			return nil, err
		}
		res, err := sess.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
		if err == nil || ctx.Err() != nil || !brokenSession(err) {
			return res, err
		}
		s.markDead(gen)
		if frameTooLarge(err) || s.oversize.Swap(false) { // alive; the same call would answer the same
			return nil, fmt.Errorf("server %s answered more than the %d MiB one message may hold (the next call starts a new session): %w",
				s.cfg.name(), sdk.DefaultMaxLineLength>>20, err)
		}
		last = err
	}
	return nil, fmt.Errorf("server %s died during the call twice: %w", s.cfg.name(), last)
}

// frameTooLarge is an answer past the stdio transport's frame limit: the stream cannot be read
// on past it, so the session is done, but the server did not crash. (The SDK's error is not
// exported: it is known by its words.)
func frameTooLarge(err error) bool {
	return strings.Contains(err.Error(), "exceeded the configured maximum line length")
}

// cappedTransport bounds the body of each answer of an HTTP server to the stdio transport's frame
// limit (the SDK reads a JSON answer whole), so one message may hold the same over either; hit
// records that an answer was cut, which the SDK's error does not say.
type cappedTransport struct{ hit *atomic.Bool }

func (t cappedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil {
		resp.Body = &cappedBody{ReadCloser: resp.Body, left: sdk.DefaultMaxLineLength, hit: t.hit}
	}
	return resp, err
}

type cappedBody struct {
	io.ReadCloser
	left int64
	hit  *atomic.Bool
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.ReadCloser.Read(p)
	if b.left -= int64(n); b.left < 0 {
		b.hit.Store(true)
		return 0, fmt.Errorf("%w: an answer over %d bytes", bounded.ErrTooLarge, sdk.DefaultMaxLineLength)
	}
	return n, err
}

// brokenSession tells a dead connection from an error the server answered with (a JSON-RPC
// error: unknown tool, invalid arguments), which a new session would not change.
func brokenSession(err error) bool {
	var rpc *jsonrpc.Error
	return !errors.As(err, &rpc)
}

func (s *server) close() {
	s.mu.Lock()
	s.closed = true
	sess := s.sess
	s.sess = nil
	s.mu.Unlock()
	if sess != nil {
		sess.Close()
	}
}
