package serve

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mtgrpo/mtgrpo/rollout"
)

// The model's tool call is written without the spaces the chat template's tojson would put back
// (`{"a":7,"b":8}` against `{"a": 7, "b": 8}`), so a context re-encoded from the messages differs
// from what the model wrote.
const modelCall = "<tool_call>\n{\"name\": \"multiply\", \"arguments\": {\"a\":7,\"b\":8}}\n</tool_call>"

func toolScript(ctx string) string {
	if strings.Contains(ctx, "<tool_response>") {
		return "The product is 56."
	}
	return modelCall
}

var multiplyTool = map[string]any{"type": "function", "function": map[string]any{"name": "multiply",
	"description": "a times b", "parameters": map[string]any{"type": "object",
		"properties": map[string]any{"a": map[string]any{"type": "integer"}, "b": map[string]any{"type": "integer"}}}}}

// A two-call tool loop as an agent runs it: the second call's prompt is the first call's prompt
// and sampled ids as they were, the template's newline after <|im_end|>, then the tool result
// and the generation prompt, encoded; its KV cache comes from the parked first call, so only the
// new tokens are prefilled, and the model (which reads its whole history) still answers right.
func TestToolLoopReusesIDsAndCache(t *testing.T) {
	tok := tiny(t)
	m := scripted(t, tok, 3, 512, toolScript)
	ts := startServer(t, m, 1, Config{Sampling: &rollout.Sampling{Temperature: 1, MaxNewTokens: 100}})
	sess := ts.Open("k1", Limits{}, 7)
	msgs := []any{map[string]any{"role": "system", "content": "You multiply."},
		map[string]any{"role": "user", "content": "What is 7 times 8?"}}
	req := map[string]any{"model": "anything", "messages": msgs, "tools": []any{multiplyTool}}
	code, out, raw := post(t, ts.url+"/v1/chat/completions", "k1", req)
	if code != 200 {
		t.Fatalf("call 1: %d %s", code, raw)
	}
	msg := jpath(out, "choices", 0, "message").(map[string]any)
	if jpath(out, "choices", 0, "finish_reason") != "tool_calls" || msg["content"] != nil ||
		jpath(msg, "tool_calls", 0, "function", "arguments") != `{"a":7,"b":8}` || jpath(msg, "tool_calls", 0, "type") != "function" {
		t.Fatalf("call 1: %s", raw)
	}
	callID := jpath(msg, "tool_calls", 0, "id").(string)
	req["messages"] = append(msgs, msg, map[string]any{"role": "tool", "tool_call_id": callID, "content": "56"})
	code, out, raw = post(t, ts.url+"/v1/chat/completions", "k1", req)
	if code != 200 || jpath(out, "choices", 0, "message", "content") != "The product is 56." || jpath(out, "choices", 0, "finish_reason") != "stop" {
		t.Fatalf("call 2: %d %s", code, raw)
	}
	calls := sess.Calls()
	if len(calls) != 2 {
		t.Fatalf("%d calls recorded", len(calls))
	}
	c1, c2 := calls[0], calls[1]
	if want := append(ids32(tok.Encode(modelCall, false)), c1.Output[len(c1.Output)-1]); !slices.Equal(c1.Output, want) {
		t.Errorf("call 1 sampled %v, want the script's %v", c1.Output, want)
	}
	head := append(slices.Clone(c1.Prompt), c1.Output...)
	tail := ids32(tok.Encode("\n<|im_start|>user\n<tool_response>\n56\n</tool_response><|im_end|>\n<|im_start|>assistant\n", false))
	if want := append(head, tail...); !slices.Equal(c2.Prompt, want) {
		t.Errorf("call 2 prompt:\n got %q\nwant %q", tok.Decode(toInts(c2.Prompt), false), tok.Decode(toInts(want), false))
	}
	if c2.Extends != 0 || c2.Segment != 0 || c2.Reused != len(head) || c1.Extends != -1 {
		t.Errorf("call 2 extends %d, segment %d, reused %d (want 0, 0, %d)", c2.Extends, c2.Segment, c2.Reused, len(head))
	}
	// The canonical encoding of the same messages differs (the template re-spaces the arguments):
	// the context the model saw is its own tokens, not that.
	rend, _ := rollout.NewRenderer(tok, c2.Tools, nil)
	canon, _ := rend.Encode(c2.Messages, true)
	if slices.Equal(canon, c2.Prompt) || !strings.Contains(tok.Decode(toInts(canon), false), `{"a": 7, "b": 8}`) {
		t.Errorf("the canonical encoding should re-space the call: %q", tok.Decode(toInts(canon), false))
	}
	// KV: call 1 parked prompt + output less its last token (never fed); call 2 forked it and
	// prefilled only the rest of its prompt.
	st := ts.cache.Stats()
	if st.Parked < 1 || st.Hits != 1 || st.Reused != len(head)-1 {
		t.Errorf("cache %+v: want a hit reusing %d tokens", st, len(head)-1)
	}
	if got := jpath(out, "usage", "prompt_tokens_details", "cached_tokens"); got != float64(len(head)) {
		t.Errorf("usage.cached_tokens %v, want %d", got, len(head))
	}
	prefilled := 0
	for _, mc := range m.Calls {
		for _, n := range mc.New {
			prefilled = max(prefilled, n)
		}
	}
	if prefilled != len(c1.Prompt) {
		t.Errorf("the longest prefill was %d tokens: want call 1's prompt (%d), call 2 only its %d new tokens",
			prefilled, len(c1.Prompt), len(tail)+1)
	}
}

