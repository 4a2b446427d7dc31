package shard

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mtgrpo/mtgrpo/grpo/memplan"
	"github.com/mtgrpo/mtgrpo/internal/ranks"
	"github.com/mtgrpo/mtgrpo/model"
	"github.com/mtgrpo/mtgrpo/torch"
)

// ZeRO-2 and ZeRO-3 end to end, over Gloo. A step is zeroMicros passes of the tiny
// model with gradient checkpointing (so each layer's gradients are reduce-scattered as its
// backward ends, and under ZeRO-3 each layer's weights gathered for its forward and backward),
// dealt round-robin to the ranks: at world 4 rank 0 makes 2 passes and the others 1 real and 1
// idle; at world 2, 3 against 2 and 1 idle. Then clipping (at a norm the gradients exceed) and a
// step. Each stage's run takes step 0 on 4 ranks, checkpoints, resumes on 2 ranks for step 1,
// checkpoints, and resumes in one process without sharding for step 2: after each step the
// weights equal those of one process taking the same steps with the whole AdamW, within zeroTol
// (the ranks add the same terms in another order). A rank that dies makes the other's gather
// fail within a bound: the step's gather of the updated shards (ZeRO-2), a layer's gather in the
// forward pass (ZeRO-3).

const (
	zeroWorkerEnv = "MTGRPO_GRPO_ZERO_WORKER" // set: this process is a rank of TestZeRO; its phase
	zeroStageEnv  = "MTGRPO_GRPO_ZERO_STAGE"
	zeroDirEnv    = "MTGRPO_GRPO_ZERO_DIR"
	zeroMicros    = 5
	zeroClip      = 0.05
)

func TestZeRO(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 16 processes")
	}
	ranks.RequireGloo(t)
	for _, stage := range []memplan.Stage{memplan.StageZeRO2, memplan.StageZeRO3} {
		t.Run(fmt.Sprintf("stage%d", stage), func(t *testing.T) { checkZeRO(t, stage) })
	}
}

func checkZeRO(t *testing.T, stage memplan.Stage) {
	dir := t.TempDir()
	st := zeroStageEnv + "=" + fmt.Sprint(int(stage))
	var ref []map[string][]float32 // the single process's weights after each step
	onSingle(t, func(m *model.Model, opt *Optimizer) {
		for k := range 3 {
			zeroStep(t, m, opt, 1, 0, k)
			ref = append(ref, weights(m))
		}
	})
	for _, phase := range []string{"4", "2"} {
		world := map[string]int{"4": 4, "2": 2}[phase]
		errs, outs := ranks.Run(t, "TestZeROWorker", world, 2*time.Minute, zeroWorkerEnv+"="+phase, zeroDirEnv+"="+dir, st)
		for r, err := range errs {
			if err != nil || !strings.Contains(outs[r], fmt.Sprintf("zero worker rank %d ok", r)) {
				t.Errorf("world %d, rank %d: %v\n%s", world, r, err, outs[r])
			}
		}
		if t.Failed() {
			return
		}
	}
	onSingle(t, func(m *model.Model, opt *Optimizer) {
		zeroLoad(t, m, opt, dir, "after1", true)
		zeroSave(t, m, opt, dir, "reloaded1", 0) // world 2's state at world 1, bit for bit
		sameFiles(t, filepath.Join(dir, "after1-state.safetensors"), filepath.Join(dir, "reloaded1-state.safetensors"))
		for k, name := range []string{"after0", "after1"} {
			zeroLoad(t, m, opt, dir, name, k == 1) // the state to go on from after1
			d, where := maxDiff(ref[k], weights(m))
			t.Logf("step %d at world %d: largest difference to one process %.3g at %s", k, 4/(k+1), d, where)
			if d > zeroTol {
				t.Errorf("step %d at world %d: weights differ from one process by %g at %s", k, 4/(k+1), d, where)
			}
		}
		zeroStep(t, m, opt, 1, 0, 2)
		d, where := maxDiff(ref[2], weights(m))
		t.Logf("step 2, resumed at world 1: largest difference to one process %.3g at %s", d, where)
		if d > zeroTol {
			t.Errorf("step 2, resumed at world 1: weights differ from one process by %g at %s", d, where)
		}
	})
	errs, outs := ranks.Run(t, "TestZeROWorker", 2, 2*time.Minute, zeroWorkerEnv+"=die", zeroDirEnv+"="+dir, st)
	if errs[0] != nil || !strings.Contains(outs[0], "zero worker rank 0 ok") {
		t.Errorf("die: rank 0: %v\n%s", errs[0], outs[0])
	}
	if m := failureLine(outs[0]); m != "" {
		t.Logf("die: %s", m)
	}
}

