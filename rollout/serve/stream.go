package serve

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/mtgrpo/mtgrpo/rollout"
	"github.com/mtgrpo/mtgrpo/tokenizer"
)

// Streaming responses: server-sent events of chat.completion.chunk objects, then "data: [DONE]".
// The first chunk carries the role; text deltas follow as tokens are drawn, when the response
// cannot hold tool calls (no tools, or tool_choice "none"); with tools the content and the calls
// are sent when generation ends, since the model's call markup is only known then. Text that could
// still become the start of a stop string is held back until it cannot, text from a stop string
// on is never sent, and deltas end on character boundaries. The concatenated deltas equal the
// non-streaming response's content, and the tokens are the same.

// tokenStream collects the tokens the engine draws for a streaming call (OnToken runs on the
// torch thread and never blocks) and turns them into text deltas on the handler's goroutine.
type tokenStream struct {
	mu     sync.Mutex
	ids    []int32
	notify chan struct{}

	live  bool // text deltas are sent as tokens arrive
	dec   *tokenizer.DecodeStream
	text  strings.Builder // decoded so far
	sent  int             // bytes of text sent
	stops []string
}

func newTokenStream(tok *tokenizer.Tokenizer, stops []string, live bool) *tokenStream {
	return &tokenStream{notify: make(chan struct{}, 1), live: live, dec: tok.NewDecodeStream(true), stops: stops}
}

func (t *tokenStream) add(_ int, id int32) {
	t.mu.Lock()
	t.ids = append(t.ids, id)
	t.mu.Unlock()
	select {
	case t.notify <- struct{}{}:
	default:
	}
}

// delta decodes the tokens that arrived and returns the text that may be sent now.
func (t *tokenStream) delta() string {
	t.mu.Lock()
	ids := t.ids
	t.ids = nil
	t.mu.Unlock()
	for _, id := range ids {
		t.text.WriteString(t.dec.Next(int(id)))
	}
	if !t.live {
		return ""
	}
	text := t.text.String()
	end := sendable(text, t.stops)
	if end <= t.sent {
		return ""
	}
	d := text[t.sent:end]
	t.sent = end
	return d
}

// sendable is how much of text may be streamed: up to the earliest stop string in it (the
// engine cuts the reply there; the token that completed it may have brought text beyond), else
// all but the longest tail that could still begin a stop string; never part of a character.
func sendable(text string, stops []string) int {
	end, hold := len(text), 0
	for _, s := range stops {
		if i := strings.Index(text, s); i >= 0 && i < end {
			end = i
		}
		for k := min(len(s)-1, len(text)); k > hold; k-- {
			if strings.HasSuffix(text, s[:k]) {
				hold = k
				break
			}
		}
	}
	if end == len(text) {
		end -= hold
	}
	for end > 0 && end < len(text) && !utf8.RuneStart(text[end]) {
		end--
	}
	return end
}

// streamResult writes the stream's first chunks while generation runs and returns its result.
func (s *Server) streamResult(w http.ResponseWriter, r *http.Request, c *call, j *job) jobResult {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("Connection", "keep-alive")
	w.WriteHeader(http.StatusOK)
	empty := ""
	s.event(w, c, chunkChoice{Delta: delta{Role: "assistant", Content: &empty}})
	for {
		select {
		case res := <-j.done:
			return res
		case <-j.stream.notify:
			if d := j.stream.delta(); d != "" {
				s.event(w, c, chunkChoice{Delta: delta{Content: &d}})
			}
		case <-r.Context().Done():
			s.pump.abort(j)
			return jobResult{err: errAborted}
		}
	}
}

// finishStream sends the rest of the content, the tool calls, the finish reason, the usage when
// asked for, and [DONE].
func (s *Server) finishStream(w http.ResponseWriter, c *call, j *job, res *rollout.Result, rec *Call) {
	st := j.stream
	st.delta()
	content := rec.Reply.Content
	if st.live && strings.HasPrefix(content, st.text.String()[:st.sent]) {
		content = content[st.sent:]
	} else if st.live && st.sent > 0 {
		s.logf("serve: session %s: streamed text %q is not a prefix of the reply", short(c.sess.Key), st.text.String()[:st.sent])
	}
	if content != "" {
		s.event(w, c, chunkChoice{Delta: delta{Content: &content}})
	}
	if calls := wireCalls(rec.Reply.ToolCalls, true); len(calls) > 0 {
		s.event(w, c, chunkChoice{Delta: delta{ToolCalls: calls}})
	}
	why := finishReason(rec)
	last := chunkChoice{Delta: delta{}, FinishReason: &why}
	if c.req.Logprobs != nil && *c.req.Logprobs {
		last.Logprobs = s.logprobs(res)
	}
	s.event(w, c, last)
	if c.req.StreamOptions != nil && c.req.StreamOptions.IncludeUsage {
		u := s.usage(rec)
		s.write(w, chunkWithUsage{chunk: s.chunk(c, nil), Usage: &u})
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	flush(w)
}

func (s *Server) chunk(c *call, choices []chunkChoice) chunk {
	if choices == nil {
		choices = []chunkChoice{}
	}
	return chunk{ID: c.id, Object: "chat.completion.chunk", Created: c.created, Model: s.cfg.Model, Choices: choices}
}

// event writes one chunk of one choice (with "usage": null when the usage chunk will follow).
func (s *Server) event(w http.ResponseWriter, c *call, ch chunkChoice) {
	k := s.chunk(c, []chunkChoice{ch})
	if c.req.StreamOptions != nil && c.req.StreamOptions.IncludeUsage {
		s.write(w, chunkWithUsage{chunk: k})
		return
	}
	s.write(w, k)
}

func (s *Server) write(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	fmt.Fprintf(w, "data: %s\n\n", b)
	flush(w)
}

func flush(w http.ResponseWriter) {
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}