func toInts(ids []int32) []int {
	out := make([]int, len(ids))
	for i, id := range ids {
		out[i] = int(id)
	}
	return out
}

// A call whose messages rewrite the history (here: the tool turn condensed into a user note)
// extends nothing: it starts segment 1 from its own canonical ids.
func TestRewrittenHistoryStartsSegment(t *testing.T) {
	tok := tiny(t)
	ts := startServer(t, scripted(t, tok, 2, 512, toolScript), 0, Config{Sampling: &rollout.Sampling{MaxNewTokens: 100}})
	sess := ts.Open("k", Limits{}, 1)
	msgs := []any{map[string]any{"role": "user", "content": "What is 7 times 8?"}}
	req := map[string]any{"model": "m", "messages": msgs, "tools": []any{multiplyTool}}
	if code, _, raw := post(t, ts.url+"/v1/chat/completions", "k", req); code != 200 {
		t.Fatalf("%d %s", code, raw)
	}
	req["messages"] = append(msgs, map[string]any{"role": "user", "content": "<tool_response> said 56"})
	if code, _, raw := post(t, ts.url+"/v1/chat/completions", "k", req); code != 200 {
		t.Fatalf("%d %s", code, raw)
	}
	calls := sess.Calls()
	rend, _ := rollout.NewRenderer(tok, calls[1].Tools, nil)
	canon, _ := rend.Encode(calls[1].Messages, true)
	if calls[1].Extends != -1 || calls[1].Segment != 1 || calls[1].Reused != 0 || !slices.Equal(calls[1].Prompt, canon) {
		t.Errorf("call 2: extends %d segment %d reused %d, prompt canonical %v", calls[1].Extends, calls[1].Segment,
			calls[1].Reused, slices.Equal(calls[1].Prompt, canon))
	}
}

