package extreward

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mtgrpo/mtgrpo/env"
)

// trajectory is a two-turn episode of task id: a calculator call, then the answer "#### 42".
func trajectory(id string, episode int) *env.Trajectory {
	call := env.ToolCall{ID: "call_0_0", Type: "function", Function: env.FunctionCall{Name: "calculator", Arguments: json.RawMessage(`{"expression":"6*7"}`)}}
	return &env.Trajectory{
		Task:    env.Task{ID: id, GroundTruth: "42", Prompt: []env.Message{env.Text(env.RoleUser, "What is 6*7?")}},
		Start:   env.Start{Messages: []env.Message{env.Text(env.RoleUser, "What is 6*7?")}},
		Episode: episode,
		Turns: []env.Turn{
			{Assistant: `<tool_call>{"name": "calculator", "arguments": {"expression": "6*7"}}</tool_call>`, ContextTokens: 30, OutputTokens: 20,
				Result: env.StepResult{Assistant: env.Message{Role: env.RoleAssistant, ToolCalls: []env.ToolCall{call}},
					Messages: []env.Message{{Role: env.RoleTool, Name: "calculator", ToolCallID: "call_0_0", Content: "42"}},
					Info:     env.TurnInfo{ToolCalls: 1, ToolSuccesses: 1}}},
			{Assistant: "#### 42", ContextTokens: 60, OutputTokens: 5,
				Result: env.StepResult{Assistant: env.Text(env.RoleAssistant, "#### 42"), Done: true, Info: env.TurnInfo{Final: true}}},
		},
	}
}

func script(args ...string) Config {
	return Config{Type: Command, Command: append([]string{"python3", "testdata/reward.py"}, args...), Timeout: 10 * time.Second}
}

func newReward(t *testing.T, cfg Config) *Reward {
	t.Helper()
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// The Python script scores the record: the final message "#### 42" contains the truth (1), one
// tool call in turn 0 and none in turn 1, two turns, 20+5 output tokens.
func TestCommandScores(t *testing.T) {
	r := newReward(t, script())
	s, err := r.Score(context.Background(), trajectory("t1", 0))
	want := env.ExternalScore{Reward: 1, TurnRewards: []float64{1, 0}, Metrics: map[string]float64{"turns": 2, "output_tokens": 25}}
	if err != nil || !reflect.DeepEqual(s, want) {
		t.Fatalf("score %+v, %v", s, err)
	}
	// ScoreBatch keeps the order; a wrong answer scores 0.
	wrong := trajectory("t2", 1)
	wrong.Turns[1].Result.Assistant.Content = "#### 41"
	got, err := r.ScoreBatch(context.Background(), []*env.Trajectory{trajectory("t0", 0), wrong, trajectory("t3", 2)})
	if err != nil || got[0].Reward != 1 || got[1].Reward != 0 || got[2].Reward != 1 {
		t.Errorf("batch %+v, %v", got, err)
	}
}

func TestCommandErrors(t *testing.T) {
	cases := []struct {
		cfg  Config
		want string
	}{
		{script("--exit", "3"), `command reward "python3 testdata/reward.py --exit 3": trajectory of task t1 (episode 4): exit status 3; stderr: reward.py: the judge is unavailable`},
		{script("--garbage"), `the answer is not a number or a JSON object: "not json"`},
		{script("--bad-field"), `field "reward": "\"high\"" is not a number`},
		{script("--score"), `unknown field "score" in the answer (want reward, turn_rewards, metrics)`},
		{Config{Type: Command, Command: []string{"/nonexistent/judge"}}, "no such file or directory"},
	}
	for _, c := range cases {
		_, err := newReward(t, c.cfg).Score(context.Background(), trajectory("t1", 4))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v\nwant %s", c.cfg.Command, err, c.want)
		}
	}
	// A program past its timeout is killed: the error comes after the timeout, not the sleep.
	cfg := script("--sleep", "30")
	cfg.Timeout = 500 * time.Millisecond
	t0 := time.Now()
	_, err := newReward(t, cfg).Score(context.Background(), trajectory("t1", 0))
	if err == nil || !strings.Contains(err.Error(), "no answer within 500ms") || time.Since(t0) > 10*time.Second {
		t.Errorf("timeout after %v: %v", time.Since(t0), err)
	}
}

