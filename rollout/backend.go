package rollout

import (
	"fmt"

	"github.com/mtgrpo/mtgrpo/model"
	"github.com/mtgrpo/mtgrpo/torch"
)

// Backend is the language model as the engine sees it: a KV cache of Slots sequences and one
// batched forward pass that appends tokens to any set of slots. model.Model with a model.KVCache
// is the real one (ModelBackend); MockModel computes logits in Go for engine tests. Every method
// runs on the torch thread.
type Backend interface {
	// Vocab is the width of a logits row.
	Vocab() int
	// Slots is how many sequences the cache holds at once.
	Slots() int
	// MaxLen is how many tokens one slot holds.
	MaxLen() int
	// Extend appends tokens[i] to slots[i] (distinct slots, in one forward pass) and returns the
	// float32 logits [len(slots), vocab] after each slot's last new token.
	Extend(slots []int, tokens [][]int32) (*torch.Tensor, error)
	// Fork copies the cached tokens of src into each of dsts.
	Fork(src int, dsts ...int) error
	// Reset empties a slot.
	Reset(slot int)
	// StopTokenIDs are the default stop ids (the model's eos ids).
	StopTokenIDs() []int
}

// ModelBackend runs a model.Model over its own KV cache, its decode steps through a
// model.StaticDecoder (static.go).
type ModelBackend struct {
	M     *model.Model
	Cache *model.KVCache
	// Warn receives the backend's warnings (a failed CUDA graph capture, once); nil: the standard
	// logger.
	Warn func(msg string)

	stops  []int
	static *model.StaticDecoder
	eager  bool // SetStaticStep(false)
}

// NewModelBackend allocates a KV cache of slots sequences of up to maxLen tokens for m. The
// default stop ids are the model's eos ids (config.json and generation_config.json) plus extra
// (pass the tokenizer's EOSIDs: chat end tokens such as <|im_end|>). Run on the torch thread;
// Close frees the cache.
func NewModelBackend(m *model.Model, slots, maxLen int, extra ...int) (*ModelBackend, error) {
	if m == nil {
		return nil, fmt.Errorf("rollout: nil model")
	}
	c, err := m.NewKVCache(slots, maxLen)
	if err != nil {
		return nil, fmt.Errorf("rollout: %w", err)
	}
	stops := model.StopTokenIDs(m.Config, m.Generation)
	seen := map[int]bool{}
	for _, id := range stops {
		seen[id] = true
	}
	for _, id := range extra {
		if !seen[id] && id >= 0 && id < m.Config.VocabSize {
			seen[id] = true
			stops = append(stops, id)
		}
	}
	b := &ModelBackend{M: m, Cache: c, stops: stops}
	if err := b.newStatic(); err != nil {
		c.Close()
		return nil, err
	}
	return b, nil
}

// Vocab is the model's vocab_size (the width of its logits).
func (b *ModelBackend) Vocab() int { return b.M.Config.VocabSize }

// Slots is the number of cache slots.
func (b *ModelBackend) Slots() int { return b.Cache.Slots() }

// MaxLen is the cache length per slot.
func (b *ModelBackend) MaxLen() int { return b.Cache.MaxLen }

// Extend runs model.Model.Extend on the cache.
func (b *ModelBackend) Extend(slots []int, tokens [][]int32) (*torch.Tensor, error) {
	return b.M.Extend(b.Cache, slots, tokens)
}

// Fork copies a slot's cache into others.
func (b *ModelBackend) Fork(src int, dsts ...int) error { return b.Cache.Fork(src, dsts...) }

// Reset empties a slot.
func (b *ModelBackend) Reset(slot int) { b.Cache.Reset(slot) }

// StopTokenIDs are the model's eos ids plus the extra ids given to NewModelBackend.
func (b *ModelBackend) StopTokenIDs() []int { return b.stops }

// Close frees the static decoder and the KV cache (not the model).
func (b *ModelBackend) Close() {
	if b.static != nil {
		b.static.Close()
	}
	b.Cache.Close()
}
