package rollout

import (
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// Greedy decoding of the "last + 1" mock: prompt [5] gives 6, 7, 8, 9. Every row of logits is 10
// at one id and 0 at the other 15, so the tempered log-prob of the chosen token is
// 10 − log(e^10 + 15) = −log(1 + 15·e^−10) ≈ −6.8097e-4; the sampled log-prob of a greedy token is 0.
func TestEngineGreedyMock(t *testing.T) {
	onTorch(t, func() error {
		m := NewMockModel(16, 2, 32, nextPlusOne(16))
		e, err := NewEngine(m, nil, EngineConfig{})
		if err != nil {
			return err
		}
		out, err := e.Generate([]*Request{{Prompt: []int32{5}, Sampling: Sampling{Greedy: true, MaxNewTokens: 4}}})
		if err != nil {
			return err
		}
		r := out[0][0]
		if !slices.Equal(r.Tokens, []int32{6, 7, 8, 9}) || r.Finish != FinishLength {
			t.Errorf("tokens %v finish %s, want [6 7 8 9] length", r.Tokens, r.Finish)
		}
		want := -math.Log(1 + 15*math.Exp(-10))
		for i := range r.Tokens {
			if !near(float64(r.TemperedLogProbs[i]), want, 1e-6) || r.LogProbs[i] != 0 {
				t.Errorf("token %d: log-probs %g %g, want 0 and %g", i, r.LogProbs[i], r.TemperedLogProbs[i], want)
			}
		}
		return nil
	})
}

// Continuous batching on two slots: A (2 tokens) and B (5 tokens) start together; C waits. A ends
// after step 2, so in step 3 C's prompt is prefilled into A's slot in the same forward pass as B's
// decode. Every output continues its own prompt (the mock reads the slot's history).
func TestEngineContinuousBatchingReusesSlots(t *testing.T) {
	onTorch(t, func() error {
		m := NewMockModel(64, 2, 32, nextPlusOne(64))
		e, err := NewEngine(m, nil, EngineConfig{})
		if err != nil {
			return err
		}
		g := func(n int) Sampling { return Sampling{Greedy: true, MaxNewTokens: n} }
		reqs := []*Request{{Prompt: []int32{10, 11}, Sampling: g(2)}, {Prompt: []int32{20}, Sampling: g(5)},
			{Prompt: []int32{30, 31, 32}, Sampling: g(3)}}
		out, err := e.Generate(reqs)
		if err != nil {
			return err
		}
		want := [][]int32{{12, 13}, {21, 22, 23, 24, 25}, {33, 34, 35}}
		for i := range want {
			if !slices.Equal(out[i][0].Tokens, want[i]) {
				t.Errorf("request %d: %v, want %v", i, out[i][0].Tokens, want[i])
			}
		}
		// Slots are handed out from 0: A in 0, B in 1. When A is done, B moves down to slot 0 (the
		// busy slots stay 0..n-1) and C takes slot 1.
		wantCalls := []MockCall{
			{Slots: []int{0, 1}, New: []int{2, 1}}, // prefill A and B
			{Slots: []int{0, 1}, New: []int{1, 1}}, // decode; A ends (2 tokens)
			{Slots: []int{0, 1}, New: []int{1, 3}}, // B decodes in slot 0 while C is prefilled in slot 1
			{Slots: []int{0, 1}, New: []int{1, 1}},
			{Slots: []int{0, 1}, New: []int{1, 1}}, // C ends (3 tokens) and B ends (5 tokens)
		}
		if !reflect.DeepEqual(m.Calls, wantCalls) {
			t.Errorf("calls\n%v\nwant\n%v", m.Calls, wantCalls)
		}
		if s := e.Stats(); s.Steps != 5 || s.PrefillTokens != 6 || s.Generated != 10 || s.DecodeTokens != 7 || s.MaxBatch != 2 ||
			s.Moves != 1 {
			t.Errorf("stats %+v", s)
		}
		if !e.Idle() || e.Running() != 0 {
			t.Error("engine not idle after Generate")
		}
		return nil
	})
}

// Stop token ids end a sequence and stay in its output; IgnoreEOS and explicit lists override.
func TestEngineStopTokens(t *testing.T) {
	onTorch(t, func() error {
		m := NewMockModel(16, 4, 32, nextPlusOne(16))
		m.Stops = []int{8}
		e, err := NewEngine(m, nil, EngineConfig{})
		if err != nil {
			return err
		}
		g := Sampling{Greedy: true, MaxNewTokens: 6}
		own := g
		own.StopTokenIDs = []int{7}
		ign := g
		ign.IgnoreEOS = true
		out, err := e.Generate([]*Request{{Prompt: []int32{5}, Sampling: g}, {Prompt: []int32{5}, Sampling: own},
			{Prompt: []int32{5}, Sampling: ign}})
		if err != nil {
			return err
		}
		check := func(i int, tokens []int32, why FinishReason) {
			if r := out[i][0]; !slices.Equal(r.Tokens, tokens) || r.Finish != why {
				t.Errorf("request %d: %v %s, want %v %s", i, r.Tokens, r.Finish, tokens, why)
			}
		}
		check(0, []int32{6, 7, 8}, FinishEOS)
		check(1, []int32{6, 7}, FinishEOS)
		check(2, []int32{6, 7, 8, 9, 10, 11}, FinishLength)
		return nil
	})
}

// scripted is a mock that writes text byte by byte after any prompt (tiny tokenizer: id = byte),
// then <|im_end|>.
func scripted(v int, promptLen int, text string, eos int) func([]int32) []float32 {
	return func(h []int32) []float32 {
		i := len(h) - promptLen
		if i < len(text) {
			return oneHot(v, int(text[i]), 30)
		}
		return oneHot(v, eos, 30)
	}
}

// Stop strings are matched on the decoded text across token boundaries: "</x>" arrives as four
// byte tokens, "é!" as three (é is two UTF-8 bytes, decoded only when both are in). The tokens
// through the one completing the match stay; the text is cut before it (or after, with
// IncludeStopString).
func TestEngineStopStringsAcrossTokens(t *testing.T) {
	tok := tiny(t)
	eos, _ := tok.TokenID("<|im_end|>")
	cases := []struct {
		text, stop string
		include    bool
		wantText   string
		wantTokens int
		why        FinishReason
	}{
		{"say ab</x> more", "</x>", false, "say ab", 10, FinishStop},
		{"say ab</x> more", "</x>", true, "say ab</x>", 10, FinishStop},
		{"caf\u00e9! ok", "\u00e9!", false, "caf", 6, FinishStop},
		{"no stop here", "zzz", false, "no stop here", 13, FinishEOS},
		{"aab", "ab", false, "a", 3, FinishStop},
	}
	onTorch(t, func() error {
		for _, c := range cases {
			m := NewMockModel(tok.VocabSize(), 1, 64, scripted(tok.VocabSize(), 2, c.text, eos))
			m.Stops = []int{eos}
			e, err := NewEngine(m, tok, EngineConfig{})
			if err != nil {
				return err
			}
			out, err := e.Generate([]*Request{{Prompt: []int32{65, 66}, Sampling: Sampling{Greedy: true, MaxNewTokens: 40,
				StopStrings: []string{c.stop}, IncludeStopString: c.include}}})
			if err != nil {
				return err
			}
			r := out[0][0]
			if r.Text != c.wantText || len(r.Tokens) != c.wantTokens || r.Finish != c.why {
				t.Errorf("%q stop %q: text %q, %d tokens, %s; want %q, %d, %s", c.text, c.stop, r.Text, len(r.Tokens), r.Finish,
					c.wantText, c.wantTokens, c.why)
			}
			if c.why == FinishStop && r.StopString != c.stop {
				t.Errorf("stop string %q, want %q", r.StopString, c.stop)
			}
		}
		return nil
	})
}

// forkCheck is a mock whose first token after a prompt of promptLen is uniform over 10..19 and
// every later token is determined by the whole history: (Σ history) mod 50 + 100. A sample whose
// slot did not receive the prompt's cache would continue from the wrong history.
func forkCheck(v, promptLen int) func([]int32) []float32 {
	return func(h []int32) []float32 {
		row := make([]float32, v)
		if len(h) == promptLen {
			for i := range row {
				row[i] = -1e9
			}
			for i := 10; i < 20; i++ {
				row[i] = 0
			}
			return row
		}
		sum := 0
		for _, x := range h {
			sum += int(x)
		}
		row[sum%50+100] = 30
		return row
	}
}

func checkForked(t *testing.T, prompt []int32, r *Result) {
	t.Helper()
	if r.Tokens[0] < 10 || r.Tokens[0] >= 20 {
		t.Errorf("sample %d: first token %d outside 10..19", r.Sample, r.Tokens[0])
	}
	h := append(append([]int32(nil), prompt...), r.Tokens[0])
	for i := 1; i < len(r.Tokens); i++ {
		sum := 0
		for _, x := range h {
			sum += int(x)
		}
		if want := int32(sum%50 + 100); r.Tokens[i] != want {
			t.Errorf("sample %d token %d: %d, want %d", r.Sample, i, r.Tokens[i], want)
		}
		h = append(h, r.Tokens[i])
	}
}

// n samples share one prefill: one Extend row with the 4-token prompt, then the cache is copied
// into the other slots. With fewer free slots than samples, the rest are admitted later (their own
// prefill, shared among those admitted together).
func TestEngineSamplesSharePrefill(t *testing.T) {
	prompt := []int32{1, 2, 3, 4}
	onTorch(t, func() error {
		m := NewMockModel(200, 4, 32, forkCheck(200, 4))
		e, err := NewEngine(m, nil, EngineConfig{Seed: 3})
		if err != nil {
			return err
		}
		out, err := e.Generate([]*Request{{Prompt: prompt, N: 4, Sampling: Sampling{MaxNewTokens: 5}}})
		if err != nil {
			return err
		}
		if got := m.Calls[0]; !reflect.DeepEqual(got, MockCall{Slots: []int{0}, New: []int{4}}) {
			t.Errorf("first call %v, want one prefill of 4 tokens in slot 0", got)
		}
		if got := m.Calls[1]; len(got.Slots) != 4 {
			t.Errorf("second call decodes %d slots, want 4", len(got.Slots))
		}
		firsts := map[int32]bool{}
		for _, r := range out[0] {
			checkForked(t, prompt, r)
			firsts[r.Tokens[0]] = true
		}
		if len(firsts) < 2 {
			t.Errorf("4 samples drew the same first token %v: samples are not independent", firsts)
		}
		if s := e.Stats(); s.Forks != 3 || s.PrefillTokens != 4 {
			t.Errorf("stats %+v, want 3 forks and 4 prompt tokens", s)
		}

		// Three samples on two slots: two share a prefill, the third comes later with its own.
		m2 := NewMockModel(200, 2, 32, forkCheck(200, 4))
		e2, _ := NewEngine(m2, nil, EngineConfig{Seed: 3})
		out, err = e2.Generate([]*Request{{Prompt: prompt, N: 3, Sampling: Sampling{MaxNewTokens: 3}}})
		if err != nil {
			return err
		}
		for _, r := range out[0] {
			checkForked(t, prompt, r)
		}
		if s := e2.Stats(); s.Forks != 1 || s.PrefillTokens != 8 {
			t.Errorf("stats %+v, want 1 fork and 8 prompt tokens", s)
		}
		return nil
	})
}

// A seeded request draws the same tokens alone or in a batch with others, and its samples differ
// from each other.
func TestEngineSeedIndependentOfBatch(t *testing.T) {
	uniform := func(h []int32) []float32 { return make([]float32, 50) }
	run := func(extra int) ([]*Result, error) {
		m := NewMockModel(50, 8, 64, uniform)
		e, _ := NewEngine(m, nil, EngineConfig{Seed: uint64(extra)})
		reqs := []*Request{}
		for i := 0; i < extra; i++ {
			reqs = append(reqs, &Request{Prompt: []int32{1, 2, 3}, Sampling: Sampling{MaxNewTokens: 7}})
		}
		reqs = append(reqs, &Request{Prompt: []int32{4}, N: 2, Sampling: Sampling{MaxNewTokens: 12, Seed: Seed(42)}})
		out, err := e.Generate(reqs)
		if err != nil {
			return nil, err
		}
		return out[len(out)-1], nil
	}
	onTorch(t, func() error {
		alone, err := run(0)
		if err != nil {
			return err
		}
		crowded, err := run(5)
		if err != nil {
			return err
		}
		for i := range alone {
			if !slices.Equal(alone[i].Tokens, crowded[i].Tokens) {
				t.Errorf("sample %d: %v alone, %v in a batch", i, alone[i].Tokens, crowded[i].Tokens)
			}
		}
		if slices.Equal(alone[0].Tokens, alone[1].Tokens) {
			t.Error("the two samples of a seeded request are identical")
		}
		return nil
	})
}

// The KV cache's length caps the output: prompt 5 + output 3 = 8 = max_len.
func TestEngineLengthCappedByCache(t *testing.T) {
	onTorch(t, func() error {
		m := NewMockModel(16, 1, 8, nextPlusOne(16))
		e, _ := NewEngine(m, nil, EngineConfig{})
		out, err := e.Generate([]*Request{{Prompt: []int32{1, 2, 3, 4, 5}, Sampling: Sampling{Greedy: true, MaxNewTokens: 100}}})
		if err != nil {
			return err
		}
		if r := out[0][0]; len(r.Tokens) != 3 || r.Finish != FinishLength {
			t.Errorf("%d tokens %s, want 3 length", len(r.Tokens), r.Finish)
		}
		return nil
	})
}

func TestEngineRefusesBadRequests(t *testing.T) {
	onTorch(t, func() error {
		m := NewMockModel(16, 2, 8, nextPlusOne(16))
		e, _ := NewEngine(m, nil, EngineConfig{})
		cases := []struct {
			r    *Request
			want string
		}{
			{&Request{}, "empty prompt"},
			{&Request{Prompt: []int32{3, 16}}, "prompt token 1: id 16 is outside the vocabulary"},
			{&Request{Prompt: make([]int32, 8)}, "prompt of 8 tokens leaves no room"},
			{&Request{Prompt: []int32{1}, Sampling: Sampling{Temperature: -1}}, "temperature"},
			{&Request{Prompt: []int32{1}, Sampling: Sampling{TopP: 1.5}}, "top_p"},
			{&Request{Prompt: []int32{1}, Sampling: Sampling{TopK: -2}}, "top_k"},
			{&Request{Prompt: []int32{1}, Sampling: Sampling{MinP: 2}}, "min_p"},
			{&Request{Prompt: []int32{1}, Sampling: Sampling{StopStrings: []string{"x"}}}, "stop strings need an engine with a tokenizer"},
		}
		for _, c := range cases {
			if err := e.Submit(c.r); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
		}
		if !e.Idle() {
			t.Error("a refused request was queued")
		}
		return nil
	})
}

// Abort ends a request's running and queued samples and frees their slots.
func TestEngineAbort(t *testing.T) {
	onTorch(t, func() error {
		m := NewMockModel(16, 2, 64, nextPlusOne(16))
		e, _ := NewEngine(m, nil, EngineConfig{})
		r := &Request{Prompt: []int32{1}, N: 3, Sampling: Sampling{Greedy: true, MaxNewTokens: 50}}
		if err := e.Submit(r); err != nil {
			return err
		}
		if _, err := e.Step(); err != nil {
			return err
		}
		if e.Running() != 2 || e.Waiting() != 1 {
			t.Errorf("running %d waiting %d, want 2 and 1", e.Running(), e.Waiting())
		}
		res := e.Abort(r)
		if len(res) != 3 || !e.Idle() {
			t.Errorf("%d aborted results, idle %v", len(res), e.Idle())
		}
		for _, x := range res {
			if x.Finish != FinishAbort {
				t.Errorf("finish %s", x.Finish)
			}
		}
		return nil
	})
}

// When sharing a pass would pad decoding rows to a long prompt's width, the step runs two passes:
// the decodes, then the prompts. Outputs are the same. Here one decode row and a 3-token prompt:
// one pass costs 2 rows × 3 = 6 positions, two cost 1 + 3 + PassTokens (1) = 5.
func TestEngineSplitsPrefillFromDecode(t *testing.T) {
	onTorch(t, func() error {
		m := NewMockModel(64, 2, 32, nextPlusOne(64))
		e, _ := NewEngine(m, nil, EngineConfig{PassTokens: 1})
		g := func(n int) Sampling { return Sampling{Greedy: true, MaxNewTokens: n} }
		out, err := e.Generate([]*Request{{Prompt: []int32{10, 11}, Sampling: g(2)}, {Prompt: []int32{20}, Sampling: g(5)},
			{Prompt: []int32{30, 31, 32}, Sampling: g(3)}})
		if err != nil {
			return err
		}
		if !slices.Equal(out[2][0].Tokens, []int32{33, 34, 35}) || !slices.Equal(out[1][0].Tokens, []int32{21, 22, 23, 24, 25}) {
			t.Errorf("outputs %v %v", out[1][0].Tokens, out[2][0].Tokens)
		}
		// Step 1 prefills A (2 tokens) and B (1): 2 rows × 2 = 4 ≤ 2 + 0 + 1, no decodes anyway.
		// Step 3: B (moved to slot 0 when A ended) decodes, C (3 tokens) is prefilled in slot 1:
		// split.
		if !reflect.DeepEqual(m.Calls[2], MockCall{Slots: []int{0}, New: []int{1}}) ||
			!reflect.DeepEqual(m.Calls[3], MockCall{Slots: []int{1}, New: []int{3}}) || e.Stats().SplitSteps != 1 {
			t.Errorf("calls %v, split steps %d", m.Calls, e.Stats().SplitSteps)
		}
		return nil
	})
}

// sumNext is a mock whose greedy next token is (Σ history) mod 61 + 3: every token depends on the
// whole history, so a sequence moved to another slot without its cache would go wrong at once.
func sumNext(v int) func([]int32) []float32 {
	return func(h []int32) []float32 {
		sum := 0
		for _, x := range h {
			sum += int(x)
		}
		return oneHot(v, sum%61+3, 10)
	}
}

// Sequences of different lengths finishing at different steps leave holes; the engine moves the
// highest running sequence into each, so every forward pass gets one ascending run of slots from 0
// (the model then reads its cache in place) or, split, two adjacent runs, and every output is
// still the continuation of its own history.
func TestEngineKeepsBusySlotsContiguous(t *testing.T) {
	onTorch(t, func() error {
		m := NewMockModel(64, 6, 64, sumNext(64))
		e, _ := NewEngine(m, nil, EngineConfig{})
		var reqs []*Request
		// The first step admits three requests of 2, 3 and 1 samples: two groups with copies.
		samples := []int{2, 3, 1, 2, 1, 3, 1, 2, 2, 1}
		for i, n := range []int{9, 2, 5, 1, 7, 3, 4, 6, 2, 8} {
			reqs = append(reqs, &Request{Prompt: []int32{int32(10 + i), int32(20 + i)}, N: samples[i],
				Sampling: Sampling{Greedy: true, MaxNewTokens: n}})
		}
		out, err := e.Generate(reqs)
		if err != nil {
			return err
		}
		for i, rs := range out {
			for _, r := range rs {
				h := append([]int32(nil), reqs[i].Prompt...)
				for k, tok := range r.Tokens {
					if want := sumNext(64)(h); want[tok] != 10 {
						t.Errorf("request %d sample %d token %d: %d does not continue its history", i, r.Sample, k, tok)
						break
					}
					h = append(h, tok)
				}
				if len(r.Tokens) != reqs[i].Sampling.MaxNewTokens {
					t.Errorf("request %d: %d tokens, want %d", i, len(r.Tokens), reqs[i].Sampling.MaxNewTokens)
				}
			}
		}
		for i, c := range m.Calls {
			for k := 1; k < len(c.Slots); k++ {
				if c.Slots[k] != c.Slots[k-1]+1 {
					t.Errorf("call %d reads slots %v: not one ascending run", i, c.Slots)
					break
				}
			}
			if c.Slots[0] != 0 && (i == 0 || c.Slots[0] != m.Calls[i-1].Slots[len(m.Calls[i-1].Slots)-1]+1) {
				t.Errorf("call %d starts at slot %d", i, c.Slots[0])
			}
		}
		if e.Stats().Moves == 0 {
			t.Error("no sequence was moved: the workload should leave holes")
		}
		return nil
	})
}

// A model whose logits turn NaN (here at the third forward pass) stops the engine with an error
// naming the step and the sequence, instead of sampling token 0 with NaN log-probs; on the greedy
// path and the sampling path alike.
func TestEngineStopsOnNonFiniteLogits(t *testing.T) {
	for _, s := range []Sampling{{Greedy: true, MaxNewTokens: 8}, {Temperature: 0.7, MaxNewTokens: 8}} {
		onTorch(t, func() error {
			calls := 0
			m := NewMockModel(16, 2, 32, func(h []int32) []float32 {
				row := nextPlusOne(16)(h)
				if calls++; calls >= 3 {
					row[4] = float32(math.NaN())
				}
				return row
			})
			e, err := NewEngine(m, nil, EngineConfig{})
			if err != nil {
				return err
			}
			out, err := e.Generate([]*Request{{Prompt: []int32{5}, Sampling: s}})
			if err == nil || !strings.Contains(err.Error(), "step 3: the model's logits are NaN or infinite for 1 of 1 sequences") ||
				!strings.Contains(err.Error(), "sample 0 at output token 2") {
				t.Errorf("%+v: results %v, err %v", s, out, err)
			}
			return nil
		})
	}
}
