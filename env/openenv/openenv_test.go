package openenv

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mtgrpo/mtgrpo/env"
	"github.com/mtgrpo/mtgrpo/env/envtest"
)

// startServer runs testdata/server.py with flags and returns its base URL; it is killed when the
// test ends.
func startServer(t *testing.T, flags ...string) string {
	t.Helper()
	u, _ := envtest.StartURL(t, "python3", append([]string{"testdata/server.py"}, flags...)...)
	return u
}

func open(t *testing.T, cfg Config) *env.Environment {
	t.Helper()
	e, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// words mirrors the server's list: seed s picks words[s % 5].
var words = []string{"apple", "river", "stone", "cloud", "maple"}

func task(id string, seed int64) env.Task { return env.Task{ID: id, Seed: seed} }

// play runs one episode: a wrong guess, then the word. It returns the trajectory and score.
func play(t *testing.T, e env.Env, tk env.Task) (*env.Trajectory, env.Score) {
	t.Helper()
	ctx := context.Background()
	start, err := e.Reset(ctx, tk)
	if err != nil {
		t.Fatalf("reset: %v", err)
	}
	traj := &env.Trajectory{Task: tk, Start: start}
	for _, guess := range []string{"<think>hmm, maybe it is " + words[tk.Seed%5] + "</think>banana", "It is " + strings.ToUpper(words[tk.Seed%5])} {
		res, err := e.Step(ctx, guess)
		if err != nil {
			t.Fatalf("step: %v", err)
		}
		traj.Turns = append(traj.Turns, env.Turn{Assistant: guess, Result: res})
		if res.Done {
			break
		}
	}
	s, err := e.Rubric().Score(traj)
	if err != nil {
		t.Fatal(err)
	}
	e.Close()
	return traj, s
}

// checkEpisode: the reset observation opens the conversation, the wrong guess (the reasoning
// that names the word is not sent) gets the hint with reward 0, the right one ends the episode
// with reward 1.
func checkEpisode(t *testing.T, traj *env.Trajectory, s env.Score) {
	t.Helper()
	w := words[traj.Task.Seed%5]
	msgs := traj.Start.Messages
	if len(msgs) != 2 || msgs[0].Role != env.RoleSystem || msgs[1].Content != "Guess the secret word. It has 5 letters." {
		t.Fatalf("start %+v", msgs)
	}
	if len(traj.Turns) != 2 {
		t.Fatalf("%d turns", len(traj.Turns))
	}
	t0, t1 := traj.Turns[0].Result, traj.Turns[1].Result
	if t0.Done || t0.Info.Reward != 0 || len(t0.Messages) != 1 || t0.Messages[0].Content != "No. It starts with '"+w[:1]+"'." ||
		t0.Messages[0].Role != env.RoleUser || t0.Assistant.Content != "banana" {
		t.Errorf("turn 0 %+v", t0)
	}
	if !t1.Done || t1.Info.Reward != 1 || !t1.Info.Final || len(t1.Messages) != 0 {
		t.Errorf("turn 1 %+v", t1)
	}
	if s.Reward != 1 || len(s.TurnRewards) != 2 || s.TurnRewards[0] != 0 || s.TurnRewards[1] != 1 {
		t.Errorf("score %+v", s)
	}
}

// Four episodes at once over WebSocket sessions on one server, each with its own environment.
func TestWebSocketSessions(t *testing.T) {
	e := open(t, Config{URLs: []string{startServer(t)}, MaxSessions: 4, System: "Play."})
	if e.MaxConcurrent != 4 || !e.MultiTurn {
		t.Errorf("MaxConcurrent %d, MultiTurn %v", e.MaxConcurrent, e.MultiTurn)
	}
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			traj, s := play(t, e.New(), task("w", int64(i)))
			checkEpisode(t, traj, s)
		}()
	}
	wg.Wait()
}

// The http transport: one episode per URL at a time over a pool of two servers; a third episode
// waits for a slot, and gives up after SlotWait with an error saying what to do.
func TestHTTPPool(t *testing.T) {
	e := open(t, Config{URLs: []string{startServer(t), startServer(t)}, Transport: HTTP, System: "Play.",
		SlotWait: 300 * time.Millisecond})
	if e.MaxConcurrent != 2 {
		t.Errorf("MaxConcurrent %d", e.MaxConcurrent)
	}
	a, b := e.New(), e.New()
	ctx := context.Background()
	if _, err := a.Reset(ctx, task("a", 0)); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Reset(ctx, task("b", 1)); err != nil {
		t.Fatal(err)
	}
	_, err := e.New().Reset(ctx, task("c", 2))
	if err == nil || !strings.Contains(err.Error(), "all 2 sessions stayed busy for 300ms") {
		t.Errorf("third episode: %v", err)
	}
	a.Close()
	b.Close()
	for i := range 3 {
		traj, s := play(t, e.New(), task("p", int64(i)))
		checkEpisode(t, traj, s)
	}
}

