package model

import (
	"math/rand/v2"
	"testing"

	"github.com/mtgrpo/mtgrpo/torch"
)

// sampleRows lays out n rows of torch.Sample settings of one kind, with u drawn from r: "greedy"
// (every row), "plain" (temperature 0.8, the last row greedy), "truncate" (top-k 5 on even rows,
// top-p 0.7 on odd ones, min-p 0.05 on the first) and the mode that goes with them.
func sampleRows(kind string, n, vocab int, r *rand.Rand) ([]float32, torch.SampleMode) {
	p := make([]float32, n*torch.SampleCols)
	mode := torch.SampleMode(0)
	for i := range n {
		q := p[i*torch.SampleCols : (i+1)*torch.SampleCols]
		q[torch.SampleColTemp], q[torch.SampleColTopK], q[torch.SampleColTopP] = 0.8, float32(vocab), 2
		q[torch.SampleColU] = r.Float32()
		switch {
		case kind == "greedy" || kind == "plain" && i == n-1:
			q[torch.SampleColTemp], q[torch.SampleColGreedy] = 1, 1
		case kind == "truncate" && i%2 == 0:
			q[torch.SampleColTopK] = 5
		case kind == "truncate":
			q[torch.SampleColTopP] = 0.7
		}
		if kind == "truncate" && i == 0 {
			q[torch.SampleColMinP] = 0.05
		}
	}
	switch kind {
	case "greedy":
		mode = torch.SampleGreedy
	case "truncate":
		mode = torch.SampleSort | torch.SampleMinP
	}
	return p, mode
}

// eagerStep is today's step for slots 0..n-1: Decode, then torch.Sample over its logits.
func eagerStep(m *Model, c *KVCache, tokens []int32, params []float32, mode torch.SampleMode) ([]float32, []float64, error) {
	slots := make([]int, len(tokens))
	for i := range slots {
		slots[i] = i
	}
	logits, err := m.Decode(c, slots, tokens)
	if err != nil {
		return nil, nil, err
	}
	prm := torch.FromSlice(params, int64(len(tokens)), torch.SampleCols).ToDevice(m.Device)
	return logits.Float32s(), torch.Sample(logits, prm, mode).Float64s(), nil
}

// prefillBoth starts the same prompts in slots 0.. of both caches.
func prefillBoth(t *testing.T, m *Model, a, b *KVCache, prompts [][]int32) {
	t.Helper()
	slots := make([]int, len(prompts))
	for i := range slots {
		slots[i] = i
	}
	for _, c := range []*KVCache{a, b} {
		if _, err := m.Prefill(c, slots, prompts); err != nil {
			t.Fatal(err)
		}
	}
}

