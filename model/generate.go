package model

import (
	"fmt"

	"github.com/mtgrpo/mtgrpo/torch"
)

// Extend appends tokens[i] to the cached sequence in slots[i], for every i in one batched forward
// pass, and returns the float32 logits [len(slots), vocab] that follow each slot's last new token.
// Rows may have different numbers of new tokens (a prompt being prefilled next to sequences decoding
// one token each); they are right-padded internally and masked. Slots must be distinct. Runs without
// gradients.
//
// Cost: when slots are an ascending run (k, k+1, ...) every layer reads its cache in place; otherwise
// it first gathers the rows of those slots (a copy of [len(slots), kv_heads, longest, head_dim] per
// layer), so an engine that hands out the lowest free slot and sorts each step's slots pays least.
func (m *Model) Extend(c *KVCache, slots []int, tokens [][]int32) (logits *torch.Tensor, err error) {
	defer torch.Recover(&err)
	if len(slots) == 0 || len(slots) != len(tokens) {
		return nil, fmt.Errorf("model: Extend needs one token list per slot (got %d slots, %d lists)", len(slots), len(tokens))
	}
	b, err := c.plan(slots, tokens, m.Config.VocabSize)
	if err != nil {
		return nil, err
	}
	torch.NoGrad(func() {
		// Only the logits outlive the call: a decode loop in one long scope does not pile up inputs.
		logits = torch.Scoped(func() *torch.Tensor {
			a := m.newAttention(b.pos, len(slots), b.cols)
			if !b.causal {
				a.mask = positionMask(b.pos, len(slots), b.cols, b.write.keys, m.Device)
			}
			a.cache, a.write, a.fused = c, b.write.upload(m.Device), m.fuse()
			ids := torch.FromSlice(b.ids, int64(len(slots)), int64(b.cols)).ToDevice(m.Device)
			h := m.layers(m.embed(ids), a).View(-1, int64(m.Config.HiddenSize))
			last := torch.FromSlice(b.last).ToDevice(m.Device)
			return m.logits(h.IndexSelect(0, last))
		})
	})
	for i, s := range slots {
		c.lens[s] += len(tokens[i])
	}
	return logits, nil
}

// Prefill starts the sequences prompts[i] in the (reset) slots[i] and returns the logits after
// each prompt: Extend on empty slots.
func (m *Model) Prefill(c *KVCache, slots []int, prompts [][]int32) (*torch.Tensor, error) {
	for _, s := range slots {
		if err := c.checkSlot(s); err != nil {
			return nil, err
		}
		c.Reset(s)
	}
	return m.Extend(c, slots, prompts)
}

// Decode appends one token to each slot and returns the next logits [len(slots), vocab].
func (m *Model) Decode(c *KVCache, slots []int, tokens []int32) (*torch.Tensor, error) {
	ts := make([][]int32, len(tokens))
	for i := range tokens {
		ts[i] = tokens[i : i+1]
	}
	return m.Extend(c, slots, ts)
}

// extendPlan is the host-side layout of one Extend: ids and positions [B, T] (right-padded), the
// attention (causal, or a position mask), the cache rows to write, and the flat row of each slot's
// last new token.
type extendPlan struct {
	cols   int
	ids    []int64
	pos    []int32
	causal bool // every row a fresh prompt of the same length: no mask
	last   []int64
	write  hostWrite
}

type hostWrite struct {
	src, dst     []int64
	all          bool
	slots        []int64
	first, count int64
	keys         int64
}

// plan checks the request against the cache and lays it out.
func (c *KVCache) plan(slots []int, tokens [][]int32, vocab int) (*extendPlan, error) {
	cfg := c.m.Config
	kvh, maxLen, stride := cfg.KVHeads(), c.MaxLen, c.stride()
	p := &extendPlan{}
	seen := map[int]bool{}
	for i, s := range slots {
		if err := c.checkSlot(s); err != nil {
			return nil, err
		}
		if seen[s] {
			return nil, fmt.Errorf("model: slot %d appears twice in one Extend", s)
		}
		seen[s] = true
		if len(tokens[i]) == 0 {
			return nil, fmt.Errorf("model: no tokens for slot %d", s)
		}
		if n := c.lens[s] + len(tokens[i]); n > maxLen {
			return nil, fmt.Errorf("model: slot %d would hold %d tokens, the cache holds at most %d", s, n, maxLen)
		}
		for t, id := range tokens[i] {
			if id < 0 || int(id) >= vocab {
				return nil, fmt.Errorf("model: slot %d, new token %d: id %d is outside the vocabulary [0, %d)", s, t, id, vocab)
			}
		}
		p.cols = max(p.cols, len(tokens[i]))
		p.write.keys = max(p.write.keys, int64(c.lens[s]+len(tokens[i])))
	}
	B, T := len(slots), p.cols
	p.ids, p.pos = make([]int64, B*T), make([]int32, B*T)
	p.write.all = true
	for i, s := range slots {
		L, n := c.lens[s], len(tokens[i])
		for t := 0; t < T; t++ {
			p.pos[i*T+t] = int32(L + t)
			if t >= n {
				p.write.all = false
				continue
			}
			p.ids[i*T+t] = int64(tokens[i][t])
			for h := 0; h < kvh; h++ {
				p.write.src = append(p.write.src, int64((i*T+t)*kvh+h))
				p.write.dst = append(p.write.dst, int64((s*kvh+h)*stride+L+t))
			}
		}
		p.last = append(p.last, int64(i*T+n-1))
		p.write.slots = append(p.write.slots, int64(s))
	}
	if fresh(c, slots, tokens) {
		p.causal = true // every row is a whole prompt of the same length: plain causal (flash on CUDA)
	}
	p.write.first, p.write.count = int64(slots[0]), int64(B)
	for i, s := range slots {
		if s != slots[0]+i {
			p.write.count = 0
		}
	}
	return p, nil
}

// positionMask is the bool mask [B, 1, T, keys] of an Extend, built on dev: query t of row i sits at
// position pos[i, t] and sees keys 0..pos[i, t] of its slot. Padding queries see a prefix of their
// row too, so no softmax row is empty (their outputs are dropped).
func positionMask(pos []int32, rows, cols int, keys int64, dev torch.Device) *torch.Tensor {
	return torch.Scoped(func() *torch.Tensor {
		p := make([]int64, len(pos))
		for i, v := range pos {
			p[i] = int64(v)
		}
		q := torch.FromSlice(p).ToDevice(dev).View(int64(rows), 1, int64(cols), 1)
		k := torch.Arange(0, float64(keys), 1, torch.Int64, dev).View(1, 1, 1, keys)
		return k.Le(q)
	})
}

// fresh reports an Extend whose rows all start empty and add the same number of tokens.
func fresh(c *KVCache, slots []int, tokens [][]int32) bool {
	for i, s := range slots {
		if c.lens[s] != 0 || len(tokens[i]) != len(tokens[0]) {
			return false
		}
	}
	return true
}

// upload moves the index lists to dev.
func (h *hostWrite) upload(dev torch.Device) *cacheWrite {
	w := &cacheWrite{dst: torch.FromSlice(h.dst).ToDevice(dev), first: h.first, count: h.count, keys: h.keys}
	if !h.all {
		w.src = torch.FromSlice(h.src).ToDevice(dev)
	}
	if h.count == 0 {
		w.slots = torch.FromSlice(h.slots).ToDevice(dev)
	}
	return w
}
