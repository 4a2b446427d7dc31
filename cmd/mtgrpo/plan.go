package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/mtgrpo/mtgrpo/cmd/internal/config"
	"github.com/mtgrpo/mtgrpo/grpo/memplan"
	"github.com/mtgrpo/mtgrpo/grpo/shard"
	"github.com/mtgrpo/mtgrpo/model"
	"github.com/mtgrpo/mtgrpo/torch"
)

var planCommand = command{
	name: "plan",
	args: "[KEY=VALUE ...]",
	summary: "Say before a run what each training rank will hold in device memory: weights, gradients, float32\n" +
		"master weights, AdamW moments, gradient buckets, reference model, critic, KV cache, activations (with\n" +
		"and without gradient checkpointing), the head's logits (whole up to update.head_memory_budget, else in\n" +
		"chunks), and whether it fits the device (package grpo/memplan; docs/distributed.md). The configuration\n" +
		"resolves as train's; of the model only config.json is read (of a Hub id only config.json is fetched\n" +
		"into the cache). train makes the same check at start on CUDA devices.",
	examples: []string{
		"mtgrpo plan --model models/qwen --config configs/multiturn_grpo_trainer.yaml --nproc 8 --device-memory 80GB",
		"mtgrpo plan init.arch=qwen2 init.preset=qwen2.5-32b --device cuda --nproc 8 --device-memory 80GB --stages",
	},
}

// planCmd is `mtgrpo plan`.
func planCmd(args []string) error {
	fs := planCommand.flags()
	rf := newRunFlags(fs, commonKeys)
	nproc := fs.Int("nproc", defaultNproc(), "training processes, one per device (the world size)")
	memory := fs.String("device-memory", "", "one device's memory: 80GB, 80GiB, 81559MiB (default on CUDA: the smallest GPU's, from nvidia-smi)")
	stages := fs.Bool("stages", false, "plan ZeRO stages 0 to 3 side by side")
	asJSON := fs.Bool("json", false, "print the run's plan as one JSON object of bytes by category (for scripts)")
	if err := rf.parse(planCommand, args); err != nil {
		return err
	}
	if err := atLeast("plan", intFlag{"nproc", *nproc, 1}); err != nil {
		return err
	}
	src, err := rf.sources("plan")
	if err != nil {
		return err
	}
	cfg, err := config.Resolve(src)
	if err != nil {
		return configError("plan", err)
	}
	if err := cfg.CheckWorld(*nproc, nprocSource(fs.Lookup("nproc").Changed, *nproc)); err != nil {
		return configError("plan", err)
	}
	dir, err := resolveModelConfig("plan", "model", cfg.Model)
	if err != nil {
		return err
	}
	device, err := deviceMemory(*memory, cfg.Device)
	if err != nil {
		return usagef("plan: --device-memory: %v", err)
	}
	r, err := planRun(cfg, dir, *nproc, device)
	if err != nil {
		return usagef("plan: %v", err) // the configuration or the model's config.json: what was asked
	}
	if *asJSON {
		return writePlanJSON(os.Stdout, r)
	}
	return writePlan(os.Stdout, r, *stages)
}

// planRun is the memory model's view of a run of cfg on world processes (the policy's
// config.json in dir, or cfg's init: section when dir is ""), device bytes a device (0: unknown).
func planRun(cfg *config.Config, dir string, world int, device int64) (memplan.Run, error) {
	c, err := planModelConfig(cfg, dir)
	if err != nil {
		return memplan.Run{}, err
	}
	shape, err := shard.PlanModel(c)
	if err != nil {
		return memplan.Run{}, err
	}
	dt, err := runDType(cfg, c)
	if err != nil {
		return memplan.Run{}, err
	}
	g, err := cfg.Trainer()
	if err != nil {
		return memplan.Run{}, err
	}
	dev, err := torch.ParseDevice(cfg.Device)
	if err != nil {
		return memplan.Run{}, err
	}
	r := memplan.Run{Model: shape, DTypeBytes: int64(dt.Size()), World: max(1, world-cfg.Dist.RolloutRanks),
		MicroTokens: cfg.Update.MicroTokens, Checkpointing: cfg.Update.Checkpoint, HeadBudget: cfg.Update.HeadMemoryBudget,
		Slots: cfg.Slots(), Parked: cfg.ParkedSlots(), MaxLen: cfg.MaxLen(), CUDAGraphs: dev.IsCUDA() && cfg.Rollout.CUDAGraphs && cfg.PolicyLoRA() == nil,
		Reference: g.NeedsReference() && cfg.PolicyLoRA() == nil, Critic: g.NeedsCritic(), Device: device, Stage: cfg.ZeROStage(),
		Attention: memplan.AttentionOn(dev.IsCUDA(), int64(dt.Size()))}
	if !dev.IsCUDA() && dt != torch.Float32 {
		r.WireBytes = 4 // Gloo sums bfloat16 and float16 buckets in float32
	}
	if l := cfg.PolicyLoRA(); l != nil {
		r.LoRA = &memplan.LoRA{PerLayer: memplan.LoRAPerLayer(shape, l.Rank, l.Targets())}
	}
	if l := cfg.CriticLoRAConfig(); l != nil && r.Critic { // the critic starts from the policy's shape
		r.CriticLoRA = &memplan.LoRA{PerLayer: memplan.LoRAPerLayer(shape, l.Rank, l.Targets())}
	}
	return r, nil
}

