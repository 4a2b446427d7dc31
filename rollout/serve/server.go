package serve

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/mtgrpo/mtgrpo/env"
	"github.com/mtgrpo/mtgrpo/rollout"
	"github.com/mtgrpo/mtgrpo/tokenizer"
)

// Config configures a Server.
type Config struct {
	// Model is the id /v1/models lists and responses carry. Requests may name any model: the
	// policy serves them all (an agent written for another model runs unchanged).
	Model string
	// ChatVars are extra chat template variables (rollout.chat_vars).
	ChatVars map[string]any
	// Sampling, when set, replaces the requests' temperature, top_p and seed: training and
	// evaluation sample as the run says, since the trainer recomputes log-probs at the run's
	// temperature, and every copy of a task in a group must draw its own tokens. Its
	// MaxNewTokens caps max_tokens. nil (mtgrpo serve): the requests' own values apply.
	Sampling *rollout.Sampling
	// Seed seeds the calls' sampling seeds under Sampling (with the session's seed and the
	// call's number).
	Seed uint64
	// AnyKey makes any API key (or none) open a session of its own on its first call (mtgrpo
	// serve); otherwise only keys opened with Open are served.
	AnyKey bool
	// APIKey, when set, is the only key AnyKey serves (mtgrpo serve --api-key): a request with
	// another key, or none, is refused (401).
	APIKey string
	// Limits bound the sessions AnyKey opens.
	Limits Limits
	// Log receives one line per refused or failed call (nil: dropped).
	Log func(string)
}

// maxBody bounds a request body.
const maxBody = 32 << 20

// maxAnySessions bounds the sessions AnyKey keeps: a new key beyond it replaces the least
// recently used session that has no call in flight. Such sessions keep only their newest
// maxCandidates calls (the ones a next call may extend), so a long-running server's memory stays
// bounded whatever its clients send.
const maxAnySessions = 256

// Server is the OpenAI-compatible endpoint over the engine: POST /v1/chat/completions, GET
// /v1/models, and POST /v1/mtgrpo/reward for a program's reward. Handlers run on their own
// goroutines; Run drives the engine on the torch thread.
type Server struct {
	cfg    Config
	tok    *tokenizer.Tokenizer
	pump   *pump
	maxLen int
	stops  map[int32]bool

	mu       sync.Mutex
	sessions map[string]*Session
	seeds    map[*Session]uint64
	anyUsed  map[*Session]int64 // the sessions AnyKey opened, by when they were last used
	svc      *service           // nil unless agent services call in (env.agent.service)
	offers   map[*Session]*offer
	clock    int64
	created  int64
}

// New makes the server over gen (the engine; cache, when not nil, is the PrefixCache its backend
// is). tok renders and parses.
func New(gen rollout.Generator, cache *PrefixCache, tok *tokenizer.Tokenizer, stops []int, cfg Config) (*Server, error) {
	if gen == nil || tok == nil {
		return nil, fmt.Errorf("serve: the server needs a generator and a tokenizer")
	}
	if cfg.Model == "" {
		cfg.Model = "mtgrpo"
	}
	if cfg.Sampling != nil {
		if err := cfg.Sampling.Validate(); err != nil {
			return nil, fmt.Errorf("serve: %w", err)
		}
	}
	s := &Server{cfg: cfg, tok: tok, pump: newPump(gen, cache), maxLen: gen.MaxLen(), stops: map[int32]bool{},
		sessions: map[string]*Session{}, seeds: map[*Session]uint64{}, anyUsed: map[*Session]int64{}, offers: map[*Session]*offer{}, created: time.Now().Unix()}
	for _, id := range stops {
		s.stops[int32(id)] = true
	}
	return s, nil
}

// Run serves calls until stop is closed or ctx ends (torch thread); calls still running are
// aborted. An engine error ends it.
func (s *Server) Run(ctx context.Context, stop <-chan struct{}) error { return s.pump.run(ctx, stop) }

// Model is the model id the server lists and answers with.
func (s *Server) Model() string { return s.cfg.Model }

// NewKey makes a fresh API key.
func NewKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "mtgrpo-" + hex.EncodeToString(b[:])
}

// setSampling replaces Config.Sampling, Seed and ChatVars for the calls from now on (each batch
// of episodes brings its own: training's, evaluation's).
func (s *Server) setSampling(sp *rollout.Sampling, seed uint64, vars map[string]any) {
	s.mu.Lock()
	s.cfg.Sampling, s.cfg.Seed, s.cfg.ChatVars = sp, seed, vars
	s.mu.Unlock()
}

// settings are the sampling, seed and chat variables in force.
func (s *Server) settings() (*rollout.Sampling, uint64, map[string]any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cfg.Sampling, s.cfg.Seed, s.cfg.ChatVars
}

// Open registers a session for key; seed seeds its calls under Config.Sampling.
func (s *Server) Open(key string, lim Limits, seed uint64) *Session {
	sess := newSession(key, lim)
	s.mu.Lock()
	s.sessions[key], s.seeds[sess] = sess, seed
	s.mu.Unlock()
	return sess
}

// Drop closes and forgets the session of key.
func (s *Server) Drop(key string) {
	s.mu.Lock()
	sess := s.sessions[key]
	delete(s.sessions, key)
	delete(s.seeds, sess)
	s.mu.Unlock()
	if sess != nil {
		sess.Close()
	}
}