// answerServer answers each record with reward = its number of turns, counting POSTs, batch
// sizes and the most requests in flight at once.
type answerServer struct {
	posts, inflight, peak atomic.Int64
	mu                    sync.Mutex
	sizes                 []int
	delay                 time.Duration
	fail                  atomic.Int64 // answer 500 to this many requests first
}

func (a *answerServer) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	a.posts.Add(1)
	n := a.inflight.Add(1)
	defer a.inflight.Add(-1)
	for p := a.peak.Load(); n > p && !a.peak.CompareAndSwap(p, n); p = a.peak.Load() {
	}
	time.Sleep(a.delay)
	if a.fail.Add(-1) >= 0 {
		http.Error(w, "overloaded", http.StatusInternalServerError)
		return
	}
	body, _ := io.ReadAll(req.Body)
	if !strings.Contains(string(body), `"text":"<tool_call>{`) { // markup sent as it is, not \u003c-escaped
		http.Error(w, "escaped markup", http.StatusBadRequest)
		return
	}
	answer := func(rec env.TrajectoryRecord) string { return fmt.Sprintf(`{"reward": %d}`, len(rec.Turns)) }
	if body[0] == '[' {
		var recs []env.TrajectoryRecord
		json.Unmarshal(body, &recs)
		var out []string
		for _, r := range recs {
			out = append(out, answer(r))
		}
		a.mu.Lock()
		a.sizes = append(a.sizes, len(recs))
		a.mu.Unlock()
		fmt.Fprintf(w, "[%s]", strings.Join(out, ","))
		return
	}
	var rec env.TrajectoryRecord
	if err := json.Unmarshal(body, &rec); err != nil || rec.TaskID == "" {
		http.Error(w, "bad record", http.StatusBadRequest)
		return
	}
	fmt.Fprint(w, answer(rec))
}

func serve(t *testing.T, a *answerServer) string {
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestHTTPScoresWithConcurrencyLimit(t *testing.T) {
	a := &answerServer{delay: 50 * time.Millisecond}
	r := newReward(t, Config{Type: HTTP, URL: serve(t, a), Concurrency: 2})
	var ts []*env.Trajectory
	for i := range 6 {
		ts = append(ts, trajectory(fmt.Sprint(i), i))
	}
	got, err := r.ScoreBatch(context.Background(), ts)
	if err != nil || len(got) != 6 || got[5].Reward != 2 {
		t.Fatalf("%+v, %v", got, err)
	}
	if a.posts.Load() != 6 || a.peak.Load() != 2 {
		t.Errorf("%d posts, %d at once; want 6 and 2", a.posts.Load(), a.peak.Load())
	}
}

func TestHTTPBatches(t *testing.T) {
	a := &answerServer{}
	r := newReward(t, Config{Type: HTTP, URL: serve(t, a), BatchSize: 3, BatchWait: time.Second})
	var ts []*env.Trajectory
	for i := range 7 {
		ts = append(ts, trajectory(fmt.Sprint(i), i))
	}
	got, err := r.ScoreBatch(context.Background(), ts)
	if err != nil || len(got) != 7 || got[6].Reward != 2 {
		t.Fatalf("%+v, %v", got, err)
	}
	// Three Score calls at once fill one batch and go without waiting BatchWait.
	var wg sync.WaitGroup
	t0 := time.Now()
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if s, err := r.Score(context.Background(), ts[i]); err != nil || s.Reward != 2 {
				t.Errorf("score %d: %+v, %v", i, s, err)
			}
		}()
	}
	wg.Wait()
	a.mu.Lock()
	defer a.mu.Unlock()
	if want := []int{1, 3, 3, 3}; !sameMultiset(a.sizes, want) || time.Since(t0) > 900*time.Millisecond {
		t.Errorf("batch sizes %v (want %v in any order), took %v", a.sizes, want, time.Since(t0))
	}
}

func sameMultiset(a, b []int) bool {
	count := map[int]int{}
	for _, x := range a {
		count[x]++
	}
	for _, x := range b {
		count[x]--
	}
	for _, n := range count {
		if n != 0 {
			return false
		}
	}
	return len(a) == len(b)
}

