package serve

import (
	"fmt"
	"slices"

	"github.com/mtgrpo/mtgrpo/rollout"
	"github.com/mtgrpo/mtgrpo/torch"
)

// PrefixCache is a rollout.Backend that keeps the KV cache of finished calls, so that the next
// call of a conversation, whose prompt extends a finished call's prompt and output, is prefilled
// from where that call stopped instead of from its first token. The backend below has Slots +
// Parked slots: the engine sees the first Slots; the others hold parked caches.
//
// It works below the engine, from the calls the engine makes: it tracks the tokens each slot
// holds (Extend, Fork, Reset). When the engine resets a slot whose tokens start with a prompt
// that Retain named (a finished call's slot being freed), the slot's cache is copied into a
// parking slot first (the least recently used one is dropped when all are taken). When the
// engine extends an empty slot with a prompt that starts with a parked cache's tokens, the
// parked cache is moved into the slot (its parking slot is free again) and only the rest of the
// prompt is run through the model.
// A slot the engine empties right after copying it elsewhere (a running sequence moved to a lower
// slot) is not parked: its tokens live on in the copy.
//
// Parked caches hold the model's keys and values: Clear drops them when the weights change.
// Every method runs on the torch thread.
type PrefixCache struct {
	b      rollout.Backend
	n      int
	hist   [][]int32 // tokens cached in each slot of b
	parked []*parkedCache
	retain [][]int32
	moved  int // the source of the last Fork, until the next call
	clock  int64
	stats  PrefixStats
}

type parkedCache struct {
	slot int
	ids  []int32
	used int64
}

// PrefixStats counts the cache's work.
type PrefixStats struct {
	// Hits is how many prompts started from a parked cache; Reused the prompt tokens not run
	// again thanks to them; Parked the caches parked; Dropped those dropped for room.
	Hits, Reused, Parked, Dropped int
}

// NewPrefixCache wraps b, keeping its last parked slots for parked caches.
func NewPrefixCache(b rollout.Backend, parked int) (*PrefixCache, error) {
	if parked < 1 || parked >= b.Slots() {
		return nil, fmt.Errorf("serve: %d parking slots of a backend of %d slots: want 1 to %d", parked, b.Slots(), b.Slots()-1)
	}
	c := &PrefixCache{b: b, n: b.Slots() - parked, hist: make([][]int32, b.Slots()), moved: -1}
	for s := c.n; s < b.Slots(); s++ {
		c.parked = append(c.parked, &parkedCache{slot: s})
	}
	return c, nil
}

// Vocab, MaxLen and StopTokenIDs are the wrapped backend's.
func (c *PrefixCache) Vocab() int          { return c.b.Vocab() }
func (c *PrefixCache) MaxLen() int         { return c.b.MaxLen() }
func (c *PrefixCache) StopTokenIDs() []int { return c.b.StopTokenIDs() }

// Slots is what the engine may use: the wrapped backend's less the parking slots.
func (c *PrefixCache) Slots() int { return c.n }

// Stats returns the counters so far.
func (c *PrefixCache) Stats() PrefixStats { return c.stats }

// Retain asks for the cache of the sequence whose prompt is prompt to be parked when its slot is
// freed (once).
func (c *PrefixCache) Retain(prompt []int32) { c.retain = append(c.retain, prompt) }

// Forget withdraws a Retain (the call was aborted).
func (c *PrefixCache) Forget(prompt []int32) {
	for i, p := range c.retain {
		if slices.Equal(p, prompt) {
			c.retain = slices.Delete(c.retain, i, i+1)
			return
		}
	}
}

// Clear drops every parked cache (after a weight update) and pending Retain.
func (c *PrefixCache) Clear() {
	for _, p := range c.parked {
		if p.ids != nil {
			c.b.Reset(p.slot)
			c.hist[p.slot] = nil
			p.ids = nil
		}
	}
	c.retain = nil
}

// Extend runs the engine's step, starting fresh prompts from a parked cache when one is a prefix.
func (c *PrefixCache) Extend(slots []int, tokens [][]int32) (*torch.Tensor, error) {
	c.moved = -1
	run, cloned := tokens, false
	for i, s := range slots {
		if s < 0 || s >= c.n {
			return nil, fmt.Errorf("serve: slot %d is outside the engine's %d", s, c.n)
		}
		if len(c.hist[s]) > 0 {
			continue
		}
		p := c.longest(tokens[i])
		if p == nil {
			continue
		}
		if err := c.b.Fork(p.slot, s); err != nil {
			return nil, err
		}
		c.hist[s] = p.ids
		// The conversation has moved on: its next call extends this one's cache, which will be
		// parked in turn. The parking slot is free again.
		c.b.Reset(p.slot)
		c.hist[p.slot], p.ids = nil, nil
		if !cloned {
			run, cloned = slices.Clone(tokens), true
		}
		run[i] = tokens[i][len(c.hist[s]):]
		c.stats.Hits++
		c.stats.Reused += len(c.hist[s])
	}
	out, err := c.b.Extend(slots, run)
	if err != nil {
		return nil, err
	}
	for i, s := range slots {
		c.hist[s] = append(c.hist[s], run[i]...)
	}
	return out, nil
}

// longest is the parked cache whose tokens are the longest proper prefix of prompt.
func (c *PrefixCache) longest(prompt []int32) *parkedCache {
	var best *parkedCache
	for _, p := range c.parked {
		if p.ids != nil && len(p.ids) < len(prompt) && (best == nil || len(p.ids) > len(best.ids)) && hasPrefix(prompt, p.ids) {
			best = p
		}
	}
	return best
}

// Fork copies a slot's cache and its tokens.
func (c *PrefixCache) Fork(src int, dsts ...int) error {
	if err := c.b.Fork(src, dsts...); err != nil {
		return err
	}
	for _, d := range dsts {
		c.hist[d] = slices.Clone(c.hist[src])
	}
	c.moved = src
	return nil
}

// Reset empties a slot, parking its cache first when Retain asked for it.
func (c *PrefixCache) Reset(slot int) {
	moved := c.moved == slot
	c.moved = -1
	if h := c.hist[slot]; len(h) > 0 && !moved {
		for i, p := range c.retain {
			if hasPrefix(h, p) {
				c.retain = slices.Delete(c.retain, i, i+1)
				c.park(slot)
				break
			}
		}
	}
	c.b.Reset(slot)
	c.hist[slot] = nil
}

// park copies slot's cache into the least recently used parking slot. A failed copy parks
// nothing: the next call is prefilled in full.
func (c *PrefixCache) park(slot int) {
	p := c.parked[0]
	for _, q := range c.parked[1:] {
		if q.ids == nil && p.ids != nil || (q.ids == nil) == (p.ids == nil) && q.used < p.used {
			p = q
		}
	}
	if p.ids != nil {
		c.stats.Dropped++
	}
	if err := c.b.Fork(slot, p.slot); err != nil {
		c.b.Reset(p.slot)
		p.ids = nil
		return
	}
	c.clock++
	p.ids, p.used = slices.Clone(c.hist[slot]), c.clock
	c.hist[p.slot] = p.ids
	c.stats.Parked++
}