// planModelConfig is the policy's config.json: dir's, or that of cfg's random init: model.
func planModelConfig(cfg *config.Config, dir string) (*model.Config, error) {
	switch {
	case dir != "":
		return model.LoadConfig(dir)
	case cfg.Init != nil:
		c, err := cfg.Init.ModelConfig()
		if err != nil {
			return nil, fmt.Errorf("init: %w", err)
		}
		return c, nil
	}
	return nil, fmt.Errorf("no model: give --model, or init.arch and init.preset")
}

// runDType is the dtype the run's weights take, as the job loads them: dtype, else float32 on
// the CPU and the checkpoint's own elsewhere.
func runDType(cfg *config.Config, c *model.Config) (torch.DType, error) {
	name := cfg.DType
	if name == "auto" || name == "" && cfg.Device != "" && cfg.Device != "cpu" {
		var err error
		if name, err = c.StoredDType(); err != nil {
			return 0, err
		}
	}
	if name == "" {
		return torch.Float32, nil
	}
	return torch.ParseDType(name)
}

// deviceMemory is one device's memory in bytes: flag's size, else on CUDA the smallest GPU's as
// nvidia-smi reports it, else 0 (unknown).
func deviceMemory(flag, device string) (int64, error) {
	if flag != "" {
		return memplan.ParseBytes(flag)
	}
	if dev, err := torch.ParseDevice(device); err != nil || !dev.IsCUDA() {
		return 0, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "nvidia-smi", "--query-gpu=memory.total", "--format=csv,noheader,nounits").Output()
	if err != nil {
		return 0, nil
	}
	var least int64
	for _, f := range strings.Fields(string(out)) {
		mib, err := strconv.ParseInt(f, 10, 64)
		if err == nil && mib > 0 && (least == 0 || mib < least) {
			least = mib
		}
	}
	return least << 20, nil
}

// writePlan prints what r is and its table: rank 0 (the largest share), or with stages every
// ZeRO stage side by side.
func writePlan(w io.Writer, r memplan.Run, stages bool) error {
	m := r.Model
	weights := "float32 weights"
	if r.DTypeBytes == 2 {
		weights = "bfloat16/float16 weights, float32 masters"
	}
	fmt.Fprintf(w, "model     %d parameters (%s); %d layers, hidden %d, intermediate %d, %d/%d heads of %d, vocabulary %d\n",
		m.Params, weights, m.Layers, m.Hidden, m.Intermediate, m.Heads, m.KVHeads, m.HeadDim, m.Vocab)
	ckpt := "off"
	if r.Checkpointing {
		ckpt = "on"
	}
	parked := ""
	if r.Parked > 0 {
		parked = fmt.Sprintf(" + %d parked for agent calls", r.Parked)
	}
	fmt.Fprintf(w, "run       %d training rank(s), ZeRO stage %s; micro-batch %d tokens, gradient checkpointing %s; KV cache %d slots%s × %d tokens\n",
		r.World, r.Stage, r.MicroTokens, ckpt, r.Slots, parked, r.MaxLen)
	if r.LoRA != nil {
		fmt.Fprintf(w, "LoRA      %d adapter elements (float32) train, %d per layer; the base is frozen and is the KL reference\n",
			r.LoRA.PerLayer*int64(m.Layers), r.LoRA.PerLayer)
	}
	if r.Device > 0 {
		fmt.Fprintf(w, "device    %s, of which %s usable (%.0f%% left free)\n",
			memplan.FormatBytes(r.Device), memplan.FormatBytes(int64(float64(r.Device)*(1-memplan.Headroom))), memplan.Headroom*100)
	} else {
		fmt.Fprintln(w, "device    memory unknown (give --device-memory)")
	}
	var heads []string
	var plans []memplan.Plan
	for s := memplan.StageDP; s <= memplan.StageZeRO3; s++ {
		if !stages && s != r.Stage || r.LoRA != nil && s == memplan.StageZeRO3 { // LoRA: no stage 3
			continue
		}
		rs := r
		rs.Stage = s
		p, err := memplan.Predict(rs, 0)
		if err != nil {
			return err
		}
		heads, plans = append(heads, fmt.Sprintf("stage %d", s)), append(plans, p)
	}
	fmt.Fprintln(w)
	return memplan.WriteTable(w, heads, plans)
}

