package memplan

// Predict plans rank's memory in run r (0 <= rank < World). A single process (World 1) has no
// process group and shards nothing, whatever the stage: it plans as stage 0 without buckets.
//
// The persistent categories count what the code allocates, element for element (P is
// Model.Params, d DTypeBytes, W World, B BucketBytes):
//
//	stage 0     weights P·d, gradients P·d (one process: persistent flat buffers,
//	            torch.GradBuffers), masters P·4 (d = 2 only), moments 2·P·4 (torch.AdamW:
//	            float32 for float32 and for mixed-precision weights), buckets P·wire when W > 1
//	            (torch.GradBuckets: one flat buffer per bucket, covering every parameter); the
//	            step casts the gradients of d = 2 weights to float32 for the masters (P·4, at once)
//	stage 1     grpo/shard's sharded AdamW: the flat space of P elements cut into W shards of S = ⌈P/W⌉
//	            (the last one padded); weights P·d, gradients P·d (the backward's, dropped after the
//	            reduce-scatter) plus the float32 gradient shard S·4, masters S·4 (padded, also for
//	            float32 weights), moments 2·n_r·4 where n_r is the rank's real elements (AdamW runs
//	            over the parameters' pieces, not the padding), and the round buffer W·c·4 with
//	            c = max(1, min(S, B/4/W))
//	stage 2     as 1, but each unit (model.Model.Units: the embedding, each layer, the final norm
//	            and an untied head) is a flat space of its own cut into W shards of s_u = ⌈u/W⌉,
//	            so S = Σ s_u and the rank's real elements are summed over the units; c is the
//	            largest unit's; the backward's gradients are reduce-scattered unit by unit, so
//	            only those of the units in flight exist (gradsInFlight)
//	stage 3     as 2, and no weights of their own (grpo/shard's ZeRO-3 gathers them from the master
//	            shards, cast to d bytes through a second round buffer W·c·d when d < 4, and
//	            prefetches the next layer into (W+1)·s_max·d, s_max the largest layer's shard): while
//	            training the units in flight gathered (as their gradients), while generating a
//	            whole d-byte copy
//
// A LoRA run (Run.LoRA) counts the frozen base and the adapters apart, and the optimizer's state
// over the adapters only (predictLoRA). The reference model holds P·d; the critic (whole AdamW on every rank, grpo/critic.go) its
// weights, a float32 value head of hidden+1, their gradients, masters, moments and buckets.
// The KV cache is model.KVCache: K and V of [slots, kv_heads, max_len + 1, head_dim] per layer
// (the last position is the static decode step's scratch), the slots being the engine's and the
// parked ones of agent calls. With CUDA graphs, the decode step's buffers and pool (graphPool).
func Predict(r Run, rank int) (Plan, error) {
	if err := r.Validate(); err != nil {
		return Plan{}, err
	}
	if rank < 0 || rank >= r.World {
		return Plan{}, errorf("rank %d is outside the world of %d", rank, r.World)
	}
	if r.WireBytes == 0 {
		r.WireBytes = r.DTypeBytes
	}
	if r.BucketBytes == 0 {
		r.BucketBytes = DefaultBucketBytes
	}
	stage := r.Stage
	if r.World == 1 {
		stage = StageDP
	}
	p := Plan{Run: r, Rank: rank}
	m, d, w := r.Model, r.DTypeBytes, int64(r.World)
	P := m.Params
	switch {
	case r.LoRA != nil:
		predictLoRA(&p, r, stage, rank)
	case stage == StageDP:
		p.Weights, p.Grads, p.Moments = mul(P, d), mul(P, d), mul(2, P, 4)
		if d < 4 {
			p.Masters, p.StepGrads = mul(P, 4), mul(P, 4)
		}
		if w > 1 {
			p.Comm = mul(P, r.WireBytes)
		}
	case stage == StageZeRO1:
		s := ceilDiv(P, w)
		mine := min(max(P-int64(rank)*s, 0), s) // rank·s ≤ P + s: no overflow
		chunk := max(1, min(s, r.BucketBytes/4/w))
		p.Weights, p.Grads, p.Masters, p.Moments, p.Comm = mul(P, d), add(mul(P, d), mul(s, 4)), mul(s, 4), mul(2, mine, 4), mul(w, chunk, 4)
		p.GradsInFlight = mul(P, d)
	default:
		var shards, mine, chunk, most int64 = 0, 0, 1, 1
		us := m.units()
		for k, u := range us {
			s := ceilDiv(u, w)
			shards, mine = add(shards, s), add(mine, min(max(u-int64(rank)*s, 0), s))
			chunk = max(chunk, min(s, r.BucketBytes/4/w))
			if k > 0 && k < len(us)-1 { // a layer: the prefetch buffer holds the largest
				most = max(most, s)
			}
		}
		ckpt := r.Checkpointing || stage == StageZeRO3 // stage 3 runs only with checkpointing
		p.GradsInFlight = mul(m.unitsInFlight(ckpt), d)
		p.Weights, p.Grads, p.Masters, p.Moments, p.Comm = mul(P, d), add(mul(shards, 4), p.GradsInFlight), mul(shards, 4), mul(2, mine, 4), mul(w, chunk, 4)
		if stage == StageZeRO3 {
			p.Weights = 0
			if d < 4 {
				p.Comm = add(p.Comm, mul(w, chunk, d)) // the gathers' buffer in the weights' dtype
			}
			p.Comm = add(p.Comm, mul(w+1, most, d)) // the prefetch's buffers: the largest layer gathered, a shard cast
			p.Gathered = p.GradsInFlight
			p.GatheredForRollout = mul(P, d)
		}
	}
	if r.Reference {
		p.Reference = mul(P, d)
	}
	if r.Critic {
		p.Critic = criticBytes(m, d, r.WireBytes, w)
		if r.CriticLoRA != nil {
			p.Critic = criticLoRABytes(m, *r.CriticLoRA, d, w)
		}
	}
	if r.Slots > 0 && r.MaxLen > 0 {
		p.KVCache = mul(2, int64(m.Layers), int64(r.Slots)+int64(r.Parked), int64(m.KVHeads), int64(r.MaxLen)+1, int64(m.HeadDim), d)
	}
	if r.CUDAGraphs {
		p.GraphPool = graphPool(m, d, int64(r.Slots)+int64(r.Parked))
	}
	p.ActivationsPlain, p.ActivationsCkpt = activations(r, int64(r.MicroTokens))
	p.Activations = p.ActivationsPlain
	if r.Checkpointing {
		p.Activations = p.ActivationsCkpt
	}
	p.Logits, p.LogitsCopies = logits(m, int64(r.MicroTokens), r.HeadBudget)
	return p, nil
}

