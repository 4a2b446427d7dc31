package memplan

import (
	"fmt"
	"strings"
)

// Stage is a ZeRO stage (Rajbhandari et al., arXiv 1910.02054).
type Stage int

// The stages (all run; see grpo.DistConfig.Stage).
const (
	StageDP    Stage = 0 // plain data parallelism: weights, gradients and optimizer state whole on every rank
	StageZeRO1 Stage = 1 // float32 masters, AdamW moments and the gradient sum sharded (grpo dist.zero1)
	StageZeRO2 Stage = 2 // as 1, and the gradients never held whole (reduce-scattered unit by unit, in the backward)
	StageZeRO3 Stage = 3 // as 2, and the weights sharded too in training, a unit gathered at a time
)

func (s Stage) String() string {
	switch s {
	case StageDP:
		return "0 (data parallel)"
	case StageZeRO1, StageZeRO2, StageZeRO3:
		return fmt.Sprintf("%d (ZeRO-%d)", int(s), int(s))
	}
	return fmt.Sprintf("stage(%d)", int(s))
}

// Attention is the attention kernel a training pass runs, which decides what it keeps for the
// backward (activations.go).
type Attention int

const (
	AttentionMath     Attention = iota // the CPU's: k and v repeated to every head, the [heads, len] probabilities kept
	AttentionFlash                     // CUDA in bfloat16/float16: grouped heads read in place, no probabilities
	AttentionExpanded                  // CUDA in float32: the memory-efficient kernel, k and v repeated
)

// AttentionOn is the kernel a run on CUDA (or not) with weights of d bytes gets (torch's sdpa).
func AttentionOn(cuda bool, d int64) Attention {
	switch {
	case !cuda:
		return AttentionMath
	case d < 4:
		return AttentionFlash
	}
	return AttentionExpanded
}

// Defaults that a zero field of Run selects; they are the code's own defaults
// (torch.DefaultBucketBytes, model.DefaultHeadMemoryBudget and the head's recompute chunk).
const (
	DefaultBucketBytes int64 = 25 << 20
	DefaultHeadBudget  int64 = 1 << 30
	headChunkBytes     int64 = 64 << 20 // model.ForwardOptions.chunk: max(1, 64 MiB / vocab) rows
)

// Headroom is the share of a device's memory a plan leaves free: the CUDA context, cuBLAS
// workspaces, the caching allocator's fragmentation and the transient tensors the estimates miss.
const Headroom = 0.10

// Model is the shape of a model, as config.json gives it.
type Model struct {
	// Params is the number of scalar weights: the model's weight table with a tied head counted
	// once (model.Config.NumParameters).
	Params                                                int64
	Hidden, Intermediate, Layers, Heads, KVHeads, HeadDim int
	Vocab                                                 int
	Tied                                                  bool // tie_word_embeddings
}

// Run is what a rank's memory depends on.
type Run struct {
	Model Model
	// DTypeBytes is the size of a weight: 2 for bfloat16 and float16 (trained through float32
	// masters), 4 for float32.
	DTypeBytes int64
	// WireBytes is the size of an element of plain data parallelism's gradient buckets: the
	// weights' own under NCCL, 4 for bfloat16 under Gloo (which cannot sum bfloat16). 0: DTypeBytes.
	WireBytes int64
	// World is the number of training ranks; Stage the ZeRO stage.
	World int
	Stage Stage
	// BucketBytes is dist.bucket_bytes (0: DefaultBucketBytes): ZeRO-1's gather rounds.
	BucketBytes int64
	// MicroTokens is update.micro_tokens: the tokens of one forward/backward pass.
	MicroTokens int
	// Checkpointing is update.gradient_checkpointing.
	Checkpointing bool
	// Slots and MaxLen size the rollout engine's KV cache (rollout.slots, rollout.max_len);
	// MaxLen also bounds a trained sequence's length (the math attention's probabilities).
	Slots, MaxLen int
	// Parked is the KV slots beside Slots that keep finished agent calls' caches for their
	// conversation's next call (env.agent.cache_slots): as large as the engine's own.
	Parked int
	// CUDAGraphs: the decode step is replayed from CUDA graphs (a CUDA device with
	// rollout.cuda_graphs), which hold a memory pool all run.
	CUDAGraphs bool
	// Attention is the training pass's attention kernel (AttentionOn).
	Attention Attention
	// HeadBudget is the most bytes of float32 logits a pass keeps (update.head_memory_budget; 0:
	// DefaultHeadBudget, −1: none, the head always in chunks).
	HeadBudget int64
	// Reference holds a frozen copy of the policy (a KL term); Critic a trained one with a value
	// head (the gae estimator), whole on every rank whatever the stage.
	Reference, Critic bool
	// Device is one device's memory in bytes (0: unknown; Fits then says nothing).
	Device int64
	// LoRA, when set, trains adapters on the frozen model (lora.go); Reference must be false (the
	// reference is the base with the adapters off). CriticLoRA, the critic's own.
	LoRA, CriticLoRA *LoRA
}