// Handler is the HTTP API.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.chat)
	mux.HandleFunc("GET /v1/models", s.models)
	mux.HandleFunc("GET /v1/models/{model...}", s.model)
	mux.HandleFunc("POST /v1/mtgrpo/reward", s.reward)
	mux.HandleFunc("POST /v1/mtgrpo/episodes/next", s.nextEpisode)
	mux.HandleFunc("POST /v1/mtgrpo/finish", s.finishEpisode)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &apiError{Status: http.StatusNotFound, Type: typeInvalid,
			Message: fmt.Sprintf("%s %s: no such route (this server has POST /v1/chat/completions, GET /v1/models, POST /v1/mtgrpo/reward, and for agent services POST /v1/mtgrpo/episodes/next and /v1/mtgrpo/finish)", r.Method, r.URL.Path)})
	})
	return mux
}

// apiKey is the request's bearer token.
func apiKey(r *http.Request) string {
	h := r.Header.Get("Authorization")
	if k, ok := strings.CutPrefix(h, "Bearer "); ok {
		return strings.TrimSpace(k)
	}
	return ""
}

// session finds the request's session by its API key.
func (s *Server) session(r *http.Request) (*Session, uint64, *apiError) {
	key := apiKey(r)
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, ok := s.sessions[key]
	if !ok && s.cfg.AnyKey && s.keyServed(key) {
		s.makeRoom()
		sess = newSession(key, s.cfg.Limits)
		sess.keep = maxCandidates
		s.sessions[key], s.seeds[sess] = sess, 0
		ok = true
	}
	if !ok {
		msg := "no episode has this API key: use the key in OPENAI_API_KEY of the episode's program"
		switch {
		case s.cfg.AnyKey:
			msg = "this API key is not served: send the server's key (--api-key) as Authorization: Bearer KEY"
		case key == "":
			msg = "no API key: send the episode's key (OPENAI_API_KEY) as Authorization: Bearer KEY"
		}
		return nil, 0, &apiError{Status: http.StatusUnauthorized, Message: msg, Type: typeInvalid, Code: strp(codeInvalidKey)}
	}
	if sess.keep > 0 { // opened by AnyKey
		s.clock++
		s.anyUsed[sess] = s.clock
	}
	return sess, s.seeds[sess], nil
}

// keyServed says whether AnyKey opens a session for key.
func (s *Server) keyServed(key string) bool {
	return s.cfg.APIKey == "" || subtle.ConstantTimeCompare([]byte(key), []byte(s.cfg.APIKey)) == 1
}

// makeRoom drops the least recently used idle session AnyKey opened when there are
// maxAnySessions of them (s.mu held).
func (s *Server) makeRoom() {
	if len(s.anyUsed) < maxAnySessions {
		return
	}
	var lru *Session
	for sess, used := range s.anyUsed {
		if !sess.busy() && (lru == nil || used < s.anyUsed[lru]) {
			lru = sess
		}
	}
	if lru == nil {
		return
	}
	delete(s.sessions, lru.Key)
	delete(s.seeds, lru)
	delete(s.anyUsed, lru)
	lru.Close()
}

func (s *Server) models(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, modelList{Object: "list", Data: []modelInfo{s.modelInfo()}})
}

func (s *Server) model(w http.ResponseWriter, r *http.Request) {
	if name := r.PathValue("model"); name != s.cfg.Model {
		writeError(w, &apiError{Status: http.StatusNotFound, Type: typeInvalid, Param: strp("model"), Code: strp("model_not_found"),
			Message: fmt.Sprintf("The model %q does not exist; this server serves %q", name, s.cfg.Model)})
		return
	}
	writeJSON(w, s.modelInfo())
}

func (s *Server) modelInfo() modelInfo {
	return modelInfo{ID: s.cfg.Model, Object: "model", Created: s.created, OwnedBy: "mtgrpo"}
}

// rewardBody is what a program reports on the reward route.
type rewardBody struct {
	Reward  *float64           `json:"reward"`
	Metrics map[string]float64 `json:"metrics"`
	Error   string             `json:"error"`
}

// reward records a program's reward for its episode (the last report counts).
func (s *Server) reward(w http.ResponseWriter, r *http.Request) {
	sess, _, e := s.session(r)
	if e != nil {
		writeError(w, e)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		writeError(w, invalid("", "", "reading the body: %v", err))
		return
	}
	rw, e := parseReward(body)
	if e != nil {
		writeError(w, e)
		return
	}
	sess.mu.Lock()
	sess.reward = rw
	sess.mu.Unlock()
	writeJSON(w, map[string]any{"ok": true})
}

// parseReward reads {"reward": number, "metrics": {name: number}} or {"error": "why"}, with the
// numbers checked as every number from outside is (env.CheckOutside).
func parseReward(body []byte) (*Reward, *apiError) {
	var b rewardBody
	if err := json.Unmarshal(body, &b); err != nil {
		return nil, invalid("reward", codeValue, "the reward body is not {\"reward\": number, \"metrics\": {...}}: %v", err)
	}
	if b.Error != "" {
		return &Reward{Error: b.Error}, nil
	}
	if b.Reward == nil {
		return nil, invalid("reward", codeValue, "reward: missing (or send {\"error\": \"why\"} to fail the episode)")
	}
	if err := env.CheckOutside("reward", *b.Reward); err != nil {
		return nil, invalid("reward", codeValue, "%v", err)
	}
	for k, v := range b.Metrics {
		if err := env.CheckOutside(fmt.Sprintf("metrics[%q]", k), v); err != nil {
			return nil, invalid("metrics", codeValue, "%v", err)
		}
	}
	return &Reward{Reward: *b.Reward, Metrics: b.Metrics}, nil
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func (s *Server) logf(format string, a ...any) {
	if s.cfg.Log != nil {
		s.cfg.Log(fmt.Sprintf(format, a...))
	}
}
