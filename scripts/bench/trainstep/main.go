// Command trainstep is the Go side of the training-update benchmark (scripts/bench/train_step.sh,
// figures in docs/bench/grpo.md): it times mtgrpo's update — model.Train, a cross-entropy loss on the
// log-probs, Pass.Backward and AdamW.Step — on a fixed batch, and reports one JSON line with the
// wall-clock and CPU time of every step (and of its phases), the loss and the peak memory growth
// of the process. train_step.py does the same update in plain PyTorch on the same weights and ids.
//
//	trainstep -init DIR          writes the benchmark model (float32) and the batch's ids to DIR
//	trainstep -model DIR ...     times the update on them, one step per "step" line on stdin
//
// -preset NAME -dtype bfloat16 with -init writes a model of a real preset's shape instead (e.g.
// qwen2.5-0.5b, in bf16: scripts/gpu/run.sh), and -device cuda times the update on a GPU.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mtgrpo/mtgrpo/model"
	"github.com/mtgrpo/mtgrpo/torch"
)

type options struct {
	initDir, modelDir  string
	name               string
	batch, seq         int
	lens               string
	threads            int
	checkpoint, packed bool
	entropy            bool
	headBudget         int64
	dtype              string
	lr                 float64
	device, preset     string
	vocab              int
}

func main() {
	var o options
	flag.StringVar(&o.initDir, "init", "", "write the benchmark model and ids to this directory and exit")
	flag.StringVar(&o.modelDir, "model", "", "model directory written by -init")
	flag.StringVar(&o.name, "name", "go", "the side's name in the report")
	flag.IntVar(&o.batch, "batch", 8, "sequences per step")
	flag.IntVar(&o.seq, "seq", 256, "tokens per sequence")
	flag.StringVar(&o.lens, "lens", "", "with -init: comma-separated sequence lengths instead of -batch × -seq")
	flag.IntVar(&o.threads, "threads", 1, "libtorch intra-op threads (OPENBLAS_NUM_THREADS is read from the environment)")
	flag.BoolVar(&o.checkpoint, "checkpoint", false, "layer-wise gradient checkpointing")
	flag.BoolVar(&o.packed, "packed", false, "pack the sequences into one row")
	flag.Int64Var(&o.headBudget, "head-budget", 0, "ForwardOptions.HeadMemoryBudget in bytes (0: the default, < 0: always recompute the head)")
	flag.StringVar(&o.dtype, "dtype", "float32", "model dtype")
	flag.Float64Var(&o.lr, "lr", 1e-5, "AdamW learning rate")
	flag.StringVar(&o.device, "device", "cpu", "cpu, cuda or cuda:N")
	flag.StringVar(&o.preset, "preset", "", "with -init: a model preset's shape (qwen2 architecture) instead of the 39M benchmark model")
	flag.IntVar(&o.vocab, "vocab", 0, "with -init: this vocabulary size instead of the model's (e.g. 151936 on the tiny preset)")
	flag.BoolVar(&o.entropy, "entropy", false, "the passes also compute the entropies, as the trainer's do (the loss uses the log-probs only)")
	blasCore := flag.Bool("blas-core", false, "print the OPENBLAS_CORETYPE this process runs with (empty: OpenBLAS' own choice) and exit, for the PyTorch side")
	flag.Parse()
	if *blasCore {
		fmt.Println(os.Getenv(torch.BLASCoreVar))
		return
	}
	err := torch.Run(func() error {
		if o.initDir != "" {
			return writeInit(o)
		}
		return bench(o)
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "trainstep:", err)
		os.Exit(1)
	}
}

// benchConfig is the benchmark's model: a 39M-parameter Qwen2 shape (hidden 512, 8 layers, 8 query
// heads over 2 key/value heads of 64, intermediate 1408, vocabulary 32,000, tied head). The head
// is 16.4M of the parameters, so recomputing it in backward is about 13 % more work.
func benchConfig(preset string) (*model.Config, *model.GenerationConfig, error) {
	vocab := &model.Vocab{Size: 32000, BOS: 1, EOS: []int{2}}
	switch preset {
	case "tiny": // the tiny preset's own vocabulary is its tokenizer's: take the benchmark's
		return model.PresetConfig("qwen2", preset, vocab)
	case "":
	default:
		return model.PresetConfig("qwen2", preset, nil)
	}
	c, g, err := model.PresetConfig("qwen2", "tiny", vocab)
	if err != nil {
		return nil, nil, err
	}
	c.HiddenSize, c.IntermediateSize, c.NumHiddenLayers = 512, 1408, 8
	c.NumAttentionHeads, c.NumKeyValueHeads, c.MaxWindowLayers = 8, 2, 8
	return c, g, c.Validate()
}