// planJSON is `mtgrpo plan --json`: the run's plan in bytes, by memplan.Plan's categories, its
// peaks and whether it fits (the device's memory unknown: fits is true, device 0).
type planJSON struct {
	Params        int64            `json:"params"`
	Stage         int              `json:"zero_stage"`
	World         int              `json:"world"`
	MicroTokens   int              `json:"micro_tokens"`
	Checkpointing bool             `json:"gradient_checkpointing"`
	LoRA          bool             `json:"lora"`
	Device        int64            `json:"device_bytes"`
	Usable        int64            `json:"usable_bytes"`
	Bytes         map[string]int64 `json:"bytes"`
	Fits          bool             `json:"fits"`
}

func writePlanJSON(w io.Writer, r memplan.Run) error {
	p, err := memplan.Predict(r, 0)
	if err != nil {
		return err
	}
	j := planJSON{Params: r.Model.Params, Stage: int(r.Stage), World: r.World, MicroTokens: r.MicroTokens,
		Checkpointing: r.Checkpointing, LoRA: r.LoRA != nil, Device: r.Device, Usable: p.Usable(), Fits: p.Fits(),
		Bytes: map[string]int64{"weights": p.Weights, "adapters": p.Adapters, "grads": p.Grads, "masters": p.Masters,
			"moments": p.Moments, "comm": p.Comm, "reference": p.Reference, "critic": p.Critic, "kv_cache": p.KVCache,
			"cuda_graph_pool": p.GraphPool, "persistent": p.Persistent(), "activations": p.Activations,
			"head_budget": p.HeadBudget(), "logits_tensor": p.Logits, "logits": p.Logits * p.LogitsCopies,
			"step_grads": p.StepGrads, "gathered": p.Gathered, "gathered_rollout": p.GatheredForRollout,
			"peak_train": p.TrainPeak(), "peak_rollout": p.RolloutPeak(), "peak": p.Peak()}}
	b, err := json.Marshal(j)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// checkMemory refuses a CUDA run that the memory model says cannot fit its devices, with the
// figures (a usage error: exit status 2). Device memory comes from deviceMemory; against a device
// whose memory is unknown only a plan beyond what any device holds (memplan.Beyond) is refused.
func checkMemory(cmd string, cfg *config.Config, dir string, world int) error {
	if dev, err := torch.ParseDevice(cfg.Device); err != nil || !dev.IsCUDA() {
		return nil
	}
	device, _ := deviceMemory("", cfg.Device)
	if err := checkPlan(cmd, cfg, dir, world, device); err != nil {
		return err // with the device's memory unknown, a plan beyond what any device holds
	}
	if device == 0 {
		fmt.Fprintf(os.Stderr, "mtgrpo %s: device memory unknown (no nvidia-smi): the memory plan is not checked against it\n", cmd)
	}
	return nil
}

// checkPlan is checkMemory's verdict for device bytes of device memory (0: unknown).
func checkPlan(cmd string, cfg *config.Config, dir string, world int, device int64) error {
	r, err := planRun(cfg, dir, world, device)
	if err != nil {
		return fmt.Errorf("%s: memory plan: %w", cmd, err)
	}
	p, err := memplan.Predict(r, 0)
	if err != nil {
		return fmt.Errorf("%s: memory plan: %w", cmd, err)
	}
	if err := p.Check(); err != nil {
		var b strings.Builder
		_ = writePlan(&b, r, false)
		return usagef("%s: this run does not fit its devices: %v\n\n%s\nLower update.micro_tokens, rollout.slots or rollout.max_len, set update.gradient_checkpointing "+
			"or dist.zero1, or train on more devices (mtgrpo plan shows the figures)", cmd, err, b.String())
	}
	return nil
}
