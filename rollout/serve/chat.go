package serve

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/mtgrpo/mtgrpo/env"
	"github.com/mtgrpo/mtgrpo/rollout"
)

// call is one request being served.
type call struct {
	req     *chatRequest
	sess    *Session
	seed    uint64
	msgs    []env.Message
	tools   []env.ToolSpec
	parse   bool // tools were given and tool_choice is not "none"
	stops   []string
	plan    planned
	over    []string // sampling fields replaced by the run's
	id      string
	created int64
}

// chat serves POST /v1/chat/completions.
func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	c, e := s.prepare(r)
	if e != nil {
		s.logf("serve: %s: refused: %s", r.URL.Path, e.Message)
		writeError(w, e)
		return
	}
	sampling, e := s.sampling(c)
	if e != nil {
		writeError(w, e)
		return
	}
	j := &job{req: &rollout.Request{Prompt: c.plan.prompt, Sampling: sampling}, done: make(chan jobResult, 1)}
	streaming := c.req.Stream != nil && *c.req.Stream
	if streaming {
		j.stream = newTokenStream(s.tok, sampling.StopStrings, !c.parse)
		j.req.OnToken = j.stream.add
	}
	admitted, e := c.sess.admit(&j.req.Sampling.MaxNewTokens, func() { s.pump.abort(j) })
	if e != nil {
		s.logf("serve: session %s: %s", short(c.sess.Key), e.Message)
		writeError(w, e)
		return
	}
	if fixed, seed, _ := s.settings(); fixed != nil { // the session's seed and the call's number: reproducible, distinct per copy
		j.req.Sampling.Seed = rollout.Seed(mix(seed, c.seed, uint64(admitted)))
	}
	t0 := time.Now()
	s.pump.submit(j)
	var res jobResult
	if streaming {
		res = s.streamResult(w, r, c, j)
	} else {
		select {
		case res = <-j.done:
		case <-r.Context().Done():
			s.pump.abort(j)
			res = jobResult{err: errAborted}
		}
	}
	if res.err != nil {
		c.sess.finish(admitted, nil)
		if !streaming {
			s.fail(w, c, res.err)
		} else if !errors.Is(res.err, errAborted) { // headers are sent: the error is an event, as OpenAI streams it
			s.logf("serve: session %s: %v", short(c.sess.Key), res.err)
			s.write(w, map[string]any{"error": &apiError{Message: res.err.Error(), Type: typeServer}})
		}
		return
	}
	rec := s.record(c, res.res, time.Since(t0))
	c.sess.finish(admitted, rec)
	if streaming {
		s.finishStream(w, c, j, res.res, rec)
		return
	}
	writeJSON(w, s.completion(c, res.res, rec))
}

// prepare reads, checks and renders a request; nothing is queued yet.
func (s *Server) prepare(r *http.Request) (*call, *apiError) {
	sess, seed, e := s.session(r)
	if e != nil {
		return nil, e
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return nil, invalid("", "", "reading the request body: %v", err)
	}
	if len(body) > maxBody {
		return nil, &apiError{Status: http.StatusRequestEntityTooLarge, Type: typeInvalid,
			Message: fmt.Sprintf("the request body is larger than %d MiB", maxBody>>20)}
	}
	req, e := decodeRequest(body)
	if e != nil {
		return nil, e
	}
	c := &call{req: req, sess: sess, seed: seed, id: "chatcmpl-" + randomHex(12), created: time.Now().Unix()}
	if c.msgs, e = req.messages(); e != nil {
		return nil, e
	}
	if c.tools, e = req.tools(); e != nil {
		return nil, e
	}
	choice, _ := req.toolChoice()
	c.parse = len(c.tools) > 0 && choice != "none"
	c.stops, _ = req.stops()
	_, _, vars := s.settings()
	rend, err := rollout.NewRenderer(s.tok, c.tools, vars)
	if err == nil {
		c.plan, err = plan(sess, rend, s.stops, c.msgs, c.tools)
	}
	if err != nil {
		return nil, invalid("messages", codeValue, "messages: the chat template cannot render them: %v", err)
	}
	n := len(c.plan.prompt)
	if room := s.maxLen - n; room < 1 || req.maxNew() > room {
		return nil, invalid("messages", codeContext,
			"This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion).",
			s.maxLen, n+req.maxNew(), n, req.maxNew())
	}
	return c, nil
}

// sampling is the call's sampling: the run's (Config.Sampling) or the request's.
func (s *Server) sampling(c *call) (rollout.Sampling, *apiError) {
	req := c.req
	room := s.maxLen - len(c.plan.prompt)
	var sp rollout.Sampling
	fixed, _, _ := s.settings()
	if f := fixed; f != nil {
		sp = *f
		sp.StopStrings, sp.StopTokenIDs, sp.IgnoreEOS, sp.IncludeStopString = nil, nil, false, false
		if req.Temperature != nil && *req.Temperature != f.Temperature {
			c.over = append(c.over, "temperature")
		}
		if req.TopP != nil && *req.TopP != f.TopP && !(*req.TopP == 1 && f.TopP == 0) {
			c.over = append(c.over, "top_p")
		}
		if req.Seed != nil {
			c.over = append(c.over, "seed")
		}
	} else {
		if req.Temperature != nil {
			if *req.Temperature == 0 {
				sp.Greedy = true
			} else {
				sp.Temperature = *req.Temperature
			}
		}
		if req.TopP != nil {
			sp.TopP = *req.TopP
		}
		if req.Seed != nil {
			sp.Seed = rollout.Seed(uint64(*req.Seed))
		}
	}
	maxNew := room
	if sp.MaxNewTokens > 0 {
		maxNew = min(maxNew, sp.MaxNewTokens)
	}
	if m := req.maxNew(); m > 0 {
		maxNew = min(maxNew, m)
	}
	sp.MaxNewTokens = maxNew
	sp.StopStrings = c.stops
	if err := sp.Validate(); err != nil {
		return sp, invalid("", codeValue, "%v", err)
	}
	return sp, nil
}

