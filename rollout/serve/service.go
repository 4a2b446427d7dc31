package serve

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/mtgrpo/mtgrpo/env/agent"
)

// Agent services (env.agent.service). Instead of a program per episode, services that run on
// their own call in for episodes, as AReaL's and verl's agent loops hand a rollout to an agent
// server. An episode is offered when its batch starts and waits for a service:
//
//	POST /v1/mtgrpo/episodes/next   (Authorization: Bearer SERVICE_KEY; body optional:
//	                                {"wait_s": seconds, at most 60, default 20})
//	  200 {"episode", "group", "task", "messages", "tools", "base_url", "api_key", "time_left_s"}
//	      the oldest offered episode, now the caller's (base_url: the endpoint at the address
//	      the caller reached);
//	  204 none was offered within wait_s: ask again.
//	POST /v1/chat/completions       (the episode's api_key, at base_url) its calls, as a program's;
//	POST /v1/mtgrpo/reward          (optional) its reward, as a program reports it;
//	POST /v1/mtgrpo/finish          (the episode's api_key) {} when done, {"reward": r,
//	                                "metrics": {...}} to report the reward with it, or
//	                                {"error": "why"} to fail the episode.
//
// An episode has env.agent.time from its offer to its finish: one that no service takes, or that
// a service takes and does not finish, fails with that cause when it runs out (its calls in
// flight are aborted, its key refused from then on); the batch goes on.

// Service routes' bounds.
const (
	defaultWait = 20 * time.Second
	maxWait     = 60 * time.Second
)

// service is the queue of offered episodes.
type service struct {
	key string // "" : any caller may take episodes

	mu      sync.Mutex
	pending []*offer
	added   chan struct{} // closed (and replaced) when an episode is offered
}

// offer is one episode waiting for, or held by, a service.
type offer struct {
	ep       agent.Episode
	deadline time.Time
	taken    chan struct{}  // closed when a service takes it
	finished chan finishing // the service's finish (buffered)
	once     sync.Once
}

// finishing is what a service reported when it finished an episode.
type finishing struct {
	reward *Reward // nil: none with the finish
}

func newService(key string) *service { return &service{key: key, added: make(chan struct{})} }

// offer queues an episode for the services.
func (s *service) offer(ep agent.Episode, deadline time.Time) *offer {
	o := &offer{ep: ep, deadline: deadline, taken: make(chan struct{}), finished: make(chan finishing, 1)}
	s.mu.Lock()
	s.pending = append(s.pending, o)
	close(s.added)
	s.added = make(chan struct{})
	s.mu.Unlock()
	return o
}

// withdraw removes an offer no service took (its time ran out); false if one took it meanwhile.
func (s *service) withdraw(o *offer) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, p := range s.pending {
		if p == o {
			s.pending = append(s.pending[:i], s.pending[i+1:]...)
			return true
		}
	}
	return false
}

// take hands the oldest offer to a caller, waiting up to wait for one.
func (s *service) take(ctx context.Context, wait time.Duration) *offer {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		s.mu.Lock()
		if len(s.pending) > 0 {
			o := s.pending[0]
			s.pending = s.pending[1:]
			s.mu.Unlock()
			close(o.taken)
			return o
		}
		added := s.added
		s.mu.Unlock()
		select {
		case <-added:
		case <-timer.C:
			return nil
		case <-ctx.Done():
			return nil
		}
	}
}