// writeInit saves a seeded model and the batch's token ids (ids.json: one list per sequence).
func writeInit(o options) error {
	c, g, err := benchConfig(o.preset)
	if err != nil {
		return err
	}
	if o.vocab > 0 {
		c.VocabSize = o.vocab
		if err := c.Validate(); err != nil {
			return err
		}
	}
	m, err := model.New(c, g, model.Options{Device: "cpu"}, 1)
	if err != nil {
		return err
	}
	defer m.Close()
	if err := m.Export(o.initDir, model.ExportOptions{DType: o.dtype}); err != nil {
		return err
	}
	lens, err := seqLens(o)
	if err != nil {
		return err
	}
	r := rand.New(rand.NewPCG(2, 3))
	ids := make([][]int32, len(lens))
	for i, n := range lens {
		for range n {
			ids[i] = append(ids[i], int32(r.IntN(c.VocabSize)))
		}
	}
	b, _ := json.Marshal(ids)
	fmt.Printf("wrote %s: %d parameters, sequences of %v tokens\n", o.initDir, m.NumParameters(), lens)
	return os.WriteFile(filepath.Join(o.initDir, "ids.json"), b, 0o644)
}

// Both sides read commands from stdin, one a line, and answer each with one JSON line, so that
// scripts/bench/interleave.py can alternate them step by step (a shared machine's load then falls
// on both alike):
//
//	step   one update; answers {"wall_s", "cpu_s", "forward_s", "backward_s", "optimizer_s", "loss",
//	       "host_syncs"} and on CUDA the allocator's "cuda_allocs", "cuda_mallocs", "cuda_alloc_retries";
//	       on the CPU the tensors' own bytes (torch.TrackCPUMemory, counted from before the model
//	       is loaded): "tensor_peak_{forward,backward,optimizer}_mb", the most bytes live tensors
//	       held in each phase, "tensor_after_forward_mb" what the forward pass left for the
//	       backward, and "cpu_allocs" the blocks the step allocated
//	done   answers {"peak_growth_mb"} and exits
//
// After loading the model they reset the kernel's peak-RSS mark and print {"ready": true, "side",
// "threads", "openblas_threads", "tokens", "config", "base_rss_mb"}; peak_growth_mb is VmHWM minus
// that RSS: the optimizer state, the gradients and the steps' activations and temporaries (PyTorch
// makes its optimizer state in the first step, mtgrpo when the optimizer is made: both count). On
// the CPU the ready line also has "tensor_weights_mb" and "tensor_optimizer_mb", the bytes of the
// loaded weights and of AdamW's state.
// cpu_s is the process's user + system time over the step: with one intra-op and one BLAS thread it
// depends little on what else the machine runs.

func bench(o options) error {
	torch.SetNumThreads(o.threads)
	if o.device == "cpu" {
		torch.TrackCPUMemory()
	}
	m, err := model.Load(o.modelDir, model.Options{Device: o.device, DType: o.dtype})
	if err != nil {
		return err
	}
	defer m.Close()
	m.SetTrainable(true)
	seqs, err := readIDs(filepath.Join(o.modelDir, "ids.json"))
	if err != nil {
		return err
	}
	b, err := model.NewBatch(seqs, o.packed)
	if err != nil {
		return err
	}
	base, err := resetPeak()
	if err != nil {
		return err
	}
	var cudaBase int64
	if m.Device.IsCUDA() {
		torch.CUDAResetPeak(m.Device)
		cudaBase = torch.CUDAMemoryStats(m.Device).Allocated
	}
	weights := torch.CPUMemoryStats().Live
	opt, err := torch.NewAdamW(m.Parameters(), torch.AdamWConfig{LR: o.lr, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.01})
	if err != nil {
		return err
	}
	defer opt.Close()
	fo := model.ForwardOptions{Checkpoint: o.checkpoint, HeadMemoryBudget: o.headBudget, Entropy: o.entropy}
	out := json.NewEncoder(os.Stdout)
	intra, blas := torch.Threads() // as the pools are, whatever the flags and environment asked
	ready := map[string]any{"ready": true, "side": o.name, "threads": intra,
		"openblas_threads": strconv.Itoa(blas), "tokens": b.Tokens(), "base_rss_mb": float64(base) / 1024,
		"config": fmt.Sprintf("%s %s checkpoint=%v packed=%v head_budget=%d entropy=%v", o.dtype, m.Device, o.checkpoint,
			o.packed, o.headBudget, o.entropy)}
	if !m.Device.IsCUDA() {
		ready["tensor_weights_mb"], ready["tensor_optimizer_mb"] = mb(weights), mb(torch.CPUMemoryStats().Live-weights)
	}
	if err := out.Encode(ready); err != nil {
		return err
	}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		switch cmd := strings.TrimSpace(in.Text()); cmd {
		case "step":
			c0, t0, s0 := cpuSeconds(), time.Now(), torch.HostSyncs()
			var a0 torch.CUDAAllocCounts
			if m.Device.IsCUDA() {
				a0 = torch.CUDAAllocCountsOf(m.Device)
			}
			loss, ph, mem, err := step(m, b, opt, fo, m.Device)
			if err != nil {
				return err
			}
			rep := map[string]any{"wall_s": time.Since(t0).Seconds(), "cpu_s": cpuSeconds() - c0,
				"forward_s": ph[0], "backward_s": ph[1], "optimizer_s": ph[2], "loss": loss,
				"host_syncs": torch.HostSyncs() - s0}
			if !m.Device.IsCUDA() {
				for k, v := range mem {
					rep[k] = v
				}
			}
			if m.Device.IsCUDA() { // the caching allocator's work in this step
				a := torch.CUDAAllocCountsOf(m.Device).Sub(a0)
				rep["cuda_allocs"], rep["cuda_mallocs"], rep["cuda_alloc_retries"] = a.Allocs, a.Segments, a.Retries
			}
			if err = out.Encode(rep); err != nil {
				return err
			}
		case "done":
			peak, err := statusKB("VmHWM")
			if err != nil {
				return err
			}
			res := map[string]any{"peak_growth_mb": float64(peak-base) / 1024}
			if m.Device.IsCUDA() {
				res["peak_cuda_mb"] = float64(torch.CUDAMemoryStats(m.Device).Peak-cudaBase) / (1 << 20)
			}
			return out.Encode(res)
		default:
			return fmt.Errorf("unknown command %q (step, done)", cmd)
		}
	}
	return in.Err()
}