// The static step computes what Decode followed by the sampler computes: the same logits (1e-5 in
// float32) and, with the same uniform numbers, the same tokens, for steps of every bucket size
// (padded: 3 rows run as 4, 5 and 7 as 8, reading 128 key positions for at most 12 needed), slots
// of uneven lengths, each sampling mode, and after a Fork, a Truncate and a compaction move (a
// Fork into a lower slot and a Reset) applied to both caches alike. The step's tokens are always
// exactly what the sampler draws from its own logits. In bfloat16 the two paths' logits round
// differently (other shapes: padded rows, more key positions: within logitTol), and a draw whose
// uniform number lies within that rounding of a boundary goes another way (6 of 59 rows here), so
// the tokens are compared across paths in float32 only. On CUDA every step is a graph replay.
func TestStaticStepMatchesDecode(t *testing.T) {
	for _, tc := range []struct {
		arch string
		tied bool
	}{{"llama", false}, {"qwen2", true}, {"qwen3", false}} {
		t.Run(tc.arch, func(t *testing.T) {
			onTorch(t, func() error {
				m := testModel(t, tc.arch, tc.tied, 61)
				defer m.Close()
				V := m.Config.VocabSize
				const slots = 10
				if got := Buckets(slots); len(got) != 5 || got[3] != 8 || got[4] != 10 {
					t.Fatalf("Buckets(10) = %v, want [1 2 4 8 10]", got)
				}
				ca, err := m.NewKVCache(slots, 136)
				if err != nil {
					return err
				}
				defer ca.Close()
				cb, _ := m.NewKVCache(slots, 136)
				defer cb.Close()
				s, err := m.NewStaticDecoder(cb)
				if err != nil {
					return err
				}
				defer s.Close()
				s.pad = true
				prefillBoth(t, m, ca, cb, randomSeqs(62, V, 1, 5, 2, 7, 3, 4, 6, 2, 1, 5))
				r := rand.New(rand.NewPCG(63, 1))
				next := randomSeqs(64, V, slots)[0]
				step := func(n int, kind string) {
					params, mode := sampleRows(kind, n, V, r)
					wantL, want, err := eagerStep(m, ca, next[:n], params, mode)
					if err != nil {
						t.Fatal(err)
					}
					out := make([]float64, n*torch.SampleOutCols)
					info, err := s.Step(next[:n], params, mode, out)
					if err != nil {
						t.Fatal(err)
					}
					if m.Device.IsCUDA() && !info.Replayed {
						t.Errorf("%d rows, %s: not a graph replay on CUDA (graphs off: %q)", n, kind, s.Stats().GraphsOff)
					}
					logits := s.Logits(n)
					gotL := logits.Float32s()
					if d := maxAbsDiff(gotL, wantL); d > logitTol(wantL) {
						t.Errorf("%d rows, %s: logits differ by %g", n, kind, d)
					}
					prm := torch.FromSlice(params, int64(n), torch.SampleCols).ToDevice(m.Device)
					own := torch.Sample(logits, prm, mode).Float64s()
					for i := range n {
						g, w, o := out[i*torch.SampleOutCols:], want[i*torch.SampleOutCols:], own[i*torch.SampleOutCols:]
						if g[0] != o[0] || g[1] != o[1] || g[2] != o[2] {
							t.Errorf("%d rows, %s: row %d drew %v, the sampler over its logits %v", n, kind, i, g[:3], o[:3])
						}
						if g[0] != w[0] && !lowPrecision() {
							t.Errorf("%d rows, %s: row %d sampled %v, Decode + Sample %v", n, kind, i, g[0], w[0])
						}
						next[i] = int32(w[0])
					}
					for i := range slots {
						if ca.Len(i) != cb.Len(i) {
							t.Errorf("%d rows: slot %d holds %d tokens, %d with Decode", n, i, cb.Len(i), ca.Len(i))
						}
					}
				}
				kinds := []string{"plain", "greedy", "truncate"}
				for i, n := range []int{1, 2, 3, 4, 5, 8, 10, 7} {
					step(n, kinds[i%3])
				}
				for _, c := range []*KVCache{ca, cb} {
					if err := c.Fork(0, 3); err != nil {
						return err
					}
					if err := c.Truncate(1, c.Len(1)-2); err != nil {
						return err
					}
					if err := c.Fork(9, 2); err != nil { // the engine's compaction: slot 9 moves to 2
						return err
					}
					c.Reset(9)
				}
				next[2], next[3] = next[9], next[0]
				for i, n := range []int{9, 4, 6} {
					step(n, kinds[i%3])
				}
				return nil
			})
		})
	}
}