// fail answers a call whose generation did not complete.
func (s *Server) fail(w http.ResponseWriter, c *call, err error) {
	if errors.Is(err, errAborted) {
		select {
		case <-c.sess.Done():
			writeError(w, &apiError{Status: 409, Message: "the episode of this API key ended during the call", Type: typeInvalid, Code: strp(codeEnded)})
		default:
			writeError(w, &apiError{Status: 499, Message: "the call was aborted", Type: typeInvalid})
		}
		return
	}
	s.logf("serve: session %s: %v", short(c.sess.Key), err)
	writeError(w, &apiError{Status: http.StatusInternalServerError, Message: err.Error(), Type: typeServer})
}

// record makes the call's record: the ids the engine saw and sampled, and the reply.
func (s *Server) record(c *call, res *rollout.Result, took time.Duration) *Call {
	reply := s.reply(c, res)
	return &Call{Extends: c.plan.extends, Segment: c.plan.segment, Prompt: c.plan.prompt, Reused: c.plan.reused,
		Output: res.Tokens, LogProbs: res.LogProbs, TemperedLogProbs: res.TemperedLogProbs, Finish: res.Finish,
		Text: res.Text, Reply: reply, Messages: c.msgs, Tools: c.tools, Overridden: c.over, Queue: res.Queued,
		Total: took, fullStops: c.plan.fullStops}
}

// reply is the assistant message of a result: with tools, the tool calls parsed from the text
// in the model's own format (env.ParseToolCalls) and the prose around them; a message with a
// malformed call is returned as plain text, for the agent to see what the model wrote.
func (s *Server) reply(c *call, res *rollout.Result) env.Message {
	m := env.Message{Role: env.RoleAssistant, Content: res.Text}
	if !c.parse {
		return m
	}
	p := env.ParseToolCalls(res.Text)
	if len(p.Errors) > 0 || len(p.Calls) == 0 {
		return m
	}
	m.Content = p.Content
	calls := p.Calls
	if c.req.ParallelToolCalls != nil && !*c.req.ParallelToolCalls {
		calls = calls[:1]
	}
	for _, tc := range calls {
		tc.ID = "call_" + randomHex(12)
		m.ToolCalls = append(m.ToolCalls, tc)
	}
	return m
}

// finishReason is OpenAI's name for why the call ended.
func finishReason(rec *Call) string {
	switch {
	case len(rec.Reply.ToolCalls) > 0:
		return "tool_calls"
	case rec.Finish == rollout.FinishLength:
		return "length"
	}
	return "stop"
}

// completion is the non-streaming response.
func (s *Server) completion(c *call, res *rollout.Result, rec *Call) completion {
	msg := replyMessage{Role: "assistant"}
	if rec.Reply.Content != "" || len(rec.Reply.ToolCalls) == 0 {
		content := rec.Reply.Content
		msg.Content = &content
	}
	msg.ToolCalls = wireCalls(rec.Reply.ToolCalls, false)
	ch := choice{Index: 0, Message: msg, FinishReason: finishReason(rec)}
	if c.req.Logprobs != nil && *c.req.Logprobs {
		ch.Logprobs = s.logprobs(res)
	}
	u := s.usage(rec)
	return completion{ID: c.id, Object: "chat.completion", Created: c.created, Model: s.cfg.Model,
		Choices: []choice{ch}, Usage: &u}
}

func (s *Server) usage(rec *Call) usage {
	return usage{PromptTokens: len(rec.Prompt), CompletionTokens: len(rec.Output),
		TotalTokens: len(rec.Prompt) + len(rec.Output), PromptTokensDetails: &promptDetails{CachedTokens: rec.Reused}}
}

// wireCalls writes tool calls as the API does (arguments as a JSON string); in a stream delta
// each carries its index.
func wireCalls(calls []env.ToolCall, indexed bool) []wireToolCall {
	var out []wireToolCall
	for i, tc := range calls {
		w := wireToolCall{ID: tc.ID, Type: "function"}
		if indexed {
			w.Index = &i
		}
		w.Function.Name, w.Function.Arguments = tc.Function.Name, string(tc.Function.Arguments)
		out = append(out, w)
	}
	return out
}

// logprobs are the sampled tokens' log-probabilities under the distribution they were drawn
// from (after temperature and top-p), without alternatives.
func (s *Server) logprobs(res *rollout.Result) *logprobs {
	out := &logprobs{Content: []tokenLogprob{}, Refusal: nil}
	for i, id := range res.Tokens {
		text := s.tok.Decode([]int{int(id)}, false)
		b := make([]int, len(text))
		for k := 0; k < len(text); k++ {
			b[k] = int(text[k])
		}
		out.Content = append(out.Content, tokenLogprob{Token: text, Logprob: float64(res.LogProbs[i]), Bytes: b, TopLogprobs: []any{}})
	}
	return out
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// short is a key shortened for logs.
func short(key string) string {
	if len(key) > 16 {
		return key[:16] + "…"
	}
	return key
}

// mix derives a seed (splitmix64 over the inputs).
func mix(xs ...uint64) uint64 {
	h := uint64(0x9e3779b97f4a7c15)
	for _, x := range xs {
		h ^= x + 0x9e3779b97f4a7c15 + (h << 6) + (h >> 2)
		h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9
		h = (h ^ (h >> 27)) * 0x94d049bb133111eb
		h ^= h >> 31
	}
	return h
}
