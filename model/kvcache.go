package model

import (
	"fmt"

	"github.com/mtgrpo/mtgrpo/torch"
)

// KVCache holds the keys and values of up to Slots sequences for generation: per layer one K and
// one V buffer [slots, kv_heads, max_len + 1, head_dim], preallocated in the model's dtype and
// device. Each slot has its own length; a slot is a sequence in flight. The last position of every
// slot is scratch, never read: a static decode step padded to more rows than it has sequences
// writes its padding rows' keys there (StaticDecoder).
//
// The rollout engine drives it: Extend appends tokens to any set of slots in one batched forward
// pass (a fresh prompt in one slot while others decode one token each is fine); Fork copies a
// prompt's cache into other slots (the n samples of a GRPO group share one prefill); Reset frees a
// slot for the next sequence; Truncate rolls a slot back. Slots are plain indices: the caller keeps
// its own map from requests to slots.
type KVCache struct {
	K, V   []*torch.Tensor // per layer [slots, kv_heads, max_len + 1, head_dim]
	MaxLen int             // the tokens a slot holds

	lens  []int
	m     *Model
	scope *torch.Scope
}

// NewKVCache allocates a cache of slots sequences of up to maxLen tokens each (zero-filled).
func (m *Model) NewKVCache(slots, maxLen int) (c *KVCache, err error) {
	defer torch.Recover(&err)
	if slots <= 0 || maxLen <= 0 {
		return nil, fmt.Errorf("model: KV cache needs slots > 0 and max_len > 0 (got %d, %d)", slots, maxLen)
	}
	cfg := m.Config
	c = &KVCache{MaxLen: maxLen, lens: make([]int, slots), m: m, scope: torch.NewLongScope("kv cache")}
	shape := []int64{int64(slots), int64(cfg.KVHeads()), int64(maxLen + 1), int64(cfg.HeadDimension())}
	c.scope.With(func() {
		for range m.Layers {
			c.K = append(c.K, torch.Zeros(shape, m.DType, m.Device))
			c.V = append(c.V, torch.Zeros(shape, m.DType, m.Device))
		}
	})
	return c, nil
}

// KVCacheBytes is the memory NewKVCache(slots, maxLen) takes: K and V for every layer, [slots,
// kv_heads, max_len + 1, head_dim] each, in the model dtype. Size the cache from a memory budget
// with it.
func (m *Model) KVCacheBytes(slots, maxLen int) int64 {
	c := m.Config
	return 2 * int64(c.NumHiddenLayers) * int64(slots) * int64(c.KVHeads()) * int64(maxLen+1) *
		int64(c.HeadDimension()) * int64(m.DType.Size())
}

// stride is the positions of a slot in the buffers: MaxLen and the scratch position.
func (c *KVCache) stride() int { return c.MaxLen + 1 }

// Slots is the number of sequence slots.
func (c *KVCache) Slots() int { return len(c.lens) }

// Len is the number of tokens cached in slot.
func (c *KVCache) Len(slot int) int { return c.lens[slot] }

// Reset empties slot for a new sequence (its stale keys are never read: reads stop at the length).
func (c *KVCache) Reset(slot int) { c.lens[slot] = 0 }

// Truncate rolls slot back to its first n tokens.
func (c *KVCache) Truncate(slot, n int) error {
	if err := c.checkSlot(slot); err != nil {
		return err
	}
	if n < 0 || n > c.lens[slot] {
		return fmt.Errorf("model: cannot truncate slot %d of length %d to %d", slot, c.lens[slot], n)
	}
	c.lens[slot] = n
	return nil
}

// Close frees the buffers.
func (c *KVCache) Close() { c.scope.Close() }

func (c *KVCache) checkSlot(slot int) error {
	if slot < 0 || slot >= len(c.lens) {
		return fmt.Errorf("model: slot %d out of range [0, %d)", slot, len(c.lens))
	}
	return nil
}

// Fork copies the cached tokens of slot src into each slot of dsts (their previous contents are
// dropped), so that n continuations of one prompt share its prefill.
func (c *KVCache) Fork(src int, dsts ...int) (err error) {
	defer torch.Recover(&err)
	if err := c.checkSlot(src); err != nil {
		return err
	}
	n := int64(c.lens[src])
	for _, d := range dsts {
		if err := c.checkSlot(d); err != nil {
			return err
		}
		if d == src {
			return fmt.Errorf("model: cannot fork slot %d into itself", src)
		}
	}
	s := torch.NewScope()
	defer s.Close()
	torch.NoGrad(func() {
		for l := range c.K {
			for _, buf := range []*torch.Tensor{c.K[l], c.V[l]} {
				from := buf.Narrow(0, int64(src), 1).Narrow(2, 0, n)
				for _, d := range dsts {
					buf.Narrow(0, int64(d), 1).Narrow(2, 0, n).Copy_(from)
				}
			}
		}
	})
	for _, d := range dsts {
		c.lens[d] = c.lens[src]
	}
	return nil
}

// cacheWrite is where one Extend puts its new keys and reads its keys back: row indices into the
// flattened new keys [B·T·kv_heads, D] and into the flattened cache [slots·kv_heads·max_len, D].
type cacheWrite struct {
	src, dst *torch.Tensor // int64 rows; src nil when every new row is written (no padding)
	slots    *torch.Tensor // int64 [B] slots to read; nil when they are first, first+1, ...
	first    int64
	count    int64
	keys     int64 // how many key positions the batch reads (max over its slots of the new length)
}

// apply writes new [B, kv_heads, T, D] into buf and returns buf's keys for the batch [B, kv_heads,
// keys, D].
func (w *cacheWrite) apply(buf, new *torch.Tensor) *torch.Tensor {
	s := buf.Shape()
	d := s[3]
	rows := new.Permute(0, 2, 1, 3).Reshape(-1, d) // (b, t, head) order
	if w.src != nil {
		rows = rows.IndexSelect(0, w.src)
	}
	buf.View(-1, d).IndexCopy_(0, w.dst, rows)
	view := buf.Narrow(2, 0, w.keys)
	if w.slots != nil {
		return view.IndexSelect(0, w.slots)
	}
	return view.Narrow(0, w.first, w.count)
}