// Streaming gives the tokens and the message of the same call without streaming: a plain answer
// in several text deltas (it is streamed as drawn), and a tool call in one delta at the end.
func TestStreamingMatchesNonStreaming(t *testing.T) {
	tok := tiny(t)
	ts := startServer(t, scripted(t, tok, 2, 512, func(ctx string) string {
		time.Sleep(5 * time.Millisecond) // a step long enough for the handler to see tokens arrive
		if strings.Contains(ctx, "multiply") {
			return modelCall
		}
		return "The answer is 42. I think the answer is correct."
	}), 0, Config{AnyKey: true})
	for _, tools := range []bool{false, true} {
		req := map[string]any{"model": "m", "seed": 3, "messages": []any{map[string]any{"role": "user", "content": "Hi"}}}
		if tools {
			req["tools"] = []any{multiplyTool}
		}
		code, plain, raw := post(t, ts.url+"/v1/chat/completions", "a", req)
		if code != 200 {
			t.Fatalf("%d %s", code, raw)
		}
		req["stream"], req["stream_options"] = true, map[string]any{"include_usage": true}
		code, _, raw = post(t, ts.url+"/v1/chat/completions", "b", req)
		if code != 200 {
			t.Fatalf("%d %s", code, raw)
		}
		events := sse(t, raw)
		if events[len(events)-1] != "[DONE]" {
			t.Fatalf("stream does not end with [DONE]: %q", events)
		}
		var content strings.Builder
		var calls []any
		var finish any
		deltas := 0
		for i, e := range events[:len(events)-1] {
			var c map[string]any
			if err := json.Unmarshal([]byte(e), &c); err != nil {
				t.Fatal(err)
			}
			if c["object"] != "chat.completion.chunk" || c["id"] != events0ID(t, events) {
				t.Errorf("chunk %d: %s", i, e)
			}
			if u, ok := c["usage"]; !ok || (i < len(events)-2) != (u == nil) {
				t.Errorf("chunk %d: usage %v (null until the last chunk)", i, u)
			}
			if i == 0 && jpath(c, "choices", 0, "delta", "role") != "assistant" {
				t.Errorf("first chunk: %s", e)
			}
			if s, ok := jpath(c, "choices", 0, "delta", "content").(string); ok && s != "" {
				content.WriteString(s)
				deltas++
			}
			if tc, ok := jpath(c, "choices", 0, "delta", "tool_calls").([]any); ok {
				calls = append(calls, tc...)
			}
			if f := jpath(c, "choices", 0, "finish_reason"); f != nil {
				finish = f
			}
			if i == len(events)-2 && (len(c["choices"].([]any)) != 0 || jpath(c, "usage", "completion_tokens") != jpath(plain, "usage", "completion_tokens")) {
				t.Errorf("usage chunk: %s", e)
			}
		}
		msg := jpath(plain, "choices", 0, "message")
		want, _ := jpath(msg, "content").(string)
		if content.String() != want || finish != jpath(plain, "choices", 0, "finish_reason") {
			t.Errorf("tools %v: streamed %q (%v), plain %q (%v)", tools, content.String(), finish, want, jpath(plain, "choices", 0, "finish_reason"))
		}
		if !tools && deltas < 2 {
			t.Errorf("a plain answer came in %d deltas: it should stream as drawn", deltas)
		}
		if tools && (len(calls) != 1 || jpath(calls[0], "function", "arguments") != jpath(msg, "tool_calls", 0, "function", "arguments") ||
			jpath(calls[0], "index") != float64(0)) {
			t.Errorf("streamed calls %v, plain %v", calls, jpath(msg, "tool_calls"))
		}
		a, b := ts.sessions["a"].Calls(), ts.sessions["b"].Calls()
		if !slices.Equal(a[len(a)-1].Output, b[len(b)-1].Output) {
			t.Errorf("tools %v: streaming sampled %v, not streaming %v", tools, b[len(b)-1].Output, a[len(a)-1].Output)
		}
	}
}

func events0ID(t *testing.T, events []string) any {
	var c map[string]any
	if err := json.Unmarshal([]byte(events[0]), &c); err != nil {
		t.Fatal(err)
	}
	return c["id"]
}

