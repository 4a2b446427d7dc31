package openenv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mtgrpo/mtgrpo/env"
	"github.com/mtgrpo/mtgrpo/env/data"
)

// closeWait bounds the goodbye at the end of a WebSocket session.
const closeWait = 2 * time.Second

// Open makes the environment: one Env per episode, each holding one session (a WebSocket
// connection, or an http server's single environment) from Reset to Close. MaxConcurrent is the
// number of sessions, to be passed to the rollout driver as MaxOpenEpisodes. Nothing is
// contacted until the first Reset.
func Open(cfg Config) (*env.Environment, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	per := cfg.MaxSessions
	if cfg.Transport == HTTP {
		per = 1
	}
	slots := make(chan string, per*len(cfg.URLs))
	for range per {
		for _, u := range cfg.URLs {
			slots <- u
		}
	}
	counter := new(atomic.Int64)
	return &env.Environment{
		Name:          "openenv",
		Description:   "an OpenEnv server's environment at " + strings.Join(cfg.URLs, ", "),
		MultiTurn:     true,
		MaxConcurrent: cap(slots),
		New:           func() env.Env { return &Env{cfg: cfg, slots: slots, counter: counter} },
		Generate: func(n int, seed int64) ([]data.Row, error) {
			return Generate(n, seed), nil
		},
	}, nil
}

// Generate makes n tasks for a server that needs no dataset: empty prompts (the reset
// observation is the prompt) and reset seeds seed, seed+1, ….
func Generate(n int, seed int64) []data.Row {
	rows := make([]data.Row, n)
	for i := range rows {
		rows[i] = data.Row{DataSource: "openenv", ExtraInfo: map[string]any{"index": i, "seed": seed + int64(i)}}
	}
	return rows
}

// Env is one episode on an OpenEnv server.
type Env struct {
	cfg     Config
	slots   chan string
	counter *atomic.Int64

	slot    string // the URL held, "" when none
	sess    session
	task    env.Task
	turns   int
	done    bool
	started bool
}

// Reset implements env.Env: takes a free session, resets the server's environment with the
// task's seed and returns system + the task's prompt + the observation as the opening messages.
func (e *Env) Reset(ctx context.Context, t env.Task) (env.Start, error) {
	e.release()
	e.task, e.turns, e.done, e.started = t, 0, false, true
	if err := e.acquire(ctx); err != nil {
		return env.Start{}, err
	}
	data := map[string]any{"episode_id": fmt.Sprintf("mtgrpo-%s-%d", t.ID, e.counter.Add(1))}
	if s, ok := resetSeed(t); ok {
		data["seed"] = s
	}
	for k, v := range e.cfg.ResetData {
		data[k] = v
	}
	where := e.slot
	r, err := e.resetWithRetries(ctx, data)
	if err != nil {
		e.release()
		return env.Start{}, fmt.Errorf("openenv: task %s: reset at %s: %w", t.ID, where, err)
	}
	var msgs []env.Message
	if e.cfg.System != "" {
		msgs = append(msgs, env.Text(env.RoleSystem, e.cfg.System))
	}
	msgs = append(msgs, t.Prompt...)
	obs, err := observationText(r.Observation, e.cfg.ObservationField)
	if err != nil {
		e.release()
		return env.Start{}, fmt.Errorf("openenv: task %s: reset at %s: %w", t.ID, where, err)
	}
	if obs != "" {
		msgs = append(msgs, env.Text(env.RoleUser, obs))
	}
	if len(msgs) == 0 {
		e.release()
		return env.Start{}, fmt.Errorf("openenv: task %s: no prompt and an empty reset observation", t.ID)
	}
	e.done = r.Done
	return env.Start{Messages: msgs}, nil
}

// resetSeed is the seed sent with a reset: extra_info.seed when the task has one (generated
// tasks), else the task's Seed; OpenEnv takes seeds >= 0 only.
func resetSeed(t env.Task) (int64, bool) {
	if v, ok := t.Extra["seed"]; ok {
		switch s := v.(type) {
		case int64:
			return s, s >= 0
		case int:
			return int64(s), s >= 0
		case float64:
			return int64(s), s >= 0
		}
	}
	return t.Seed, t.Seed >= 0
}

