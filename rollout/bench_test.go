package rollout

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/mtgrpo/mtgrpo/torch"
)

// BenchmarkEngineTiny measures generation throughput of the tiny model (qwen3, d = 64, 4 layers,
// vocabulary 563) on the CPU: batch B sequences with 32-token prompts, 64 new tokens each
// (ignore_eos), temperature 1; one iteration = the whole batch. Reports generated tokens/s.
//
//	go test -run '^$' -bench EngineTiny -benchtime 3x ./rollout/
func BenchmarkEngineTiny(b *testing.B) {
	for _, batch := range []int{1, 32, 256} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			err := torch.Run(func() error {
				m := tinyModel(b, 1)
				defer m.Close()
				be, err := NewModelBackend(m, batch, 128)
				if err != nil {
					return err
				}
				defer be.Close()
				e, _ := NewEngine(be, nil, EngineConfig{})
				prompts := randomPrompts(1, m.Config.VocabSize, repeatLen(32, batch)...)
				var tokens int
				var elapsed time.Duration
				b.ResetTimer()
				for range b.N {
					reqs := make([]*Request, batch)
					for i := range reqs {
						reqs[i] = &Request{Prompt: prompts[i], Sampling: Sampling{Temperature: 1, MaxNewTokens: 64, IgnoreEOS: true}}
					}
					t0 := time.Now()
					out, err := e.Generate(reqs)
					if err != nil {
						return err
					}
					elapsed += time.Since(t0)
					for _, r := range out {
						tokens += len(r[0].Tokens)
					}
				}
				b.ReportMetric(float64(tokens)/elapsed.Seconds(), "tokens/s")
				st := e.Stats()
				b.ReportMetric(float64(st.Forward.Microseconds())/float64(st.Steps), "forward-µs/step")
				b.ReportMetric(float64(st.Sample.Microseconds())/float64(st.Steps), "sample-µs/step")
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		})
	}
}

// BenchmarkEngineTinyMixed is the RL-shaped workload on the tiny model: 64 sequences at once with
// prompts of 16..128 and outputs of 16..256 tokens (uniform, seeded), so sequences finish at
// different steps and their slots fall free in the middle of the cache. Reports generated tokens/s
// and the sequences moved to keep the busy slots contiguous.
//
//	go test -run '^$' -bench EngineTinyMixed -benchtime 3x ./rollout/
func BenchmarkEngineTinyMixed(b *testing.B) {
	err := torch.Run(func() error {
		m := tinyModel(b, 1)
		defer m.Close()
		const n = 64
		be, err := NewModelBackend(m, n, 400)
		if err != nil {
			return err
		}
		defer be.Close()
		e, _ := NewEngine(be, nil, EngineConfig{})
		r := rand.New(rand.NewPCG(3, 4))
		ins, outs := make([]int, n), make([]int, n)
		for i := range ins {
			ins[i], outs[i] = 16+r.IntN(113), 16+r.IntN(241)
		}
		prompts := randomPrompts(1, m.Config.VocabSize, ins...)
		var tokens int
		var elapsed time.Duration
		b.ResetTimer()
		for range b.N {
			reqs := make([]*Request, n)
			for i := range reqs {
				reqs[i] = &Request{Prompt: prompts[i], Sampling: Sampling{Temperature: 1, MaxNewTokens: outs[i], IgnoreEOS: true}}
			}
			t0 := time.Now()
			out, err := e.Generate(reqs)
			if err != nil {
				return err
			}
			elapsed += time.Since(t0)
			for _, r := range out {
				tokens += len(r[0].Tokens)
			}
		}
		b.ReportMetric(float64(tokens)/elapsed.Seconds(), "tokens/s")
		b.ReportMetric(float64(e.Stats().Moves)/float64(b.N), "moves/op")
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

// BenchmarkDecodeSlotLayout is one decode step of 32 sequences with 384 cached tokens each on the
// tiny model, their slots contiguous (0..31, what the engine keeps) or every other slot (0, 2, ...,
// 62: the holes finished sequences leave), where every layer first gathers the rows of those slots
// out of its cache.
//
//	go test -run '^$' -bench DecodeSlotLayout -count 3 ./rollout/
func BenchmarkDecodeSlotLayout(b *testing.B) {
	const slots, cached = 64, 384
	for _, layout := range []string{"contiguous", "holes"} {
		b.Run(layout, func(b *testing.B) {
			err := torch.Run(func() error {
				m := tinyModel(b, 1)
				defer m.Close()
				be, err := NewModelBackend(m, slots, cached+1)
				if err != nil {
					return err
				}
				defer be.Close()
				prompts := randomPrompts(1, m.Config.VocabSize, repeatLen(cached, slots)...)
				for i := 0; i < slots; i += 8 {
					s := torch.NewScope()
					_, err := be.Extend([]int{i, i + 1, i + 2, i + 3, i + 4, i + 5, i + 6, i + 7}, prompts[i:i+8])
					s.Close()
					if err != nil {
						return err
					}
				}
				run, next := make([]int, 32), make([][]int32, 32)
				for i := range run {
					run[i], next[i] = i, []int32{5}
					if layout == "holes" {
						run[i] = 2 * i
					}
				}
				b.ResetTimer()
				for range b.N {
					s := torch.NewScope()
					_, err := be.Extend(run, next)
					s.Close()
					if err != nil {
						return err
					}
					for _, slot := range run {
						if err := be.Cache.Truncate(slot, cached); err != nil {
							return err
						}
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		})
	}
}

// BenchmarkSample is one step's sampling of 64 rows over Qwen's 151,936-token vocabulary on the
// CPU: temperature only (the RL default), and with top-p 0.9 (which sorts).
//
//	go test -run '^$' -bench 'Sample$' -count 3 ./rollout/
func BenchmarkSample(b *testing.B) {
	const rows, vocab = 64, 151936
	for _, s := range []Sampling{{Temperature: 0.7}, {Temperature: 0.7, TopP: 0.9}} {
		b.Run(fmt.Sprintf("top_p=%g", s.TopP), func(b *testing.B) {
			err := torch.Run(func() error {
				r := rand.New(rand.NewPCG(1, 2))
				vals := make([]float32, rows*vocab)
				for i := range vals {
					vals[i] = float32(r.NormFloat64() * 3)
				}
				logits := torch.FromSlice(vals, rows, vocab)
				draws := make([]draw, rows)
				for i := range draws {
					draws[i] = draw{s: &s, u: r.Float64()}
				}
				b.ResetTimer()
				for range b.N {
					sampleRows(logits, draws)
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		})
	}
}

func repeatLen(n, times int) []int {
	out := make([]int, times)
	for i := range out {
		out[i] = n
	}
	return out
}
