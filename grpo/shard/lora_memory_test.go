package shard

import (
	"fmt"
	"testing"

	"github.com/mtgrpo/mtgrpo/grpo/memplan"
	"github.com/mtgrpo/mtgrpo/internal/ranks"
	"github.com/mtgrpo/mtgrpo/model"
	"github.com/mtgrpo/mtgrpo/torch"
)

// The memory model of a LoRA run against what the ranks hold, as TestMemoryModelGloo: at world
// sizes 1 and 2 over Gloo, each rank makes the tiny model (float32, and bfloat16), attaches rank-3
// adapters to q_proj, v_proj and down_proj, builds the optimizer over Parameters (the adapters)
// as a run does (whole, data parallel, ZeRO-1, ZeRO-2) and runs a backward pass and a step. The
// base's bytes, the adapters', the adapters' gradients (and ZeRO's shard), masters, moments,
// buckets or gather buffer and the KV cache must equal memplan.Predict's with Run.LoRA, byte for
// byte: the buckets and shards cover the adapters only, and the frozen base has no gradient.

const loraMemWorkerEnv = "MTGRPO_LORA_MEMORY_WORKER" // set: this process is a rank of TestLoRAMemoryGloo

func TestLoRAMemoryGloo(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 3 processes")
	}
	ranks.RequireGloo(t)
	for _, world := range []int{1, 2} {
		runMemoryRanks(t, "TestLoRAMemoryWorker", loraMemWorkerEnv, "lora memory worker", world)
	}
}

// TestLoRAMemoryWorker is one rank of TestLoRAMemoryGloo (it skips unless started by it).
func TestLoRAMemoryWorker(t *testing.T) {
	memoryRank(t, loraMemWorkerEnv, "lora memory worker", memplan.StageZeRO2, checkLoRAMemory)
}

// checkLoRAMemory measures one configuration on this rank and compares it with the prediction.
func checkLoRAMemory(t *testing.T, pg *torch.ProcessGroup, world, rank int, dt torch.DType, stage memplan.Stage) {
	const bucket, slots, maxLen, r = 4 << 10, 3, 16, 3
	targets := []string{model.ModuleQ, model.ModuleV, model.ModuleDown}
	name := fmt.Sprintf("LoRA world %d rank %d %s stage %d", world, rank, dt, stage)
	c, g, err := model.PresetConfig("qwen3", "tiny", &model.Vocab{Size: 40, BOS: 1, EOS: []int{2}})
	if err != nil {
		t.Fatal(err)
	}
	c.HiddenSize = 66 // as TestMemoryModelGloo: shards that do not divide evenly
	m, err := model.New(c, g, model.Options{DType: dt.String()}, 5)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	base := m.ParameterTensors() // before the adapters: every weight
	if err := m.AddAdapters(model.LoRAConfig{Rank: r, Alpha: 6, TargetModules: targets}, 1); err != nil {
		t.Fatal(err)
	}
	m.SetTrainable(true)
	set := zeroSettings
	set.Stage, set.BucketBytes, set.MaxGradNorm = stage, bucket, 1
	opt, err := New(m.Parameters(), UnitsOf(m), pg, set)
	if err != nil {
		t.Fatal(err)
	}
	defer opt.Close()
	kv, err := m.NewKVCache(slots, maxLen)
	if err != nil {
		t.Fatal(err)
	}
	defer kv.Close()
	shape, err := PlanModel(m.Config)
	if err != nil {
		t.Fatal(err)
	}
	run := memplan.Run{Model: shape, DTypeBytes: int64(dt.Size()), World: world, Stage: stage, BucketBytes: bucket,
		Slots: slots, MaxLen: maxLen, LoRA: &memplan.LoRA{PerLayer: memplan.LoRAPerLayer(shape, r, targets)}}
	p, err := memplan.Predict(run, rank)
	if err != nil {
		t.Fatal(err)
	}
	if got := tensorBytes(base...); got != p.Weights {
		t.Errorf("%s: the base holds %d bytes, predicted %d", name, got, p.Weights)
	}
	// measureRank's weights are the Parameters: the adapters.
	want := rankBytes{p.Adapters, p.Grads, p.Masters, p.Moments, p.Comm, p.KVCache}
	frozen := func(when string) {
		for _, w := range base {
			if w.Grad() != nil || w.RequiresGrad() {
				t.Errorf("%s, %s: a base weight has a gradient or requires one", name, when)
				return
			}
		}
	}
	s := torch.NewScope()
	defer s.Close()
	s.With(func() {
		if stage == memplan.StageZeRO2 && pg != nil {
			checkInFlight(t, name, m, opt, kv, want, p)
			frozen("ZeRO-2 step")
			return
		}
		step(t, opt, func(model.ForwardOptions) {
			for _, w := range m.ParameterTensors() {
				w.Square().Sum(false).Backward()
			}
			if got := measureRank(m, opt, kv); got != want {
				t.Errorf("%s, after backward: holds %+v, predicted %+v", name, got, want)
			}
			frozen("backward")
		})
		if pg != nil {
			want.Grads -= p.Adapters // the step drops the adapters' gradients; the rest stays
		} // one process keeps them in its persistent buffers (zeroed)
		if got := measureRank(m, opt, kv); got != want {
			t.Errorf("%s, after the step: holds %+v, want %+v", name, got, want)
		}
	})
}
