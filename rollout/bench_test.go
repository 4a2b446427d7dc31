package rollout

import (
	"fmt"
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
				e, _ := NewEngine(be, nil, Config{})
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

func repeatLen(n, times int) []int {
	out := make([]int, times)
	for i := range out {
		out[i] = n
	}
	return out
}