func TestHTTPRetriesAndErrors(t *testing.T) {
	a := &answerServer{}
	a.fail.Store(2)
	r := newReward(t, Config{Type: HTTP, URL: serve(t, a)})
	if s, err := r.Score(context.Background(), trajectory("t1", 0)); err != nil || s.Reward != 2 || a.posts.Load() != 3 {
		t.Errorf("after two 500s: %+v, %v, %d posts", s, err, a.posts.Load())
	}
	a.fail.Store(5)
	r = newReward(t, Config{Type: HTTP, URL: serve(t, a), Retries: -1})
	_, err := r.Score(context.Background(), trajectory("t1", 9))
	if err == nil || !strings.Contains(err.Error(), "trajectory of task t1 (episode 9): HTTP 500 Internal Server Error: \"overloaded\"") {
		t.Errorf("no retries: %v", err)
	}
	// A slow server: the timeout bounds each try.
	slow := &answerServer{delay: time.Second}
	r = newReward(t, Config{Type: HTTP, URL: serve(t, slow), Timeout: 200 * time.Millisecond, Retries: 1})
	t0 := time.Now()
	if _, err := r.Score(context.Background(), trajectory("t1", 0)); err == nil || !strings.Contains(err.Error(), "no answer within 200ms (after 2 tries)") {
		t.Errorf("slow: %v", err)
	}
	if d := time.Since(t0); d > 900*time.Millisecond {
		t.Errorf("slow server held the call %v", d)
	}
	// Malformed answers are not retried and name what is wrong.
	for _, c := range []struct{ body, want string }{
		{`{"reward": 1, "turn_rewards": [1]}`, `field "turn_rewards" has 1 values for 2 turns`},
		{`{"metrics": {"a": 1}}`, `field "reward" is missing`},
		{`{"reward": 1, "metrics": {"a": "x"}}`, `field "metrics"`},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, c.body) }))
		_, err := newReward(t, Config{Type: HTTP, URL: srv.URL}).Score(context.Background(), trajectory("t1", 0))
		srv.Close()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v", c.body, err)
		}
	}
	_, err = newReward(t, Config{Type: HTTP, URL: "http://127.0.0.1:1/score", Retries: -1}).Score(context.Background(), trajectory("t1", 0))
	if err == nil || !strings.Contains(err.Error(), "http reward http://127.0.0.1:1/score: trajectory of task t1") {
		t.Errorf("unreachable: %v", err)
	}
}

// Apply with replace: the external reward is the reward, the environment's functions are
// reported with weight 0; with add they sum.
func TestApply(t *testing.T) {
	e, err := env.Open("gsm8k", env.Config{})
	if err != nil {
		t.Fatal(err)
	}
	half := 0.5
	for _, combine := range []Combine{Replace, Add} {
		cfg := script()
		cfg.Combine, cfg.Weight, cfg.Name = combine, &half, "judge"
		w := newReward(t, cfg).Apply(e)
		ep := w.New()
		task := env.Task{ID: "a", GroundTruth: "42", Prompt: []env.Message{env.Text(env.RoleUser, "6*7?")}}
		start, _ := ep.Reset(context.Background(), task)
		res, _ := ep.Step(context.Background(), "#### 42")
		// The script looks for "42" in the final message's content: found, so the judge gives 1
		// and the turn rewards [0]. Replace: reward = 0.5·1; add: strict accuracy 1 + 0.5·1.
		s, err := ep.Rubric().Score(&env.Trajectory{Task: task, Start: start, Turns: []env.Turn{{Assistant: "#### 42", Result: res}}})
		want := map[Combine]float64{Replace: 0.5, Add: 1.5}[combine]
		if err != nil || s.Reward != want || s.Metrics["reward/judge"] != 1 || s.Metrics["reward/accuracy_strict"] != 1 {
			t.Errorf("%s: %+v, %v", combine, s, err)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{}, `reward_computation.type: "" is not an external reward type (want command or http)`},
		{Config{Type: Command}, "reward_computation.command: type command needs the program to run"},
		{Config{Type: Command, Command: []string{"x"}, BatchSize: 4}, "reward_computation.batch_size: a command scores one trajectory per run"},
		{Config{Type: HTTP, URL: "localhost:8000"}, `reward_computation.url: type http needs an http(s) URL, got "localhost:8000"`},
		{Config{Type: HTTP, URL: "http://h/s", Concurrency: -1, Combine: "mul"}, `reward_computation.combine: "mul" (want replace or add)`},
	} {
		if err := c.cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v", c.cfg, err)
		}
	}
}
