package shard

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mtgrpo/mtgrpo/grpo/memplan"
	"github.com/mtgrpo/mtgrpo/internal/ranks"
	"github.com/mtgrpo/mtgrpo/model"
	"github.com/mtgrpo/mtgrpo/torch"
)

// The memory model against what the ranks hold: at world sizes 1, 2 and 4 over Gloo, each rank
// makes the tiny model (float32, and bfloat16 with float32 masters), its optimizer as a run makes
// it (whole: one process without buckets, or data parallel with them; ZeRO-1; ZeRO-2), a backward pass
// and a KV cache, and sums numel × element size of every tensor by category: weights, the
// weights' gradients plus ZeRO's gradient shard, masters, moments, buckets or gather buffer, K and
// V. Each sum must equal memplan.Predict's for that rank, byte for byte, before and after a step.

const memWorkerEnv = "MTGRPO_GRPO_MEMORY_WORKER" // set: this process is a rank of TestMemoryModelGloo

func TestMemoryModelGloo(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 7 processes")
	}
	ranks.RequireGloo(t)
	for _, world := range []int{1, 2, 4} {
		runMemoryRanks(t, "TestMemoryWorker", memWorkerEnv, "memory worker", world)
	}
}

// TestMemoryWorker is one rank of TestMemoryModelGloo (it skips unless started by it).
func TestMemoryWorker(t *testing.T) {
	memoryRank(t, memWorkerEnv, "memory worker", memplan.StageZeRO3, checkRankMemory)
}

// runMemoryRanks runs the test worker in world processes (env set) and checks that each rank
// printed "what rank R ok".
func runMemoryRanks(t *testing.T, worker, env, what string, world int) {
	t.Helper()
	errs, outs := ranks.Run(t, worker, world, 60*time.Second, env+"=1")
	for r, err := range errs {
		if err != nil || !strings.Contains(outs[r], fmt.Sprintf("%s rank %d ok", what, r)) {
			t.Errorf("world %d, rank %d: %v\n%s", world, r, err, outs[r])
		}
	}
}