// Plan is the bytes one rank holds, by category. Rank is the rank planned for: only the moments
// of ZeRO-1 differ between ranks (the last shard is short), so rank 0's plan is the largest.
type Plan struct {
	Run  Run
	Rank int
	// Persistent, allocated once and held all run.
	Weights  int64 // the policy's weights (with LoRA: the frozen base)
	Adapters int64 // LoRA: the adapters' float32 weights (the trained tensors; then Grads, Masters, Moments and Comm are theirs)
	Grads    int64 // the weights' gradients, and ZeRO's float32 gradient shard
	// GradsInFlight is the part of Grads that a ZeRO backward pass holds until it reduces it (the
	// weights' own gradients): ZeRO-1 all of them until the end of the mini-batch, ZeRO-2 a unit's.
	GradsInFlight int64
	Masters       int64 // float32 master weights (bfloat16/float16 weights; ZeRO-1: always)
	Moments       int64 // AdamW's two moments
	Comm          int64 // gradient buckets (data parallel), ZeRO's gather buffer
	Reference     int64 // the reference model's weights
	Critic        int64 // the critic's weights, gradients, masters, moments and buckets
	KVCache       int64 // the rollout engine's K and V
	GraphPool     int64 // the decode step's static buffers and its CUDA graphs' memory pool (estimate)
	// Transient, during one training pass.
	Activations      int64 // the activations kept for backward, as configured (estimate)
	ActivationsPlain int64 // ... without gradient checkpointing
	ActivationsCkpt  int64 // ... with it
	Logits           int64 // the largest float32 [tokens, vocab] tensor of the head
	LogitsCopies     int64 // how many of them exist at once at the pass's peak
	// StepGrads is the float32 copy of bfloat16/float16 gradients that AdamW's step takes for
	// the masters (after the pass: the activations are gone by then).
	StepGrads          int64
	Gathered           int64 // ZeRO-3: the gathered weights (the units in flight in training, the model in rollout)
	GatheredForRollout int64
}

// Persistent is the sum of what is held all run.
func (p Plan) Persistent() int64 {
	return add(p.Weights, p.Adapters, p.Grads, p.Masters, p.Moments, p.Comm, p.Reference, p.Critic, p.KVCache, p.GraphPool)
}

// TrainPeak is the most a rank holds while training: the persistent part with a pass's
// activations, the head's logits and the gathered weights, or with the optimizer step's float32
// gradients, whichever is more.
func (p Plan) TrainPeak() int64 {
	return add(p.Persistent(), max(add(p.Activations, mul(p.LogitsCopies, p.Logits), p.Gathered), p.StepGrads))
}

// RolloutPeak is the most a rank holds while generating (ZeRO-3 gathers a whole copy for it).
func (p Plan) RolloutPeak() int64 { return add(p.Persistent(), p.GatheredForRollout) }

// Peak is the larger of the two phases.
func (p Plan) Peak() int64 { return max(p.TrainPeak(), p.RolloutPeak()) }

// Usable is the part of the device a plan may fill (Headroom left free); 0 when unknown.
func (p Plan) Usable() int64 { return int64(float64(p.Run.Device) * (1 - Headroom)) }

// Fits reports whether Peak fits Usable; true when the device's memory is unknown, unless the
// peak is Beyond (no device has it).
func (p Plan) Fits() bool {
	if p.Peak() == Beyond {
		return false
	}
	return p.Run.Device == 0 || p.Peak() <= p.Usable()
}

// Check is nil when the run can go ahead: a plan that fits.
func (p Plan) Check() error {
	switch {
	case p.Peak() == Beyond:
		return fmt.Errorf("rank %d needs more than 8 EiB at its peak (%s): no device holds it",
			p.Rank, strings.Join(p.beyond(), "; "))
	case !p.Fits():
		return fmt.Errorf("rank %d needs %s at its peak but %s of the device's %s are usable (%.0f%% left free)",
			p.Rank, FormatBytes(p.Peak()), FormatBytes(p.Usable()), FormatBytes(p.Run.Device), Headroom*100)
	}
	return nil
}

// Validate checks the numbers a plan needs.
func (r Run) Validate() error {
	m := r.Model
	switch {
	case m.Params <= 0 || m.Hidden <= 0 || m.Intermediate <= 0 || m.Layers <= 0 || m.Heads <= 0 ||
		m.KVHeads <= 0 || m.HeadDim <= 0 || m.Vocab <= 0:
		return fmt.Errorf("memplan: model shape %+v: every size must be positive", m)
	case r.DTypeBytes != 2 && r.DTypeBytes != 4:
		return fmt.Errorf("memplan: weights of %d bytes: 2 (bfloat16, float16) or 4 (float32)", r.DTypeBytes)
	case r.World < 1:
		return fmt.Errorf("memplan: world size %d, want >= 1", r.World)
	case r.Stage < StageDP || r.Stage > StageZeRO3:
		return fmt.Errorf("memplan: ZeRO stage %d, want 0 to 3", int(r.Stage))
	case r.MicroTokens < 0 || r.Slots < 0 || r.Parked < 0 || r.MaxLen < 0 || r.BucketBytes < 0 || r.HeadBudget < -1 || r.Attention < AttentionMath || r.Attention > AttentionExpanded || r.Device < 0 || r.WireBytes < 0:
		return fmt.Errorf("memplan: negative setting in %+v", r)
	case r.LoRA != nil && (r.LoRA.PerLayer <= 0 || r.Stage == StageZeRO3 || r.Reference):
		return fmt.Errorf("memplan: LoRA with %d adapter elements per layer, stage %d, reference %v: want > 0 elements, "+
			"stage 0 to 2 (the frozen base is not sharded) and no reference copy (the base is the reference)", r.LoRA.PerLayer, int(r.Stage), r.Reference)
	case m.Params < add(m.outerParams(), int64(m.Layers)):
		return fmt.Errorf("memplan: model shape %+v: %d parameters leave none for the layers (the embedding and the final norm alone hold %d)",
			m, m.Params, m.outerParams())
	}
	return nil
}

// beyond names the categories whose bytes are Beyond.
func (p Plan) beyond() []string {
	var out []string
	for _, r := range rows {
		if r.bytes(p) == Beyond && !strings.HasPrefix(r.label, "=") {
			out = append(out, r.label)
		}
	}
	if len(out) == 0 { // only a sum passes it
		out = append(out, "the categories' sum")
	}
	return out
}
