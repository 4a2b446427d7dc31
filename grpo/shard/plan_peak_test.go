package shard

import (
	"fmt"
	"math"
	"testing"

	"github.com/mtgrpo/mtgrpo/grpo/memplan"
	"github.com/mtgrpo/mtgrpo/model"
	"github.com/mtgrpo/mtgrpo/torch"
)

// The memory plan's training peak against a real update's, on the CPU: a Qwen2 of hidden 128,
// intermediate 384, 4 layers, 4 query heads over 2 key/value heads of 32, vocabulary 1,024, in
// one process (the optimizer with its flat gradient buffers), one pass over 8 sequences of 64
// tokens (update.micro_tokens 512, plain causal attention: libtorch's math kernel on the CPU),
// the entropies computed as the trainer's passes do, then AdamW's step. The measure is the most
// bytes live tensors held from the model's creation to the end of the step (torch.TrackCPUMemory:
// the CPU allocator's own count, so neither the allocator's caching nor the Go heap blurs it).
// The plan (memplan.Predict) must be within 15% of it in float32 and bfloat16, with and
// without gradient checkpointing, the head's 2 MiB of logits kept whole (the default budget) or
// in chunks (budget −1: here one chunk of all 512 rows, three copies at once instead of four).
func TestMemoryPlanMatchesTrainingPeak(t *testing.T) {
	const seqs, seqLen = 8, 64
	for _, c := range []struct {
		dt     torch.DType
		ckpt   bool
		budget int64
	}{{torch.Float32, false, 0}, {torch.Float32, true, -1}, {torch.BFloat16, false, -1}, {torch.BFloat16, true, 0}} {
		dt, ckpt, budget := c.dt, c.ckpt, c.budget
		{
			name := fmt.Sprintf("%s checkpointing=%v head budget %d", dt, ckpt, c.budget)
			onTorch(t, func() {
				torch.TrackCPUMemory()
				base := torch.CPUMemoryStats().Live
				torch.ResetCPUPeak()
				c, g, err := model.PresetConfig("qwen2", "tiny", &model.Vocab{Size: 1024, BOS: 1, EOS: []int{2}})
				if err != nil {
					t.Fatal(err)
				}
				c.HiddenSize, c.IntermediateSize, c.NumHiddenLayers, c.MaxWindowLayers = 128, 384, 4, 4
				c.NumAttentionHeads, c.NumKeyValueHeads = 4, 2
				m, err := model.New(c, g, model.Options{DType: dt.String()}, 7)
				if err != nil {
					t.Fatal(err)
				}
				defer m.Close()
				m.SetTrainable(true)
				opt, err := New(m.Parameters(), UnitsOf(m), nil, zeroSettings)
				if err != nil {
					t.Fatal(err)
				}
				defer opt.Close()
				ids := make([][]int32, seqs)
				for i := range ids {
					for j := range seqLen {
						ids[i] = append(ids[i], int32(3+(i*131+j*17)%1000))
					}
				}
				b, err := model.NewBatch(ids, false)
				if err != nil {
					t.Fatal(err)
				}
				s := torch.NewScope()
				_, err = opt.Passes(1, func(_ int, fo model.ForwardOptions) error {
					fo.Checkpoint, fo.Entropy, fo.HeadMemoryBudget = ckpt, true, budget
					p, err := m.Train(b, fo)
					if err != nil {
						return err
					}
					return p.Backward(p.LogProbs.Sum(false).Neg())
				})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := opt.Step(1e-3); err != nil {
					t.Fatal(err)
				}
				s.Close()
				measured := torch.CPUMemoryStats().Peak - base
				shape, err := PlanModel(m.Config)
				if err != nil {
					t.Fatal(err)
				}
				p, err := memplan.Predict(memplan.Run{Model: shape, DTypeBytes: int64(dt.Size()), World: 1,
					MicroTokens: seqs * seqLen, Checkpointing: ckpt, HeadBudget: budget, MaxLen: seqLen, Attention: memplan.AttentionMath}, 0)
				if err != nil {
					t.Fatal(err)
				}
				got := p.TrainPeak()
				t.Logf("%s: measured %d bytes, planned %d (%+.1f%%): persistent %d, activations %d, logits %d × %d, step %d",
					name, measured, got, 100*float64(got-measured)/float64(measured), p.Persistent(), p.Activations,
					p.LogitsCopies, p.Logits, p.StepGrads)
				if math.Abs(float64(got-measured)) > 0.15*float64(measured) {
					t.Errorf("%s: planned %d bytes, measured %d: more than 15%% apart", name, got, measured)
				}
			})
		}
	}
}
