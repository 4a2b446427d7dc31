package model

import "github.com/mtgrpo/mtgrpo/torch"

// attention is what every layer's attention block needs for one forward pass: the RoPE angles of
// the batch's positions, the mask, and in generation the KV cache and where the new keys go. It is
// built once per pass (newAttention; Extend adds the cache) and shared by all layers.
type attention struct {
	cos, sin *torch.Tensor // [B, 1, T, D] in the model dtype
	mask     *torch.Tensor // bool [B, 1, T, Tk], true = may attend; nil means plain causal
	segments [][2]int64    // packed batches: (start, length) of each sequence, attended separately
	prefix   int64         // a shared prefix in columns [0, prefix) that every segment also attends to
	cache    *KVCache      // nil outside generation
	write    *cacheWrite
	fused    []fusedLayer // generation: each layer's projections laid out back to back (fused.go)
}

// newAttention looks up the RoPE angles of pos ([rows*cols] position ids) in the model's table; the
// caller adds a mask, segments or the cache.
func (m *Model) newAttention(pos []int32, rows, cols int) *attention {
	d := int64(m.Config.HeadDimension())
	maxPos := int32(0)
	idx := make([]int64, len(pos))
	for i, p := range pos {
		maxPos = max(maxPos, p)
		idx[i] = int64(p)
	}
	m.rope.ensure(m, int(maxPos)+1)
	at := torch.FromSlice(idx).ToDevice(m.Device)
	return &attention{
		cos: m.rope.cos.IndexSelect(0, at).View(int64(rows), 1, int64(cols), d),
		sin: m.rope.sin.IndexSelect(0, at).View(int64(rows), 1, int64(cols), d),
	}
}

// ropeTable holds cos and sin of every position below its length, [positions, head_dim] in the
// model dtype on the model's device (computed in float32 in Go, see rope.go). It starts at
// min(max_position_embeddings, 4096) positions and doubles when a longer sequence comes.
type ropeTable struct {
	cos, sin *torch.Tensor
	n        int
}

func (r *ropeTable) ensure(m *Model, n int) {
	if n <= r.n {
		return
	}
	size := max(r.n, 1)
	for size < n {
		size *= 2
	}
	pos := make([]int32, size)
	for i := range pos {
		pos[i] = int32(i)
	}
	cos, sin := ropeTables(m.invFreq, pos)
	d := int64(m.Config.HeadDimension())
	r.cos.Free()
	r.sin.Free()
	m.scope.With(func() {
		r.cos = torch.Scoped(func() *torch.Tensor { return torch.FromSlice(cos, int64(size), d).To(m.Device, m.DType) })
		r.sin = torch.Scoped(func() *torch.Tensor { return torch.FromSlice(sin, int64(size), d).To(m.Device, m.DType) })
	})
	r.n = size
}

// rope rotates q or k [B, H, T, D] by the pass's positions.
func (a *attention) rope(x *torch.Tensor) *torch.Tensor { return applyRope(x, a.cos, a.sin) }

// cached writes the new keys and values of layer into the cache and returns all keys and values the
// batch's queries may see, [B, kv_heads, Tk, D]. Outside generation it returns k and v unchanged.
func (a *attention) cached(layer int, k, v *torch.Tensor) (*torch.Tensor, *torch.Tensor) {
	if a.cache == nil {
		return k, v
	}
	return a.write.apply(a.cache.K[layer], k), a.write.apply(a.cache.V[layer], v)
}

// attend is softmax(q kᵀ/√D + mask) v with grouped-query heads, merged back to [B, T, heads·D].
// A packed batch attends causally within each sequence's segment: no [T, T] mask, work and memory
// proportional to Σ len² instead of (Σ len)², and the flash kernel on CUDA.
func (a *attention) attend(q, k, v *torch.Tensor) *torch.Tensor {
	if a.segments != nil {
		if a.prefix > 0 {
			return mergeHeads(a.attendShared(q, k, v))
		}
		outs := make([]*torch.Tensor, len(a.segments))
		for i, sg := range a.segments {
			outs[i] = torch.ScaledDotProductAttention(q.Narrow(2, sg[0], sg[1]), k.Narrow(2, sg[0], sg[1]),
				v.Narrow(2, sg[0], sg[1]), torch.AttentionOpts{Causal: true})
		}
		return mergeHeads(torch.Cat(outs, 2))
	}
	if a.mask != nil && q.Size(2) == 1 && q.Size(1) != k.Size(1) {
		return mergeHeads(foldedGQA(q, k, v, a.mask))
	}
	o := torch.AttentionOpts{Mask: a.mask, Causal: a.mask == nil}
	return mergeHeads(torch.ScaledDotProductAttention(q, k, v, o))
}

// attendShared attends a packed batch with a shared prefix: the prefix causally to itself, each
// segment to the whole prefix and causally to itself (a [len, prefix+len] mask), [B, H, T, D].
func (a *attention) attendShared(q, k, v *torch.Tensor) *torch.Tensor {
	p := a.prefix
	kp, vp := k.Narrow(2, 0, p), v.Narrow(2, 0, p)
	outs := []*torch.Tensor{torch.ScaledDotProductAttention(q.Narrow(2, 0, p), kp, vp, torch.AttentionOpts{Causal: true})}
	masks := map[int64]*torch.Tensor{}
	for _, sg := range a.segments {
		n := sg[1]
		mask, ok := masks[n]
		if !ok {
			own := torch.Ones([]int64{n, n}, torch.Bool, q.Device()).Tril(0)
			mask = torch.Cat([]*torch.Tensor{torch.Ones([]int64{n, p}, torch.Bool, q.Device()), own}, 1)
			masks[n] = mask
		}
		ks := torch.Cat([]*torch.Tensor{kp, k.Narrow(2, sg[0], n)}, 2)
		vs := torch.Cat([]*torch.Tensor{vp, v.Narrow(2, sg[0], n)}, 2)
		outs = append(outs, torch.ScaledDotProductAttention(q.Narrow(2, sg[0], n), ks, vs, torch.AttentionOpts{Mask: mask}))
	}
	return torch.Cat(outs, 2)
}

// foldedGQA is masked grouped-query attention of one query token per row (a decode step) without
// copying keys and values once per query head: the rep query heads that share key/value head g
// (heads g·rep … g·rep+rep−1, HF's repeat_kv order) become rep query rows of head g, [B, H, 1, D] →
// [B, kv_heads, rep, D], all under the row's mask. Otherwise libtorch 1.13 repeats k and v rep
// times, and so does the math kernel that masked attention with enable_gqa falls back to on CUDA:
// rep copies of the whole KV cache per layer and step. Passes of several tokens per row are not
// folded: their mask would have to be copied rep times ([B, 1, rep·T, keys], kept per layer for
// backward in training), which outgrows the repeated keys and values once rep·T > 2·heads·head_dim.
func foldedGQA(q, k, v, mask *torch.Tensor) *torch.Tensor {
	s := q.Shape() // B, H, 1, D
	hkv := k.Size(1)
	rep := s[1] / hkv
	qf := q.Reshape(s[0], hkv, rep, s[3])
	ms := mask.Shape() // [B, 1, 1, keys]: expanded to the rep rows as a view, no copy
	o := torch.ScaledDotProductAttention(qf, k, v, torch.AttentionOpts{Mask: mask.Expand(ms[0], ms[1], rep, ms[3])})
	return o.Reshape(s[0], s[1], s[2], s[3])
}
