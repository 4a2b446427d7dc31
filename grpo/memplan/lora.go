package memplan

// LoRA is a run that trains low-rank adapters (lora.rank > 0) instead of the model: the base's
// Params stay frozen in DTypeBytes, whole on every rank (they are no optimizer's parameters), and
// the trained tensors are the adapters, in float32 (model/lora.go).
type LoRA struct {
	// PerLayer is one decoder layer's adapter elements: r·(in + out) summed over its targeted
	// linear layers (LoRAPerLayer).
	PerLayer int64
}

// The decoder's linear modules, by PEFT's names.
const (
	moduleQ, moduleK, moduleV, moduleO = "q_proj", "k_proj", "v_proj", "o_proj"
	moduleGate, moduleUp, moduleDown   = "gate_proj", "up_proj", "down_proj"
)

// LoRAPerLayer is the adapter elements of one layer of m with rank r on the modules targets
// (model.LoRAConfig.Targets' names): A [r, in] and B [out, r] for each.
func LoRAPerLayer(m Model, r int, targets []string) int64 {
	h, i := int64(m.Hidden), int64(m.Intermediate)
	q, kv := mul(int64(m.Heads), int64(m.HeadDim)), mul(int64(m.KVHeads), int64(m.HeadDim))
	widths := map[string]int64{ // in + out
		moduleQ: add(h, q), moduleK: add(h, kv), moduleV: add(h, kv), moduleO: add(q, h),
		moduleGate: add(h, i), moduleUp: add(h, i), moduleDown: add(i, h),
	}
	var n int64
	for _, t := range targets {
		n = add(n, mul(int64(r), widths[t]))
	}
	return n
}

// predictLoRA fills p's persistent categories for a LoRA run: the frozen base P·d whole (Weights),
// the adapters T·4 whole on every rank (Adapters, T = PerLayer·L), and the optimizer's state over
// the adapters only, as Predict counts it for a model of T float32 elements whose units are the
// layers (the adapters of a layer form its unit: model.Model.Units): stage 0 gradients T·4,
// moments 2·T·4, no masters (float32), buckets T·4 when W > 1; stage 1 the flat space of T cut in
// W shards; stage 2 each layer's PerLayer cut in W shards, one layer's gradients in flight with
// checkpointing (all of them without). No reference model: the reference is the base, adapters
// off.
func predictLoRA(p *Plan, r Run, stage Stage, rank int) {
	m, d, w := r.Model, r.DTypeBytes, int64(r.World)
	u := r.LoRA.PerLayer
	T := mul(u, int64(m.Layers))
	p.Weights, p.Adapters = mul(m.Params, d), mul(T, 4)
	switch stage {
	case StageDP:
		p.Grads, p.Moments = mul(T, 4), mul(2, T, 4)
		if w > 1 {
			p.Comm = mul(T, 4)
		}
	case StageZeRO1:
		s := ceilDiv(T, w)
		mine := min(max(T-int64(rank)*s, 0), s)
		chunk := max(1, min(s, r.BucketBytes/4/w))
		p.GradsInFlight = mul(T, 4)
		p.Grads, p.Masters, p.Moments, p.Comm = add(p.GradsInFlight, mul(s, 4)), mul(s, 4), mul(2, mine, 4), mul(w, chunk, 4)
	default: // ZeRO-2 (Validate refuses ZeRO-3)
		s := ceilDiv(u, w)
		mine := mul(int64(m.Layers), min(max(u-int64(rank)*s, 0), s))
		shards := mul(int64(m.Layers), s)
		chunk := max(1, min(s, r.BucketBytes/4/w))
		p.GradsInFlight = mul(u, 4)
		if !r.Checkpointing {
			p.GradsInFlight = mul(T, 4)
		}
		p.Grads, p.Masters, p.Moments, p.Comm = add(mul(shards, 4), p.GradsInFlight), mul(shards, 4), mul(2, mine, 4), mul(w, chunk, 4)
	}
}

// criticLoRABytes is the persistent memory of a critic that trains adapters (Run.CriticLoRA) and
// its float32 value head [1, hidden] + [1]: the frozen model P·d, the adapters and the head in
// float32 with their gradients and moments (no masters: float32), and their buckets when data
// parallel.
func criticLoRABytes(m Model, l LoRA, d, world int64) int64 {
	trained := add(mul(l.PerLayer, int64(m.Layers)), int64(m.Hidden)+1)
	b := add(mul(m.Params, d), mul(4, trained, 4)) // weights, gradients and two moments of the trained
	if world > 1 {
		b = add(b, mul(trained, 4))
	}
	return b
}