// memoryRank is the body of a memory test's rank (it skips unless env is set): it joins the
// process group (none in a world of one, as `mtgrpo train` runs), runs check for each dtype and
// every stage up to last, and prints "what rank R ok" when every check passed.
func memoryRank(t *testing.T, env, what string, last memplan.Stage,
	check func(t *testing.T, pg *torch.ProcessGroup, world, rank int, dt torch.DType, stage memplan.Stage)) {
	if os.Getenv(env) == "" {
		t.Skip("a rank of a Gloo memory test")
	}
	cfg, err := torch.DistConfigFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Timeout = 30 * time.Second
	var pg *torch.ProcessGroup
	if cfg.WorldSize > 1 {
		if pg, err = torch.NewProcessGroup(cfg); err != nil {
			t.Fatal(err)
		}
	}
	err = torch.Run(func() error {
		for _, dt := range []torch.DType{torch.Float32, torch.BFloat16} {
			for st := memplan.StageDP; st <= last; st++ {
				check(t, pg, cfg.WorldSize, cfg.Rank, dt, st)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !t.Failed() {
		fmt.Printf("%s rank %d ok\n", what, cfg.Rank)
	}
}

// rankBytes is what a rank holds, by memplan's categories.
type rankBytes struct{ Weights, Grads, Masters, Moments, Comm, KVCache int64 }

func tensorBytes(ts ...*torch.Tensor) int64 {
	var n int64
	for _, t := range ts {
		if t.Valid() {
			n += t.Numel() * int64(t.DType().Size())
		}
	}
	return n
}

// checkRankMemory measures one configuration on this rank and compares it with the prediction.
func checkRankMemory(t *testing.T, pg *torch.ProcessGroup, world, rank int, dt torch.DType, stage memplan.Stage) {
	const bucket, slots, maxLen = 4 << 10, 3, 16
	name := fmt.Sprintf("world %d rank %d %s stage %d", world, rank, dt, stage)
	c, g, err := model.PresetConfig("qwen3", "tiny", &model.Vocab{Size: 40, BOS: 1, EOS: []int{2}})
	if err != nil {
		t.Fatal(err)
	}
	// Hidden 66 (head_dim stays 16) makes P ≡ 2 (mod 4): at world 4 the last shard is short and
	// padded.
	c.HiddenSize = 66
	m, err := model.New(c, g, model.Options{DType: dt.String()}, 5)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
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
	run := memplan.Run{Model: shape, DTypeBytes: int64(dt.Size()), World: world, BucketBytes: bucket,
		Slots: slots, MaxLen: maxLen}
	if dt == torch.BFloat16 {
		run.WireBytes = 4 // Gloo sums bfloat16 buckets as float32
	}
	run.Stage = stage
	p, err := memplan.Predict(run, rank)
	if err != nil {
		t.Fatal(err)
	}
	want := rankBytes{p.Weights, p.Grads, p.Masters, p.Moments, p.Comm, p.KVCache}
	s := torch.NewScope()
	defer s.Close()
	s.With(func() {
		switch {
		case stage == memplan.StageZeRO2 && pg != nil:
			checkInFlight(t, name, m, opt, kv, want, p)
			return
		case stage == memplan.StageZeRO3 && pg != nil:
			checkGathered(t, name, m, opt.e.(*zero), kv, want, p)
			return
		}
		step(t, opt, func(model.ForwardOptions) {
			for _, w := range m.ParameterTensors() {
				w.Square().Sum(false).Backward()
			}
			got := measureRank(m, opt, kv)
			t.Logf("%s, after backward: holds %+v", name, got)
			if got != want {
				t.Errorf("%s, after backward: holds %+v, predicted %+v", name, got, want)
			}
		})
		if pg != nil {
			want.Grads -= p.Weights // the step drops the weights' gradients (set to none); the rest stays
		} // one process keeps them in its persistent buffers (zeroed)
		if got := measureRank(m, opt, kv); got != want {
			t.Errorf("%s, after the step: holds %+v, want %+v", name, got, want)
		}
	})
}

// checkInFlight measures ZeRO-2 at its peak (run without gradient checkpointing): a backward
// pass through every unit but the last, the final norm's, which the head's backward has already
// reduced; then after the reductions and the step, where only the shards remain.
func checkInFlight(t *testing.T, name string, m *model.Model, opt *Optimizer, kv *model.KVCache, want rankBytes,
	p memplan.Plan) {
	step(t, opt, func(fo model.ForwardOptions) {
		last := m.NumUnits() - 1
		for i, w := range m.ParameterTensors() {
			if m.Units()[i] != last {
				w.Square().Sum(false).Backward()
			}
		}
		fo.GradsReady(last)
		got := measureRank(m, opt, kv)
		t.Logf("%s, after backward: holds %+v", name, got)
		if got != want {
			t.Errorf("%s, after backward: holds %+v, predicted %+v", name, got, want)
		}
		for u := last - 1; u >= 0; u-- {
			fo.GradsReady(u)
		}
	})
	want.Grads -= p.GradsInFlight
	if got := measureRank(m, opt, kv); got != want {
		t.Errorf("%s, after the step: holds %+v, want %+v", name, got, want)
	}
}

// checkGathered measures ZeRO-3 with the weights sharded (the update), with the units a pass holds
// at once gathered (the tied embedding and a layer), and whole again (generation). The tiny
// model's head is tied.
func checkGathered(t *testing.T, name string, m *model.Model, z *zero, kv *model.KVCache, want rankBytes,
	p memplan.Plan) {
	if !m.Config.TieWordEmbeddings {
		t.Fatalf("%s: the tiny model's head is not tied", name)
	}
	want.Grads -= p.GradsInFlight // no pass under way
	z.shard()
	if got := measureRank(m, z, kv); got != want {
		t.Errorf("%s, sharded: holds %+v, predicted %+v", name, got, want)
	}
	z.Gather(0)
	z.Gather(1)
	got := measureRank(m, z, kv)
	t.Logf("%s, embedding and a layer gathered: holds %+v", name, got)
	if w := want; got.Weights != p.Gathered || got.Grads != w.Grads {
		t.Errorf("%s, embedding and a layer gathered: holds %+v, predicted weights %d", name, got, p.Gathered)
	}
	z.Release(1)
	z.Release(0)
	z.unshard()
	want.Weights = p.GatheredForRollout
	if got := measureRank(m, z, kv); got != want {
		t.Errorf("%s, whole again: holds %+v, predicted %+v", name, got, want)
	}
}

// step makes one pass (backward: its backward pass, given the pass's options) and a step.
func step(t *testing.T, opt *Optimizer, backward func(model.ForwardOptions)) {
	_, err := opt.Passes(1, func(_ int, fo model.ForwardOptions) error {
		backward(fo)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if stepped, err := opt.Step(1e-3); !stepped || err != nil {
		t.Fatalf("stepped %v, %v", stepped, err)
	}
}

// measureRank sums the tensor bytes of the model, its gradients, the optimizer's state and the KV
// cache by category.
func measureRank(m *model.Model, opt any, kv *model.KVCache) rankBytes {
	var b rankBytes
	for _, w := range m.ParameterTensors() {
		b.Weights += tensorBytes(w)
		b.Grads += tensorBytes(w.Grad())
	}
	b.KVCache = tensorBytes(kv.K...) + tensorBytes(kv.V...)
	var st map[string]*torch.Tensor
	switch o := opt.(type) {
	case *Optimizer:
		return measureRank(m, o.e, kv)
	case *whole:
		st = o.opt.State()
		if o.buckets != nil {
			b.Comm = o.buckets.Bytes()
		}
	case *zero:
		st = o.opt.State()
		b.Masters, b.Grads, b.Comm = tensorBytes(o.master), b.Grads+tensorBytes(o.grad), tensorBytes(o.buf, o.wire, o.ahead, o.aheadIn)
	}
	for k, t := range st {
		switch {
		case strings.HasSuffix(k, sufExpAvg), strings.HasSuffix(k, sufExpAvgSq):
			b.Moments += tensorBytes(t)
		case strings.HasSuffix(k, sufMasterSt):
			b.Masters += tensorBytes(t)
		}
	}
	return b
}
