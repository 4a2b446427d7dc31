package tokenizer

import (
	"hash/maphash"
	"strings"
	"sync/atomic"
)

// maxCachedPiece is the longest piece (in bytes) kept in the word cache, as in the Rust BPE.
const maxCachedPiece = 256

// wordCache maps frequent pieces to their ids: a direct-mapped table of immutable entries
// behind atomic pointers, so EncodeBatch goroutines read it without locks. A colliding
// piece simply replaces the entry in its slot.
type wordCache struct {
	seed  maphash.Seed
	slots []atomic.Pointer[cacheEntry]
}

type cacheEntry struct {
	piece string
	ids   []int32
}

const cacheSlots = 1 << 15

func newWordCache() wordCache {
	return wordCache{seed: maphash.MakeSeed(), slots: make([]atomic.Pointer[cacheEntry], cacheSlots)}
}

func (c *wordCache) slot(s string) *atomic.Pointer[cacheEntry] {
	return &c.slots[maphash.String(c.seed, s)&(cacheSlots-1)]
}

func (c *wordCache) get(s string) ([]int32, bool) {
	if e := c.slot(s).Load(); e != nil && e.piece == s {
		return e.ids, true
	}
	return nil, false
}

func (c *wordCache) put(s string, ids []int) {
	cp := make([]int32, len(ids))
	for i, id := range ids {
		cp[i] = int32(id)
	}
	c.slot(s).Store(&cacheEntry{piece: strings.Clone(s), ids: cp})
}