// What cannot be served is refused with OpenAI's error body naming the field; nothing runs.
func TestRefusals(t *testing.T) {
	tok := tiny(t)
	m := scripted(t, tok, 2, 64, func(string) string { return "ok" })
	ts := startServer(t, m, 0, Config{})
	ts.Open("k", Limits{MaxCalls: 1}, 1)
	user := []any{map[string]any{"role": "user", "content": "Hi"}}
	base := func(kv ...any) map[string]any {
		r := map[string]any{"model": "m", "messages": user}
		for i := 0; i < len(kv); i += 2 {
			r[kv[i].(string)] = kv[i+1]
		}
		return r
	}
	for _, c := range []struct {
		name  string
		key   string
		body  map[string]any
		code  int
		param any
		text  string
	}{
		{"no key", "", base(), 401, nil, "no API key"},
		{"unknown key", "nope", base(), 401, nil, "no episode has this API key"},
		{"n", "k", base("n", 2), 400, "n", "one choice per request"},
		{"top_logprobs", "k", base("logprobs", true, "top_logprobs", 2), 400, "top_logprobs", "alternatives"},
		{"penalty", "k", base("presence_penalty", 0.5), 400, "presence_penalty", "penalties"},
		{"logit_bias", "k", base("logit_bias", map[string]any{"5": 10}), 400, "logit_bias", "logit biases"},
		{"json mode", "k", base("response_format", map[string]any{"type": "json_object"}), 400, "response_format", "constrained decoding"},
		{"audio", "k", base("audio", map[string]any{"voice": "alloy"}), 400, "audio", "audio"},
		{"modalities", "k", base("modalities", []any{"text", "audio"}), 400, "modalities", `"audio"`},
		{"unknown field", "k", base("frobnicate", 1), 400, "frobnicate", "Unrecognized request argument supplied: frobnicate"},
		{"wrong type", "k", base("temperature", "hot"), 400, "temperature", "temperature"},
		{"temperature range", "k", base("temperature", 3), 400, "temperature", "[0, 2]"},
		{"tool_choice required", "k", base("tool_choice", "required"), 400, "tool_choice", "constrained decoding"},
		{"image", "k", base("messages", []any{map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "image_url", "image_url": map[string]any{"url": "x"}}}}}), 400, "messages[0].content[0].type", "only text"},
		{"bad role", "k", base("messages", []any{map[string]any{"role": "robot", "content": "x"}}), 400, "messages[0].role", "robot"},
		{"tool without id", "k", base("messages", []any{map[string]any{"role": "tool", "content": "x"}}), 400, "messages[0].tool_call_id", "answer a call"},
		{"bad arguments", "k", base("messages", []any{map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{
			"id": "c", "type": "function", "function": map[string]any{"name": "f", "arguments": "{oops"}}}}}), 400,
			"messages[0].tool_calls[0].function.arguments", "not a JSON object"},
		{"stop count", "k", base("stop", []any{"a", "b", "c", "d", "e"}), 400, "stop", "at most 4"},
		{"context", "k", base("max_tokens", 1000), 400, "messages", "maximum context length is 64 tokens"},
		{"no messages", "k", base("messages", []any{}), 400, "messages", "at least one message"},
	} {
		code, out, raw := post(t, ts.url+"/v1/chat/completions", c.key, c.body)
		msg, _ := jpath(out, "error", "message").(string)
		if code != c.code || jpath(out, "error", "param") != c.param || !strings.Contains(msg, c.text) || jpath(out, "error", "type") == nil {
			t.Errorf("%s: %d %s", c.name, code, raw)
		}
	}
	if len(m.Calls) != 0 {
		t.Errorf("a refused request reached the model: %d passes", len(m.Calls))
	}
	// The call limit: the first call runs, the second is refused and the session says why.
	if code, _, raw := post(t, ts.url+"/v1/chat/completions", "k", base()); code != 200 {
		t.Fatalf("%d %s", code, raw)
	}
	code, out, _ := post(t, ts.url+"/v1/chat/completions", "k", base())
	if code != 429 || jpath(out, "error", "code") != codeLimit || ts.sessions["k"].Limited() != "max_calls" {
		t.Errorf("past the call limit: %d %v", code, out)
	}
	// A closed session refuses calls.
	ts.Drop("k")
	ts.Open("k2", Limits{}, 1).Close()
	if code, out, _ := post(t, ts.url+"/v1/chat/completions", "k2", base()); code != 409 || jpath(out, "error", "code") != codeEnded {
		t.Errorf("a closed session: %d %v", code, out)
	}
}

// The models route lists the served model, and the reward route checks what it is given.
func TestModelsAndReward(t *testing.T) {
	tok := tiny(t)
	ts := startServer(t, scripted(t, tok, 1, 64, func(string) string { return "ok" }), 0, Config{Model: "policy"})
	sess := ts.Open("k", Limits{}, 1)
	res, err := httpGet(ts.url + "/v1/models")
	if err != nil || jpath(res, "object") != "list" || jpath(res, "data", 0, "id") != "policy" || jpath(res, "data", 0, "object") != "model" {
		t.Errorf("models: %v %v", res, err)
	}
	for _, c := range []struct {
		body any
		code int
		text string
	}{
		{map[string]any{"metrics": map[string]any{}}, 400, "reward: missing"},
		{map[string]any{"reward": 1e9}, 400, "magnitude"},
		{map[string]any{"reward": 0.5, "metrics": map[string]any{"steps": 3}}, 200, ""},
	} {
		code, out, raw := post(t, ts.url+"/v1/mtgrpo/reward", "k", c.body)
		if code != c.code || (c.text != "" && !strings.Contains(jpath(out, "error", "message").(string), c.text)) {
			t.Errorf("%v: %d %s", c.body, code, raw)
		}
	}
	if r := sess.Reward(); r == nil || r.Reward != 0.5 || r.Metrics["steps"] != 3 {
		t.Errorf("reward %+v", r)
	}
}