// acquire takes a session slot, waiting at most SlotWait.
func (e *Env) acquire(ctx context.Context) error {
	timer := time.NewTimer(e.cfg.SlotWait)
	defer timer.Stop()
	select {
	case e.slot = <-e.slots:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return fmt.Errorf("openenv: task %s: all %d sessions stayed busy for %v (run at most environment.MaxConcurrent "+
			"episodes at once: rollout max_open_episodes)", e.task.ID, cap(e.slots), e.cfg.SlotWait)
	}
}

// resetWithRetries opens a session and resets it, trying again (on a new session) after errors
// that a new try may cure, with a doubling pause.
func (e *Env) resetWithRetries(ctx context.Context, data map[string]any) (result, error) {
	pause := 200 * time.Millisecond
	for attempt := 0; ; attempt++ {
		r, err := e.resetOnce(ctx, data)
		if err == nil {
			return r, nil
		}
		if !retryable(err) || attempt >= e.cfg.Retries || ctx.Err() != nil {
			if attempt > 0 {
				err = fmt.Errorf("%w (after %d tries)", err, attempt+1)
			}
			return r, err
		}
		select {
		case <-time.After(pause):
		case <-ctx.Done():
			return r, ctx.Err()
		}
		pause = min(2*pause, 5*time.Second)
	}
}

func (e *Env) resetOnce(ctx context.Context, data map[string]any) (result, error) {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.RequestTimeout)
	defer cancel()
	if e.sess != nil {
		e.sess.close()
		e.sess = nil
	}
	if e.cfg.Transport == HTTP {
		e.sess = &httpSession{base: e.slot, limit: e.cfg.MaxMessageBytes}
	} else {
		s, err := dialWS(ctx, e.slot, e.cfg.MaxMessageBytes)
		if err != nil {
			return result{}, timeoutError(ctx, e.cfg.RequestTimeout, err)
		}
		e.sess = s
	}
	r, err := e.sess.reset(ctx, data)
	return r, timeoutError(ctx, e.cfg.RequestTimeout, err)
}

// timeoutError says "no answer within …" for an error caused by the request's deadline.
func timeoutError(ctx context.Context, d time.Duration, err error) error {
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("no answer within %v: %w", d, err)
	}
	return err
}

// Step implements env.Env: the assistant's message (reasoning before a closing </think> left
// out) goes to the server as the action; the observation comes back as the next message and the
// step's reward as the turn's reward. A server failure (an error answer, a malformed one, a
// timeout, a dropped connection) is returned as an error: the episode ends there, failed.
func (e *Env) Step(ctx context.Context, text string) (env.StepResult, error) {
	switch {
	case !e.started:
		return env.StepResult{}, errors.New("openenv: Step before Reset")
	case e.done || e.sess == nil:
		return env.StepResult{}, fmt.Errorf("openenv: Step after the episode of task %s ended", e.task.ID)
	}
	e.turns++
	msg := actionText(text)
	action := map[string]any{e.cfg.ActionField: msg}
	for k, v := range e.cfg.ActionExtra {
		action[k] = v
	}
	sctx, cancel := context.WithTimeout(ctx, e.cfg.RequestTimeout)
	r, err := e.sess.step(sctx, action)
	err = timeoutError(sctx, e.cfg.RequestTimeout, err)
	cancel()
	fail := func(err error) (env.StepResult, error) {
		where := e.slot
		e.done = true
		e.release()
		return env.StepResult{}, fmt.Errorf("openenv: task %s: step %d at %s: %w", e.task.ID, e.turns, where, err)
	}
	if err != nil {
		return fail(err)
	}
	res := env.StepResult{Assistant: env.Text(env.RoleAssistant, msg), Done: r.Done}
	if r.Reward != nil {
		if err := env.CheckOutside("reward", *r.Reward); err != nil {
			return fail(err)
		}
		res.Info.Reward = *r.Reward
	}
	obs, err := observationText(r.Observation, e.cfg.ObservationField)
	if err != nil {
		return fail(err)
	}
	if !r.Done && e.turns >= e.cfg.MaxTurns {
		res.Done, res.Info.Truncated = true, true
	}
	if obs != "" && !res.Done {
		res.Messages = []env.Message{{Role: e.cfg.ObservationRole, Content: obs}}
	}
	res.Info.Final = r.Done
	e.done = res.Done
	if e.done {
		e.release() // the session is free for the next episode before scoring
	}
	return res, nil
}