// A server at capacity (one session) refuses the second session; its reset is retried until the
// first episode closes. Retries: 8 gives the tries ~20 s in all (pauses 0.2, 0.4, ... 5 s), so
// that a loaded machine, slow to close the first episode, does not run them out; here the third
// try, at ~0.6 s, gets the session.
func TestCapacityRetry(t *testing.T) {
	e := open(t, Config{URLs: []string{startServer(t, "--max-sessions", "1")}, MaxSessions: 2, Retries: 8, System: "Play."})
	first := e.New()
	if _, err := first.Reset(context.Background(), task("1", 0)); err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(300 * time.Millisecond)
		first.Close()
	}()
	traj, s := play(t, e.New(), task("2", 3))
	checkEpisode(t, traj, s)
	// Without retries the refusal is the error.
	e = open(t, Config{URLs: []string{startServer(t, "--max-sessions", "1")}, MaxSessions: 2, Retries: -1})
	first = e.New()
	first.Reset(context.Background(), task("1", 0))
	defer first.Close()
	_, err := e.New().Reset(context.Background(), task("2", 0))
	if err == nil || !strings.Contains(err.Error(), "Server at capacity (code CAPACITY_REACHED)") {
		t.Errorf("at capacity: %v", err)
	}
}

// A closed episode has released its session on the server: the next episode's reset, with no
// retries, is not refused at capacity. The server takes 200 ms to release a session after its
// last message, while its WebSocket layer answers a close frame at once (as OpenEnv's server
// under uvicorn does): a client that closed the connection itself and took that answer for the
// end of the session was refused on the next reset, every time here, and about one run in three
// of the rollout driver's OpenEnv test on a loaded machine.
func TestClosedSessionIsReleased(t *testing.T) {
	e := open(t, Config{URLs: []string{startServer(t, "--max-sessions", "1", "--slow-release", "0.2")}, MaxSessions: 1,
		Retries: -1, System: "Play."})
	for i := range 3 {
		traj, s := play(t, e.New(), task("c", int64(i)))
		checkEpisode(t, traj, s)
	}
	// An episode closed right after its reset.
	ep := e.New()
	if _, err := ep.Reset(context.Background(), task("c", 3)); err != nil {
		t.Fatal(err)
	}
	ep.Close()
	traj, s := play(t, e.New(), task("c", 4))
	checkEpisode(t, traj, s)
}

// Closing never hangs: a server that does not close the connection within closeWait of the
// goodbye is left; one that answers the goodbye as an unknown message gets the close handshake
// from this side at once.
func TestCloseIsBounded(t *testing.T) {
	for _, c := range []struct {
		flag     string
		min, max time.Duration
	}{
		{"--slow-release=10", closeWait, closeWait + 3*time.Second},
		{"--ignore-close", 0, closeWait},
	} {
		e := open(t, Config{URLs: []string{startServer(t, c.flag)}})
		ep := e.New()
		if _, err := ep.Reset(context.Background(), task("b", 0)); err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		ep.Close()
		if d := time.Since(t0); d < c.min || d >= c.max {
			t.Errorf("%s: Close took %v, want [%v, %v)", c.flag, d, c.min, c.max)
		}
	}
}