// graphPool estimates what the static decode step (torch.Decoder) holds on a CUDA device for
// steps of up to slots rows, S = slots, V = vocab: its float32 logits buffer S·V·4 and the memory
// pool of its graphs, which the largest step's intermediates size: the head's [S, V] output in
// the weights' dtype and its float32 copy, and the sampler's passes over [S, V] at their most
// (top-k/top-p: the tempered log-probabilities, their exponentials, the sorted values and their
// int64 order, the masks and the running sums: about 36 bytes an entry). The layers' own
// intermediates ([S, hidden]-sized) are negligible beside them. An estimate: the decode part of
// scripts/gpu/run.sh measures the pool.
func graphPool(m Model, d, slots int64) int64 {
	sv := mul(slots, int64(m.Vocab))
	return add(mul(sv, 4), mul(sv, d+4+36))
}

// criticBytes is the critic's persistent memory: the model (d bytes a weight) and its float32
// value head [1, hidden] + [1], with gradients, float32 masters of the model's weights when d = 2,
// float32 moments, and gradient buckets when data parallel.
func criticBytes(m Model, d, wire, world int64) int64 {
	P, head := m.Params, int64(m.Hidden)+1
	b := add(mul(2, add(mul(P, d), mul(head, 4))), mul(2, add(P, head), 4))
	if d < 4 {
		b = add(b, mul(P, 4))
	}
	if world > 1 {
		b = add(b, mul(P, wire), mul(head, 4))
	}
	return b
}

// units is the size of each of model.Model.Units: the embedding (with a tied head), the layers,
// the final norm and an untied head.
func (m Model) units() []int64 {
	embed := mul(int64(m.Vocab), int64(m.Hidden))
	last := int64(m.Hidden)
	if !m.Tied {
		last = add(last, embed)
	}
	us := []int64{embed}
	for range m.Layers {
		us = append(us, m.layerParams())
	}
	return append(us, last)
}

// unitsInFlight is the most gradient elements a ZeRO-2 backward pass holds before reducing them,
// and the most weight elements a ZeRO-3 pass holds gathered. With checkpointing, one unit's at a
// time, besides a tied embedding's, which the head's backward starts and the embedding's ends (and
// whose weights the head uses); without it, the layers' backward is one autograd call, after
// which every unit but the last holds its gradients.
func (m Model) unitsInFlight(checkpointing bool) int64 {
	us := m.units()
	embed, last := us[0], us[len(us)-1]
	if !checkpointing {
		return m.Params - last // last ≤ Params (Validate)
	}
	if m.Tied {
		return add(embed, max(last, m.layerParams()))
	}
	return max(embed, last, m.layerParams())
}

// layerParams is one decoder layer's weights: the model's without the embedding, an untied
// head and the final norm, over the layers.
func (m Model) layerParams() int64 {
	return (m.Params - m.outerParams()) / int64(m.Layers)
}

// outerParams are the weights outside the layers: the embedding, an untied head and the final
// norm.
func (m Model) outerParams() int64 {
	embed := mul(int64(m.Vocab), int64(m.Hidden))
	outer := add(embed, int64(m.Hidden))
	if !m.Tied {
		outer = add(outer, embed)
	}
	return outer
}