// A step after an optimizer update computes with the updated weights: the fused q/k/v and
// gate/up storage is the parameters' own, so AdamW's update in place shows without a copy
// (nothing is laid out again), and the step's logits equal a full forward pass (which multiplies
// the separate parameters) of the same sequences, prefilled again with the new weights as every
// rollout does; they moved away from the old ones. A parameter replaced outright (as ZeRO-3's
// gather does) is laid out again by the next step, which then computes with its new values too.
func TestStaticStepSeesOptimizerUpdate(t *testing.T) {
	onTorch(t, func() error {
		m := testModel(t, "qwen2", false, 71)
		defer m.Close()
		m.SetTrainable(true)
		V := m.Config.VocabSize
		c, err := m.NewKVCache(2, 32)
		if err != nil {
			return err
		}
		defer c.Close()
		s, err := m.NewStaticDecoder(c)
		if err != nil {
			return err
		}
		defer s.Close()
		seqs := randomSeqs(72, V, 6, 4)
		params, mode := sampleRows("greedy", 2, V, rand.New(rand.NewPCG(73, 1)))
		out := make([]float64, 2*torch.SampleOutCols)
		// step prefills all but the last token of each sequence, runs then (if any), decodes the
		// last token statically and compares with the full forward over the whole sequence.
		step := func(what string, then func(), wantRelaid, wantDropped bool) []float32 {
			if _, err := m.Prefill(c, []int{0, 1}, [][]int32{seqs[0][:5], seqs[1][:3]}); err != nil {
				t.Fatal(err)
			}
			if then != nil {
				then()
			}
			info, err := s.Step([]int32{seqs[0][5], seqs[1][3]}, params, mode, out)
			if err != nil {
				t.Fatal(err)
			}
			if (info.Relaid > 0) != wantRelaid {
				t.Errorf("%s: %d weight groups laid out again", what, info.Relaid)
			}
			// On CUDA: a replay, whose graphs were dropped and captured again when a group moved
			// since the last step.
			if m.Device.IsCUDA() && (!info.Replayed || info.Dropped != wantDropped) {
				t.Errorf("%s: replayed %v, graphs dropped %v", what, info.Replayed, info.Dropped)
			}
			got := s.Logits(2).Float32s()
			for i, seq := range seqs {
				l := seqLogits(t, m, seq)
				want := l[(len(seq)-1)*V:]
				if d := maxAbsDiff(got[i*V:(i+1)*V], want); d > logitTol(want) {
					t.Errorf("%s: slot %d differs from the full forward by %g", what, i, d)
				}
			}
			return got
		}
		before := step("before the update", nil, false, false)
		if err := adamWStep(m, randomSeqs(74, V, 7, 5)); err != nil {
			return err
		}
		after := step("after the update", nil, false, false)
		if d := maxAbsDiff(after, before); d < 1e-3 {
			t.Errorf("the update moved the logits by only %g", d)
		}
		// A parameter replaced by a new tensor (ZeRO-3 swaps in gathered weights): halved before the
		// prefill (which lays it out again: the static step then finds it laid out and computes with
		// the halved values), or an equal copy after the prefill (the static step lays it out).
		kw := param(t, m, "model.layers.1.self_attn.k_proj.weight")
		swap := func(scale float64) func() {
			return func() {
				torch.NoGrad(func() {
					fresh := kw.Detach().MulScalar(scale).MoveTo(m.scope)
					kw.Swap(fresh)
					fresh.Free()
				})
			}
		}
		swap(0.5)()
		step("after a swap", nil, false, true)
		step("a swap after the prefill", swap(1), true, true)
		step("the step after", nil, false, false)
		return nil
	})
}

// The static step makes no tensor handle, leaves the live handles as they were and allocates
// nothing on the Go side per step: its inputs and outputs are preallocated buffers.
func TestStaticStepAllocatesNothing(t *testing.T) {
	onTorch(t, func() error {
		m := testModel(t, "qwen3", true, 81)
		defer m.Close()
		c, err := m.NewKVCache(3, 64)
		if err != nil {
			return err
		}
		defer c.Close()
		s, err := m.NewStaticDecoder(c)
		if err != nil {
			return err
		}
		defer s.Close()
		if _, err := m.Prefill(c, []int{0, 1, 2}, randomSeqs(82, m.Config.VocabSize, 3, 5, 2)); err != nil {
			return err
		}
		params, mode := sampleRows("plain", 3, m.Config.VocabSize, rand.New(rand.NewPCG(83, 1)))
		tokens, out := []int32{4, 5, 6}, make([]float64, 3*torch.SampleOutCols)
		step := func() {
			if _, err := s.Step(tokens, params, mode, out); err != nil {
				t.Fatal(err)
			}
		}
		step() // the first step makes the buffers
		created, live := torch.TensorsCreated(), torch.LiveTensors()
		allocs := testing.AllocsPerRun(20, step)
		if d := torch.TensorsCreated() - created; d != 0 {
			t.Errorf("21 steps created %d tensor handles", d)
		}
		if d := torch.LiveTensors() - live; d != 0 {
			t.Errorf("21 steps left %d more live tensors", d)
		}
		if allocs != 0 {
			t.Errorf("a step allocates %v times on the Go side", allocs)
		}
		return nil
	})
}