// nextEpisode serves POST /v1/mtgrpo/episodes/next.
func (s *Server) nextEpisode(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	svc := s.svc
	s.mu.Unlock()
	if svc == nil {
		writeError(w, &apiError{Status: http.StatusNotFound, Type: typeInvalid,
			Message: "this run hands no episodes to services: env.agent.service is not set"})
		return
	}
	if svc.key != "" && subtle.ConstantTimeCompare([]byte(apiKey(r)), []byte(svc.key)) != 1 {
		writeError(w, &apiError{Status: http.StatusUnauthorized, Type: typeInvalid, Code: strp(codeInvalidKey),
			Message: "taking episodes needs the service key (env.agent.service_key) as Authorization: Bearer KEY"})
		return
	}
	var body struct {
		Wait *float64 `json:"wait_s"`
	}
	raw, err := io.ReadAll(io.LimitReader(r.Body, 1<<16))
	if err == nil && len(raw) > 0 {
		err = json.Unmarshal(raw, &body)
	}
	if err != nil {
		writeError(w, invalid("wait_s", codeValue, "the body is not {\"wait_s\": seconds}: %v", err))
		return
	}
	wait := defaultWait
	if body.Wait != nil {
		if !(*body.Wait >= 0 && *body.Wait <= maxWait.Seconds()) {
			writeError(w, invalid("wait_s", codeValue, "wait_s %v: must be in [0, %v]", *body.Wait, maxWait.Seconds()))
			return
		}
		wait = time.Duration(*body.Wait * float64(time.Second))
	}
	o := svc.take(r.Context(), wait)
	if o == nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	ep := o.ep
	if r.Host != "" { // the address the service reached: the trainer's own may be a loopback one
		ep.BaseURL = "http://" + r.Host + "/v1"
	}
	ep.TimeLeft = max(time.Until(o.deadline), 0).Seconds()
	writeJSON(w, ep)
}

// finishEpisode serves POST /v1/mtgrpo/finish: the episode of the request's key is over.
func (s *Server) finishEpisode(w http.ResponseWriter, r *http.Request) {
	sess, _, e := s.session(r)
	if e != nil {
		writeError(w, e)
		return
	}
	s.mu.Lock()
	o := s.offers[sess]
	s.mu.Unlock()
	if o == nil {
		writeError(w, &apiError{Status: http.StatusConflict, Type: typeInvalid, Code: strp(codeEnded),
			Message: "this key's episode was not handed to a service, or is over"})
		return
	}
	raw, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		writeError(w, invalid("", "", "reading the body: %v", err))
		return
	}
	var f finishing
	if raw = bytes.TrimSpace(raw); len(raw) > 0 && string(raw) != "{}" {
		if f.reward, e = parseReward(raw); e != nil {
			writeError(w, e)
			return
		}
	}
	sent := false
	o.once.Do(func() { o.finished <- f; sent = true })
	if !sent {
		writeError(w, &apiError{Status: http.StatusConflict, Type: typeInvalid, Code: strp(codeEnded), Message: "the episode was already finished"})
		return
	}
	writeJSON(w, map[string]any{"ok": true})
}

// playService offers an episode to the services and waits for its finish, its time's end or
// ctx's; "" when it finished, else why it failed.
func (b *batch) playService(ctx context.Context, sess *Session, ep agent.Episode) (*Reward, string) {
	a := b.a
	a.srv.mu.Lock()
	svc := a.srv.svc
	a.srv.mu.Unlock()
	limit := a.cfg.Limits().Wall
	t0 := time.Now()
	o := svc.offer(ep, t0.Add(limit))
	a.srv.mu.Lock()
	a.srv.offers[sess] = o
	a.srv.mu.Unlock()
	defer func() {
		a.srv.mu.Lock()
		delete(a.srv.offers, sess)
		a.srv.mu.Unlock()
	}()
	timer := time.NewTimer(limit)
	defer timer.Stop()
	var end string
	select {
	case f := <-o.finished:
		return f.reward, ""
	case <-ctx.Done():
		end = fmt.Sprintf("stopped before it finished: %v", ctx.Err())
	case <-timer.C:
	}
	late := true
	o.once.Do(func() { late = false }) // a finish from now on is refused
	if late {                          // it finished as time ran out
		f := <-o.finished
		return f.reward, ""
	}
	switch {
	case svc.withdraw(o) && end == "":
		end = fmt.Sprintf("no agent service took it within env.agent.time (%v): is a service asking POST %s/mtgrpo/episodes/next?", limit, a.baseURL)
	case end == "":
		end = fmt.Sprintf("an agent service took it and did not finish it (POST %s/mtgrpo/finish) within env.agent.time (%v) of its offer; %d calls completed",
			a.baseURL, limit, len(sess.Calls()))
	}
	return nil, end
}
