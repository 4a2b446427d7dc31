package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/mtgrpo/mtgrpo/rollout"
	"github.com/mtgrpo/mtgrpo/tokenizer"
	"github.com/mtgrpo/mtgrpo/torch"
)

var tinyTok = sync.OnceValues(func() (*tokenizer.Tokenizer, error) {
	dir, err := os.MkdirTemp("", "serve-test-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if err := tokenizer.WriteTiny(dir); err != nil {
		return nil, err
	}
	return tokenizer.Load(dir)
})

func tiny(t testing.TB) *tokenizer.Tokenizer {
	t.Helper()
	tok, err := tinyTok()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func ids32(ids []int) []int32 {
	out := make([]int32, len(ids))
	for i, id := range ids {
		out[i] = int32(id)
	}
	return out
}

// scripted is a mock model that writes script(context) after the last assistant header of its
// history, token by token, then <|im_end|>: its output depends on the whole history the slot
// holds, so a cache that lost or garbled the prefix makes it write something else.
func scripted(t testing.TB, tok *tokenizer.Tokenizer, slots, maxLen int, script func(context string) string) *rollout.MockModel {
	header := ids32(tok.Encode("<|im_start|>assistant\n", false))
	_, end, _ := tok.SpecialToken("<|im_end|>")
	m := rollout.NewMockModel(tok.VocabSize(), slots, maxLen, nil)
	m.Stops = []int{end}
	m.Logits = func(h []int32) []float32 {
		at := lastIndex(h, header)
		next := int32(end)
		if at >= 0 {
			ctx := make([]int, at)
			for i, id := range h[:at] {
				ctx[i] = int(id)
			}
			target := append(ids32(tok.Encode(script(tok.Decode(ctx, false)), false)), int32(end))
			if k := len(h) - at - len(header); k < len(target) {
				next = target[k]
			}
		}
		row := make([]float32, tok.VocabSize())
		row[next] = 40
		return row
	}
	return m
}

func lastIndex(h, sub []int32) int {
	for i := len(h) - len(sub); i >= 0; i-- {
		if hasPrefix(h[i:], sub) {
			return i
		}
	}
	return -1
}

// testServer runs a server over backend b (wrapped in a PrefixCache of parked slots when parked >
// 0) with its pump on the torch thread, until the test ends.
type testServer struct {
	*Server
	url   string
	cache *PrefixCache
}

func startServer(t *testing.T, b rollout.Backend, parked int, cfg Config) *testServer {
	t.Helper()
	tok := tiny(t)
	ts := &testServer{}
	var back rollout.Backend = b
	if parked > 0 {
		c, err := NewPrefixCache(b, parked)
		if err != nil {
			t.Fatal(err)
		}
		ts.cache, back = c, c
	}
	e, err := rollout.NewEngine(back, tok, rollout.EngineConfig{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if ts.Server, err = New(e, ts.cache, tok, b.StopTokenIDs(), cfg); err != nil {
		t.Fatal(err)
	}
	h := httptest.NewServer(ts.Handler())
	ts.url = h.URL
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- torch.Run(func() error { return ts.Run(ctx, ctx.Done()) }) }()
	t.Cleanup(func() {
		h.Close()
		cancel()
		if err := <-done; err != nil && err != context.Canceled {
			t.Error(err)
		}
	})
	return ts
}

// post sends body to path with key and returns the status and the decoded JSON.
func post(t *testing.T, url, key string, body any) (int, map[string]any, []byte) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", url, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var out map[string]any
	if !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("%s: not JSON: %s", url, raw)
		}
	}
	return res.StatusCode, out, raw
}

// sse splits a stream into its data payloads.
func sse(t *testing.T, raw []byte) []string {
	t.Helper()
	var out []string
	for _, ev := range strings.Split(string(raw), "\n\n") {
		if ev = strings.TrimSpace(ev); ev == "" {
			continue
		}
		d, ok := strings.CutPrefix(ev, "data: ")
		if !ok {
			t.Fatalf("not a data event: %q", ev)
		}
		out = append(out, d)
	}
	return out
}

// jpath walks a decoded JSON value by keys and indices.
func jpath(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			a, _ := v.([]any)
			if k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}

func httpGet(url string) (map[string]any, error) {
	res, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	var out map[string]any
	err = json.NewDecoder(res.Body).Decode(&out)
	return out, err
}