// cpuSeconds is the process's user + system CPU time.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return math.NaN()
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// step is one update: gradients dropped, forward + loss, backward, AdamW. It returns the loss,
// the seconds of the three phases (on a GPU each phase ends with a synchronisation, as
// train_step.py's do) and, on the CPU, the tensor bytes of each phase (CPUMemory: zero on a GPU).
func step(m *model.Model, b *model.Batch, opt *torch.AdamW, fo model.ForwardOptions, dev torch.Device) (float64, [3]float64, map[string]any, error) {
	var ph [3]float64
	cpu := !dev.IsCUDA()
	mem := map[string]any{}
	phase := func(name string, c0 torch.CPUMemory) {
		if cpu {
			c := torch.CPUMemoryStats()
			mem["tensor_peak_"+name+"_mb"] = mb(c.Peak)
			mem["cpu_allocs"] = c.Allocs - c0.Allocs + toInt(mem["cpu_allocs"])
			torch.ResetCPUPeak()
		}
	}
	counts := func() torch.CPUMemory {
		if cpu {
			return torch.CPUMemoryStats()
		}
		return torch.CPUMemory{}
	}
	s := torch.NewScope()
	defer s.Close()
	if cpu {
		torch.ResetCPUPeak()
	}
	c0, t0 := counts(), time.Now()
	opt.ZeroGrad()
	p, err := m.Train(b, fo)
	if err != nil {
		return 0, ph, nil, err
	}
	scored := b.Tokens() - len(b.Seqs)
	loss := p.LogProbs.Sum(false).DivScalar(float64(scored)).Neg()
	lv := loss.Float()
	if cpu {
		mem["tensor_after_forward_mb"] = mb(torch.CPUMemoryStats().Live)
	}
	phase("forward", c0)
	c1, t1 := counts(), time.Now()
	if err := p.Backward(loss); err != nil {
		return 0, ph, nil, err
	}
	torch.Synchronize(dev)
	phase("backward", c1)
	c2, t2 := counts(), time.Now()
	opt.Step()
	torch.Synchronize(dev)
	phase("optimizer", c2)
	t3 := time.Now()
	ph = [3]float64{t1.Sub(t0).Seconds(), t2.Sub(t1).Seconds(), t3.Sub(t2).Seconds()}
	return lv, ph, mem, nil
}

// mb is bytes in MiB.
func mb(n int64) float64 { return float64(n) / (1 << 20) }

func toInt(v any) int64 {
	n, _ := v.(int64)
	return n
}

// seqLens is -lens parsed, or -batch lengths of -seq.
func seqLens(o options) ([]int, error) {
	if o.lens == "" {
		lens := make([]int, o.batch)
		for i := range lens {
			lens[i] = o.seq
		}
		return lens, nil
	}
	var lens []int
	for _, f := range strings.Split(o.lens, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 2 {
			return nil, fmt.Errorf("-lens: %q is not a length >= 2", f)
		}
		lens = append(lens, n)
	}
	return lens, nil
}

func readIDs(path string) ([][]int32, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var ids [][]int32
	if err := json.Unmarshal(b, &ids); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return ids, nil
}

// resetPeak resets the kernel's peak-RSS mark (VmHWM) to the current RSS and returns the RSS in kB.
func resetPeak() (int64, error) {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		return 0, err
	}
	return statusKB("VmRSS")
}

// statusKB reads a "Name: N kB" line of /proc/self/status.
func statusKB(name string) (int64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == name+":" {
			return strconv.ParseInt(f[1], 10, 64)
		}
	}
	return 0, fmt.Errorf("no %s in /proc/self/status", name)
}