// Misbehaving servers: every failure is an error naming the task, the step and the server,
// returned within the request timeout; failed resets are retried. Only the slow server gets a
// short request timeout (1 s, which its reset must also meet); the others fail at once and have
// the default, so that a reset on a loaded machine cannot time out instead.
func TestMisbehavingServers(t *testing.T) {
	for _, tr := range []Transport{WebSocket, HTTP} {
		for _, c := range []struct {
			flag, want string
			timeout    time.Duration
		}{
			{"--slow-step=30", "no answer within 1s", time.Second},
			{"--fail-steps", "step failed", 0},
			{"--malformed-step", "malformed", 0},
			{"--drop-step", "", 0},
			{"--step-reward=1.7e308", "reward 1.7e+308: want a finite number of magnitude at most 1e+06", 0},
			{"--step-reward=-2e6", "reward -2e+06: want a finite number of magnitude at most 1e+06", 0},
		} {
			url := startServer(t, c.flag)
			e := open(t, Config{URLs: []string{url}, Transport: tr, RequestTimeout: c.timeout})
			ep := e.New()
			if _, err := ep.Reset(context.Background(), task("m", 1)); err != nil {
				t.Fatalf("%s %s reset: %v", tr, c.flag, err)
			}
			t0 := time.Now()
			_, err := ep.Step(context.Background(), "river")
			if err == nil || !strings.Contains(err.Error(), "openenv: task m: step 1 at "+url) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s %s: %v", tr, c.flag, err)
			}
			if d := time.Since(t0); d > 10*time.Second { // far below the slow server's 30 s
				t.Errorf("%s %s: the step took %v", tr, c.flag, d)
			}
			if _, err := ep.Step(context.Background(), "river"); err == nil {
				t.Errorf("%s %s: a step after a failed one went through", tr, c.flag)
			}
			ep.Close()
		}
		// Two failed resets, then success: retried.
		e := open(t, Config{URLs: []string{startServer(t, "--fail-resets", "2")}, Transport: tr, System: "Play."})
		traj, s := play(t, e.New(), task("r", 4))
		checkEpisode(t, traj, s)
		e = open(t, Config{URLs: []string{startServer(t, "--fail-resets", "9")}, Transport: tr, Retries: 1})
		_, err := e.New().Reset(context.Background(), task("r", 0))
		if err == nil || !strings.Contains(err.Error(), "reset failed") || !strings.Contains(err.Error(), "(after 2 tries)") {
			t.Errorf("%s: resets failing: %v", tr, err)
		}
	}
	// Nobody there: a clear error after the retries.
	e := open(t, Config{URLs: []string{"http://127.0.0.1:1"}, Retries: 1})
	_, err := e.New().Reset(context.Background(), task("x", 0))
	if err == nil || !strings.Contains(err.Error(), "connecting to ws://127.0.0.1:1/ws") {
		t.Errorf("no server: %v", err)
	}
}

// The server ends nothing: MaxTurns does, as truncated.
func TestMaxTurns(t *testing.T) {
	e := open(t, Config{URLs: []string{startServer(t)}, MaxTurns: 2, Reward: Sum})
	ep := e.New()
	defer ep.Close()
	ctx := context.Background()
	ep.Reset(ctx, task("t", 0))
	r1, err1 := ep.Step(ctx, "no")
	r2, err2 := ep.Step(ctx, "no")
	if err1 != nil || err2 != nil || r1.Done || !r2.Done || !r2.Info.Truncated || r2.Info.Final {
		t.Errorf("%+v %v / %+v %v", r1, err1, r2, err2)
	}
}

func TestObservationText(t *testing.T) {
	obs := func(s string) map[string]json.RawMessage {
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	for _, c := range []struct {
		obs, field, want string
	}{
		{`{"prompt": "hi", "turn": 3}`, "", "hi"},
		{`{"prompt": "hi", "turn": 3}`, "turn", "3"},
		{`{"stdout": "1", "stderr": "", "exit_code": 0}`, "", `{"exit_code":0,"stderr":"","stdout":"1"}`},
		{`{"messages": [{"content": "x"}]}`, "messages", `[{"content": "x"}]`},
		{`{}`, "", ""},
	} {
		got, err := observationText(obs(c.obs), c.field)
		if err != nil || got != c.want {
			t.Errorf("%s field %q: %q, %v; want %q", c.obs, c.field, got, err, c.want)
		}
	}
	if _, err := observationText(obs(`{"b": 1, "a": 2}`), "prompt"); err == nil || err.Error() != `the observation has no field "prompt" (it has "a", "b")` {
		t.Errorf("missing field: %v", err)
	}
}

func TestValidate(t *testing.T) {
	err := Config{URLs: []string{"localhost:8000"}, Transport: "grpc", ActionExtra: map[string]any{"message": 1},
		ObservationRole: "system", Reward: "max", Retries: -2}.Validate()
	for _, want := range []string{
		`openenv.urls[0]: "localhost:8000" is not an http(s) or ws(s) URL`,
		`openenv.transport: "grpc" (want websocket or http)`,
		`openenv.observation_role: "system" (want user or tool)`,
		`openenv.reward: "max" (want final or sum)`,
		`openenv.retries: -2`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in %v", want, err)
		}
	}
	if err := (Config{URLs: []string{"http://h:1"}, Transport: HTTP, MaxSessions: 2}).Validate(); err == nil ||
		!strings.Contains(err.Error(), "openenv.max_sessions") {
		t.Errorf("http with sessions: %v", err)
	}
	if err := (Config{}).Validate(); err == nil || !strings.Contains(err.Error(), "openenv.urls: no server URL") {
		t.Errorf("empty: %v", err)
	}
}
