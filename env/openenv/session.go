package openenv

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/coder/websocket"
)

// session is one episode's connection to a server.
type session interface {
	reset(ctx context.Context, data map[string]any) (result, error)
	step(ctx context.Context, action map[string]any) (result, error)
	close()
}

// wsSession is a WebSocket session: its own environment on the server while it is open.
type wsSession struct {
	conn *websocket.Conn
	url  string
}

// wsURL is the session endpoint of a base URL (http → ws, https → wss, plus /ws), as OpenEnv's
// client derives it (convert_to_ws_url in src/openenv/core/utils.py).
func wsURL(base string) string {
	u := strings.TrimRight(base, "/")
	switch {
	case strings.HasPrefix(u, "http://"):
		u = "ws://" + u[len("http://"):]
	case strings.HasPrefix(u, "https://"):
		u = "wss://" + u[len("https://"):]
	}
	return u + "/ws"
}

func dialWS(ctx context.Context, base string, limit int64) (*wsSession, error) {
	u := wsURL(base)
	conn, resp, err := websocket.Dial(ctx, u, nil)
	if err != nil {
		if resp != nil && resp.StatusCode >= 400 {
			return nil, &serverError{status: resp.StatusCode, msg: "the WebSocket upgrade was refused at " + u}
		}
		return nil, fmt.Errorf("connecting to %s: %w", u, err)
	}
	conn.SetReadLimit(limit)
	return &wsSession{conn: conn, url: u}, nil
}

// roundTrip sends one message and reads the answer. A cancelled or expired ctx closes the
// connection (coder/websocket does so), which ends the session: the episode fails.
func (s *wsSession) roundTrip(ctx context.Context, typ string, data any) (result, error) {
	body, err := json.Marshal(data)
	if err != nil {
		return result{}, err
	}
	out, _ := json.Marshal(wsMessage{Type: typ, Data: body})
	if err := s.conn.Write(ctx, websocket.MessageText, out); err != nil {
		return result{}, fmt.Errorf("sending %s to %s: %w", typ, s.url, err)
	}
	_, raw, err := s.conn.Read(ctx)
	if err != nil {
		return result{}, fmt.Errorf("reading the answer to %s from %s: %w", typ, s.url, err)
	}
	var m wsMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return result{}, fmt.Errorf("malformed message from %s (%v): %s", s.url, err, excerpt(raw))
	}
	switch m.Type {
	case "observation":
		return parseResult(m.Data)
	case "error":
		var e wsError
		if err := json.Unmarshal(m.Data, &e); err != nil || e.Message == "" {
			return result{}, &serverError{code: "UNKNOWN", msg: "error message " + excerpt(m.Data)}
		}
		return result{}, &serverError{code: e.Code, msg: e.Message}
	}
	return result{}, fmt.Errorf("unexpected message type %q from %s: %s", m.Type, s.url, excerpt(raw))
}

func (s *wsSession) reset(ctx context.Context, data map[string]any) (result, error) {
	return s.roundTrip(ctx, "reset", data)
}

func (s *wsSession) step(ctx context.Context, action map[string]any) (result, error) {
	return s.roundTrip(ctx, "step", action)
}

// close says goodbye as OpenEnv's client does ({"type": "close"}) and waits, at most closeWait,
// for the server to close the connection, so that the session is free on the server when close
// returns and the next episode's reset is not refused at capacity. OpenEnv's server closes the
// connection only after it has released the session (websocket_endpoint's finally in
// http_server.py). Closing from this side instead would not wait for that: the server's
// WebSocket layer (uvicorn) answers a close frame at once, while the application may not yet
// have seen the connection end. A server that answers the goodbye with a message does not know
// it, and gets the close handshake from this side.
func (s *wsSession) close() {
	ctx, cancel := context.WithTimeout(context.Background(), closeWait)
	defer cancel()
	defer s.conn.CloseNow() // after the server's close frame, or the wait, or a failed write
	if err := s.conn.Write(ctx, websocket.MessageText, []byte(`{"type":"close"}`)); err != nil {
		return // the connection is gone already (a request's ctx ended, the server dropped it)
	}
	// coder/websocket answers the server's close frame inside Read, which then fails with it.
	if _, _, err := s.conn.Read(ctx); err == nil {
		_ = s.conn.Close(websocket.StatusNormalClosure, "")
	}
}

// httpSession posts to a server that keeps one environment per process.
type httpSession struct {
	base  string
	limit int64
}

var httpClient = &http.Client{}

func (s *httpSession) post(ctx context.Context, path string, body any) (result, error) {
	in, err := json.Marshal(body)
	if err != nil {
		return result{}, err
	}
	u := strings.TrimRight(s.base, "/") + path
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(in))
	if err != nil {
		return result{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := httpClient.Do(req)
	if err != nil {
		return result{}, fmt.Errorf("POST %s: %w", u, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, s.limit+1))
	switch {
	case err != nil:
		return result{}, fmt.Errorf("POST %s: reading the answer: %w", u, err)
	case int64(len(raw)) > s.limit:
		return result{}, fmt.Errorf("POST %s: the answer is over %d bytes", u, s.limit)
	case resp.StatusCode != http.StatusOK:
		return result{}, &serverError{status: resp.StatusCode, msg: fmt.Sprintf("POST %s: %s", u, excerpt(bytes.TrimSpace(raw)))}
	}
	r, err := parseResult(raw)
	if err != nil {
		return r, fmt.Errorf("POST %s: %w", u, err)
	}
	return r, nil
}

func (s *httpSession) reset(ctx context.Context, data map[string]any) (result, error) {
	return s.post(ctx, "/reset", data)
}

func (s *httpSession) step(ctx context.Context, action map[string]any) (result, error) {
	return s.post(ctx, "/step", map[string]any{"action": action})
}

func (s *httpSession) close() {}