// TestZeROWorker is one rank of TestZeRO (it skips unless started by it).
func TestZeROWorker(t *testing.T) {
	phase := os.Getenv(zeroWorkerEnv)
	if phase == "" {
		t.Skip("a rank of TestZeRO")
	}
	stage, err := strconv.Atoi(os.Getenv(zeroStageEnv))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := torch.DistConfigFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Timeout = 10 * time.Second
	pg, err := torch.NewProcessGroup(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dir := os.Getenv(zeroDirEnv)
	err = torch.Run(func() error {
		m := zeroModel(t)
		defer m.Close()
		s := zeroSettings
		s.Stage, s.BucketBytes = memplan.Stage(stage), 4<<10
		opt, err := New(m.Parameters(), UnitsOf(m), pg, s)
		if err != nil {
			return err
		}
		defer opt.Close()
		switch phase {
		case "4":
			zeroStep(t, m, opt, pg.Size(), pg.Rank(), 0)
			zeroSave(t, m, opt, dir, "after0", pg.Rank())
		case "2":
			zeroLoad(t, m, opt, dir, "after0", true)
			// The checkpoint moves between world sizes bit for bit: world 4's state, loaded at
			// world 2 and saved again, is the same file.
			zeroSave(t, m, opt, dir, "reloaded", pg.Rank())
			if pg.Rank() == 0 {
				sameFiles(t, filepath.Join(dir, "after0-state.safetensors"), filepath.Join(dir, "reloaded-state.safetensors"))
			}
			zeroStep(t, m, opt, pg.Size(), pg.Rank(), 1)
			zeroSave(t, m, opt, dir, "after1", pg.Rank())
		case "die":
			zeroDie(t, m, opt, pg)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !t.Failed() {
		fmt.Printf("zero worker rank %d ok\n", pg.Rank())
	}
}

// zeroDie: ZeRO-2: both ranks make their passes and clip; rank 1 exits before the step, whose
// gather of the updated shards must fail on rank 0 with an error within 20 s (Gloo sees the
// connection close). ZeRO-3: rank 1 exits in its pass, and rank 0's first gather fails.
func zeroDie(t *testing.T, m *model.Model, opt *Optimizer, pg *torch.ProcessGroup) {
	exit := func() {
		fmt.Println("rank 1 exits")
		os.Exit(3)
	}
	if opt.e.options().Weights != nil {
		err := opt.Update(func() error {
			start := time.Now()
			_, err := opt.Passes(1, func(_ int, fo model.ForwardOptions) error {
				if pg.Rank() == 1 {
					exit()
				}
				return zeroPass(m, fo, []int32{3, 4, 5, 6})
			})
			took := time.Since(start)
			fmt.Printf("rank 0 failed after %v: %v\n", took.Round(time.Millisecond), err)
			if err == nil || took > 20*time.Second || !strings.Contains(err.Error(), "AllGatherInto") {
				t.Errorf("the pass returned %v after %v, want a gather's error within 20 s", err, took)
			}
			return nil
		})
		if err == nil {
			t.Errorf("the update gathered the weights after rank 1 left")
		}
		return
	}
	zeroPasses(t, m, opt, pg.Size(), pg.Rank(), 0)
	if pg.Rank() == 1 {
		exit()
	}
	start := time.Now()
	_, err := opt.Step(1e-3)
	took := time.Since(start)
	fmt.Printf("rank 0 failed after %v: %v\n", took.Round(time.Millisecond), err)
	if err == nil || took > 20*time.Second || !strings.Contains(err.Error(), "updating the weights") {
		t.Errorf("the step returned %v after %v, want an error naming it within 20 s", err, took)
	}
}

func zeroModel(t *testing.T) *model.Model {
	c, g, err := model.PresetConfig("qwen3", "tiny", &model.Vocab{Size: 40, BOS: 1, EOS: []int{2}})
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.New(c, g, model.Options{DType: "float32"}, 9)
	if err != nil {
		t.Fatal(err)
	}
	m.SetTrainable(true)
	return m
}

// zeroPasses makes this rank's passes of step k (micro-batch i goes to rank i mod world), then
// the idle ones the other ranks' count asks for, and returns the gradient norm.
func zeroPasses(t *testing.T, m *model.Model, opt *Optimizer, world, rank, k int) float64 {
	rng := rand.New(rand.NewPCG(uint64(k), 17))
	var mine [][]int32
	for i := range zeroMicros {
		ids := make([]int32, 6+i)
		for j := range ids {
			ids[j] = int32(3 + rng.IntN(37))
		}
		if i%world == rank {
			mine = append(mine, ids)
		}
	}
	norm, err := opt.Passes(len(mine), func(i int, fo model.ForwardOptions) error {
		if err := zeroPass(m, fo, mine[i]); err != nil {
			return fmt.Errorf("step %d, pass %d: %w", k, i, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return norm
}

// zeroPass backpropagates −0.01 × the sum of the log-probs of ids.
func zeroPass(m *model.Model, fo model.ForwardOptions, ids []int32) error {
	return torch.Do(func() error {
		s := torch.NewScope()
		defer s.Close()
		b, err := model.NewBatch([][]int32{ids}, true)
		if err != nil {
			return err
		}
		fo.Checkpoint = true
		p, err := m.Train(b, fo)
		if err != nil {
			return err
		}
		return p.Backward(p.LogProbs.Sum(false).MulScalar(-0.01))
	})
}

// zeroStep is step k inside an update: the passes (clipped), then the optimizer's step.
func zeroStep(t *testing.T, m *model.Model, opt *Optimizer, world, rank, k int) {
	err := opt.Update(func() error {
		if norm := zeroPasses(t, m, opt, world, rank, k); norm <= zeroClip {
			t.Errorf("step %d: gradient norm %g: the test wants clipping (above %g)", k, norm, zeroClip)
		}
		// ZeRO-3: every gather of a pass but its first was prefetched while the unit before
		// computed.
		if z, ok := opt.e.(*zero); ok && z.stage == memplan.StageZeRO3 {
			if per := len(z.order) - 1; z.prefetched == 0 || z.prefetched%per != 0 {
				t.Errorf("step %d: %d gathers served by a prefetch, want a positive multiple of %d (a pass's gathers but its first)",
					k, z.prefetched, per)
			}
			z.prefetched = 0
		}
		if stepped, err := opt.Step(1e-3); !stepped || err != nil {
			t.Errorf("step %d: stepped %v, %v", k, stepped, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// zeroSave writes the weights and the optimizer's whole state (a collective) as dir/name-*.
func zeroSave(t *testing.T, m *model.Model, opt *Optimizer, dir, name string, rank int) {
	s := torch.NewScope()
	defer s.Close()
	st := opt.State()
	if rank != 0 {
		return
	}
	w := map[string]*torch.Tensor{}
	for _, p := range m.Parameters() {
		w[p.Name] = p.Tensor
	}
	for file, ts := range map[string]map[string]*torch.Tensor{"weights": w, "state": st} {
		if err := torch.SaveSafetensors(filepath.Join(dir, name+"-"+file+".safetensors"), ts, nil); err != nil {
			t.Fatal(err)
		}
	}
}

// zeroSettings are AdamW's defaults (the trainer's) and a clipping bound the gradients exceed.
var zeroSettings = Settings{Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.01, MaxGradNorm: zeroClip}

// onSingle runs fn on the torch thread with zeroModel and one process's optimizer over it.
func onSingle(t *testing.T, fn func(m *model.Model, opt *Optimizer)) {
	onTorch(t, func() {
		m := zeroModel(t)
		defer m.Close()
		opt, err := New(m.Parameters(), UnitsOf(m), nil, zeroSettings)
		if err != nil {
			t.Fatal(err)
		}
		defer opt.Close()
		fn(m, opt)
	})
}

// sameFiles fails unless files a and b hold the same bytes.
func sameFiles(t *testing.T, a, b string) {
	t.Helper()
	x, err := os.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	y, err := os.ReadFile(b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(x, y) {
		t.Errorf("%s and %s differ (%d and %d bytes): the state did not move between world sizes bit for bit", a, b, len(x), len(y))
	}
}

// zeroLoad restores the weights and, with state, the optimizer from dir/name-*.
func zeroLoad(t *testing.T, m *model.Model, opt *Optimizer, dir, name string, state bool) {
	s := torch.NewScope()
	defer s.Close()
	w, err := loadState(filepath.Join(dir, name+"-weights.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	torch.NoGrad(func() {
		for _, p := range m.Parameters() {
			p.Tensor.Copy_(w[p.Name])
		}
	})
	if !state {
		return
	}
	st, err := loadState(filepath.Join(dir, name+"-state.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	if err := opt.LoadState(st); err != nil {
		t.Fatal(err)
	}
}