// actionText is the part of the model's message sent as the action: what follows the last
// </think> (the reasoning stays in the trained tokens, not in the action), trimmed.
func actionText(text string) string {
	if i := strings.LastIndex(text, "</think>"); i >= 0 {
		text = text[i+len("</think>"):]
	}
	return strings.TrimSpace(text)
}

// observationText is what the model reads of an observation: the configured field (a string as
// it is, anything else as JSON); without one, the only string field if there is exactly one,
// else the observation as JSON with its keys sorted.
func observationText(obs map[string]json.RawMessage, field string) (string, error) {
	if field != "" {
		raw, ok := obs[field]
		if !ok {
			return "", fmt.Errorf("the observation has no field %q (it has %s)", field, strings.Join(keys(obs), ", "))
		}
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s, nil
		}
		return string(raw), nil
	}
	var only string
	n := 0
	for _, raw := range obs {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			only = s
			n++
		}
	}
	if n == 1 {
		return only, nil
	}
	if len(obs) == 0 {
		return "", nil
	}
	b, err := json.Marshal(obs) // maps marshal with sorted keys
	return string(b), err
}

func keys(m map[string]json.RawMessage) []string {
	k := make([]string, 0, len(m))
	for x := range m {
		k = append(k, fmt.Sprintf("%q", x))
	}
	sort.Strings(k)
	return k
}

// release closes the session and gives its slot back.
func (e *Env) release() {
	if e.sess != nil {
		e.sess.close()
		e.sess = nil
	}
	if e.slot != "" {
		e.slots <- e.slot
		e.slot = ""
	}
}

// MultiTurn implements env.Env: the server decides when an episode ends.
func (e *Env) MultiTurn() bool { return true }

// Close implements env.Env: ends the session. Idempotent.
func (e *Env) Close() error {
	e.release()
	return nil
}

// Rubric implements env.Env: the trajectory reward is the last step's reward (final) or the sum
// of the steps' rewards (sum); each turn's reward is its step's.
func (e *Env) Rubric() *env.Rubric {
	rule := e.cfg.Reward
	return &env.Rubric{
		Funcs: []env.RewardFunc{{Name: "env_" + string(rule), Weight: 1, Fn: func(t *env.Trajectory) float64 {
			if len(t.Turns) == 0 {
				return 0
			}
			if rule == Final {
				return t.Final().Reward
			}
			sum := 0.0
			for _, tu := range t.Turns {
				sum += tu.Result.Info.Reward
			}
			return sum
		}}},
		Turn: []env.TurnRewardFunc{{Name: "env_step", Weight: 1, Fn: func(t *env.Trajectory, i int) float64 {
			return t.Turns[i].Result.Info.Reward
		}}},
	}
}

// Probe checks that every server of cfg answers HTTP at all (GET /health; any status will do,
// since servers differ in what they serve there), each within cfg's request timeout, so that a
// wrong or dead URL stops a run at start with an error naming it rather than failing every
// episode later.
func Probe(ctx context.Context, cfg Config) error {
	cfg = cfg.withDefaults()
	for i, u := range cfg.URLs {
		rctx, cancel := context.WithTimeout(ctx, cfg.RequestTimeout)
		req, err := http.NewRequestWithContext(rctx, http.MethodGet, strings.TrimSuffix(u, "/")+"/health", nil)
		if err == nil {
			var resp *http.Response
			if resp, err = httpClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}
		cancel()
		if err != nil {
			return fmt.Errorf("openenv.urls[%d] %s: cannot reach the server: %w", i, u, err)
		}
	}
	return nil
}