// Under AnyKey (mtgrpo serve) with an APIKey only that key is served, and a session keeps only
// its newest maxCandidates calls, numbered on.
func TestAnyKeySessionKeepsNewestCalls(t *testing.T) {
	tok := tiny(t)
	ts := startServer(t, scripted(t, tok, 1, 64, func(string) string { return "ok" }), 0, Config{AnyKey: true, APIKey: "secret"})
	hi := map[string]any{"model": "m", "max_tokens": 2, "messages": []any{map[string]any{"role": "user", "content": "Hi"}}}
	for _, key := range []string{"", "other"} {
		if code, out, _ := post(t, ts.url+"/v1/chat/completions", key, hi); code != 401 || jpath(out, "error", "code") != codeInvalidKey {
			t.Errorf("key %q: %d %v", key, code, out)
		}
	}
	for i := range maxCandidates + 4 {
		if code, _, raw := post(t, ts.url+"/v1/chat/completions", "secret", hi); code != 200 {
			t.Fatalf("call %d: %d %s", i, code, raw)
		}
	}
	calls := ts.sessions["secret"].Calls()
	if len(calls) != maxCandidates || calls[0].Index != 4 || calls[len(calls)-1].Index != maxCandidates+3 {
		t.Errorf("%d calls kept, indices %d..%d: want %d, 4..%d", len(calls), calls[0].Index, calls[len(calls)-1].Index, maxCandidates, maxCandidates+3)
	}
}

// At most maxAnySessions AnyKey sessions are kept, the least recently used idle one making room
// for a new key.
func TestAnyKeySessionsAreBounded(t *testing.T) {
	tok := tiny(t)
	open := startServer(t, scripted(t, tok, 1, 64, func(string) string { return "ok" }), 0, Config{AnyKey: true})
	for i := range maxAnySessions + 1 { // a reward report opens a session as a call does
		if code, _, raw := post(t, open.url+"/v1/mtgrpo/reward", fmt.Sprint("k", i), map[string]any{"reward": 1}); code != 200 {
			t.Fatalf("key %d: %d %s", i, code, raw)
		}
		if i == maxAnySessions-1 { // k0 used again before the last key: k1 is the least recently used
			post(t, open.url+"/v1/mtgrpo/reward", "k0", map[string]any{"reward": 1})
		}
	}
	open.mu.Lock()
	_, k0 := open.sessions["k0"]
	_, k1 := open.sessions["k1"]
	n := len(open.sessions)
	open.mu.Unlock()
	if n != maxAnySessions || !k0 || k1 {
		t.Errorf("%d sessions (k0 kept %v, k1 kept %v): want %d, k1 dropped", n, k0, k1, maxAnySessions)
	}
}

// A stream sends text up to the earliest stop string, holds back the longest tail that could
// still begin one, and never splits a character.
func TestSendable(t *testing.T) {
	for _, c := range []struct {
		text  string
		stops []string
		want  int
	}{
		{"abc", nil, 3},
		{"abc", []string{"cd"}, 2},          // "c" could begin "cd"
		{"abc", []string{"bcd", "cd"}, 1},   // the longest tail that begins one: "bc"
		{"ab hel", []string{"he"}, 3},       // a token brought "hel": only "ab " is sent
		{"ab hel", []string{"l", "he"}, 3},  // the earliest match counts
		{"a\uFFFD", []string{"\uFFFDz"}, 1}, // the whole replacement character is held
		{"a\uFFFDb", []string{"zz"}, 5},     // nothing to hold
		{"héllo", []string{"llo!"}, 3},      // "llo" could begin "llo!": "hé" (3 bytes) is sent
	} {
		if got := sendable(c.text, c.stops); got != c.want {
			t.Errorf("sendable(%q, %q) = %d, want %d", c.text, c.stops, got, c.want)
		}
	}
}
