package model

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mtgrpo/mtgrpo/torch"
)

// Figures and commands are in docs/bench/model.md.

// benchModel is the tiny preset (the demo's model: qwen3, d 64, 4 layers) over a tiny-tokenizer-
// sized vocabulary of 563, possibly deeper (layers > 0).
func benchModel(tb testing.TB, layers int) *Model {
	tb.Helper()
	c, g, err := PresetConfig("qwen3", "tiny", &Vocab{Size: 563, BOS: 556, EOS: []int{558, 556}})
	if err != nil {
		tb.Fatal(err)
	}
	if layers > 0 {
		c.NumHiddenLayers = layers
		c.MaxWindowLayers = layers
	}
	m, err := New(c, g, Options{Device: testDevice}, 1)
	if err != nil {
		tb.Fatal(err)
	}
	m.SetTrainable(true)
	return m
}

// trainStep is one forward + backward on b with a policy-gradient-shaped loss.
func trainStep(tb testing.TB, m *Model, b *Batch, checkpoint bool) {
	s := torch.NewScope()
	defer s.Close()
	torch.ZeroGrad(m.ParameterTensors())
	p, err := m.Train(b, ForwardOptions{Entropy: true, Checkpoint: checkpoint})
	if err != nil {
		tb.Fatal(err)
	}
	loss := p.LogProbs.Sum(false).Neg().Add(p.Entropy.Sum(false).MulScalar(0.01))
	if err := p.Backward(loss); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkTrainStep: forward + backward tokens/s on the tiny model, 8 sequences of 128 tokens,
// with and without layer-wise gradient checkpointing; then 8 sequences of mixed lengths (32 to 256,
// 1,152 tokens) right-padded (mask) and packed (per-sequence segments).
func BenchmarkTrainStep(b *testing.B) {
	equal := randomSeqs(1, 563, 128, 128, 128, 128, 128, 128, 128, 128)
	mixed := randomSeqs(1, 563, 32, 256, 64, 224, 96, 192, 128, 160)
	for _, bc := range []struct {
		name       string
		seqs       [][]int32
		packed     bool
		checkpoint bool
	}{
		{"plain", equal, false, false},
		{"checkpoint", equal, false, true},
		{"mixed-padded", mixed, false, false},
		{"mixed-packed", mixed, true, false},
	} {
		b.Run(bc.name, func(b *testing.B) {
			err := torch.Run(func() error {
				m := benchModel(b, 0)
				defer m.Close()
				batch, _ := NewBatch(bc.seqs, bc.packed)
				trainStep(b, m, batch, bc.checkpoint) // warm-up
				b.ResetTimer()
				start := time.Now()
				for range b.N {
					trainStep(b, m, batch, bc.checkpoint)
				}
				b.ReportMetric(float64(b.N*batch.Tokens())/time.Since(start).Seconds(), "tokens/s")
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		})
	}
}

// BenchmarkDecode: decode steps/s of the tiny model, 16 slots after 64-token prompts.
func BenchmarkDecode(b *testing.B) {
	err := torch.Run(func() error {
		m := benchModel(b, 0)
		defer m.Close()
		slots := make([]int, 16)
		prompts := randomSeqs(2, 563, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64)
		for i := range slots {
			slots[i] = i
		}
		c, err := m.NewKVCache(16, 64+b.N+1)
		if err != nil {
			return err
		}
		defer c.Close()
		if _, err := m.Prefill(c, slots, prompts); err != nil {
			return err
		}
		next := make([]int32, 16)
		b.ResetTimer()
		for range b.N {
			s := torch.NewScope()
			if _, err := m.Decode(c, slots, next); err != nil {
				return err
			}
			s.Close()
		}
		b.ReportMetric(float64(b.N*16)/b.Elapsed().Seconds(), "tokens/s")
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

// memProbeEnv selects the probe mode in a child process of TestTrainPeakMemory.
const memProbeEnv = "MTGRPO_MODEL_MEMPROBE"

// TestTrainPeakMemory measures how much layer-wise checkpointing lowers the peak memory of a
// training step on CPU: each mode runs in a fresh child process (so the allocator's cached memory
// of one mode cannot hide the other's), which resets the kernel's high-water mark (VmHWM, through
// /proc/self/clear_refs) after building the model and reports the peak RSS growth over one
// forward + backward of 4 × 256 tokens through 8 layers.
func TestTrainPeakMemory(t *testing.T) {
	if mode := os.Getenv(memProbeEnv); mode != "" {
		memProbe(t, mode == "checkpoint")
		return
	}
	if testing.Short() {
		t.Skip("runs two child processes")
	}
	if _, err := os.Stat("/proc/self/clear_refs"); err != nil || testDevice != "cpu" {
		t.Skip("needs Linux /proc and the CPU")
	}
	peak := map[string]float64{}
	for _, mode := range []string{"plain", "checkpoint"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestTrainPeakMemory$", "-test.v")
		cmd.Env = append(os.Environ(), memProbeEnv+"="+mode)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s probe: %v\n%s", mode, err, out)
		}
		sc := bufio.NewScanner(strings.NewReader(string(out)))
		for sc.Scan() {
			if f := strings.Fields(sc.Text()); len(f) == 3 && f[0] == "peak-rss-growth-mb" {
				peak[mode], _ = strconv.ParseFloat(f[2], 64)
			}
		}
		if peak[mode] == 0 {
			t.Fatalf("%s probe reported nothing:\n%s", mode, out)
		}
	}
	t.Logf("peak RSS growth over one train step: plain %.1f MB, checkpoint %.1f MB", peak["plain"], peak["checkpoint"])
	if peak["checkpoint"] > 0.8*peak["plain"] {
		t.Errorf("checkpointing saved too little: %.1f MB vs %.1f MB plain", peak["checkpoint"], peak["plain"])
	}
}

func memProbe(t *testing.T, checkpoint bool) {
	onTorch(t, func() error {
		torch.SetNumThreads(1)
		m := benchModel(t, 8)
		defer m.Close()
		b, _ := NewBatch(randomSeqs(3, 563, 256, 256, 256, 256), false)
		if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
			return err
		}
		base := procStatusKB(t, "VmRSS")
		trainStep(t, m, b, checkpoint)
		fmt.Printf("peak-rss-growth-mb %v %.1f\n", checkpoint, float64(procStatusKB(t, "VmHWM")-base)/1024)
		return nil
	})
}

// procStatusKB reads a "Name: N kB" line of /proc/self/status.
func procStatusKB(t *testing.T, name string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == name+":" {
			v, _ := strconv.ParseInt(f[1], 10, 64)
			return v
		}
	}
	t.Fatalf("no %s in /proc/self/status", name)
	return 0
}
