package tokenizer

import (
	"fmt"
	"sync"
	"unicode/utf8"
)

// bpe is the byte-pair-encoding model of a tokenizer.json ("model": {"type": "BPE"}).
// Merging follows Hugging Face's Word::merge_all: a min-heap of candidate merges ordered by
// (rank, position), lazily invalidated, so a piece of n symbols costs O(n log n) rather than
// the O(n^2) of the textbook loop (a 50,000-character piece: milliseconds, not seconds).
type bpe struct {
	vocab  map[string]int32
	tokens []string // id -> token; "" where an id has no token
	merges map[uint64]merge

	ignoreMerges bool   // a piece that is itself in the vocabulary is one token (Llama 3)
	unk          int32  // id of unk_token, or -1
	fuseUnk      bool   // consecutive unknown characters become one unk
	byteFallback bool   // unknown characters become <0xXX> byte tokens when the vocab has them
	prefix       string // continuing_subword_prefix
	suffix       string // end_of_word_suffix

	// byteIDs[b] is the id of the byte-level rune for byte b, or -1. Used when the
	// pre-tokenizer's final ByteLevel step is folded into the model (see pipeline).
	byteIDs [256]int32

	cache wordCache
}

type merge struct{ rank, id int32 }

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

// symbol is one node of the doubly linked list a word is merged in. size == 0 marks a
// symbol that was merged into its left neighbour.
type symbol struct {
	id         int32
	prev, next int32
	size       int32
}

// candidate is a possible merge of symbols[pos] with its right neighbour.
type candidate struct{ rank, pos, id int32 }

func (a candidate) less(b candidate) bool {
	return a.rank < b.rank || a.rank == b.rank && a.pos < b.pos
}

// workspace holds the per-call scratch memory of a merge, pooled across calls.
type workspace struct {
	syms []symbol
	heap []candidate
}

var workspaces = sync.Pool{New: func() any { return new(workspace) }}

// encodePiece appends the ids of one pre-tokenized piece. byteInput says the piece is raw
// text whose bytes still have to be mapped to the byte-level alphabet.
func (m *bpe) encodePiece(dst []int, piece string, byteInput bool) []int {
	if piece == "" {
		return dst
	}
	if len(piece) == 1 && byteInput && m.byteIDs[piece[0]] >= 0 && m.prefix == "" && m.suffix == "" {
		return append(dst, int(m.byteIDs[piece[0]])) // one byte: nothing to merge or cache
	}
	cacheable := len(piece) < maxCachedPiece
	if cacheable {
		if ids, ok := m.cache.get(piece); ok {
			for _, id := range ids {
				dst = append(dst, int(id))
			}
			return dst
		}
	}
	start := len(dst)
	if id, ok := m.wholeWord(piece, byteInput); ok {
		dst = append(dst, int(id))
	} else {
		ws := workspaces.Get().(*workspace)
		if byteInput {
			m.initBytes(ws, piece)
		} else {
			m.initChars(ws, piece)
		}
		if len(ws.syms) <= smallWord {
			dst = m.mergeSmall(ws, dst)
		} else {
			m.mergeAll(ws)
			for i := 0; i >= 0 && i < len(ws.syms); i = int(ws.syms[i].next) {
				dst = append(dst, int(ws.syms[i].id))
			}
		}
		workspaces.Put(ws)
	}
	if cacheable {
		m.cache.put(piece, dst[start:])
	}
	return dst
}

// wholeWord is the ignore_merges rule: a piece that is itself a vocabulary entry is that
// one token, whatever the merges would make of it.
func (m *bpe) wholeWord(piece string, byteInput bool) (int32, bool) {
	if !m.ignoreMerges {
		return 0, false
	}
	if !byteInput {
		id, ok := m.vocab[piece]
		return id, ok
	}
	var stack [128]byte
	buf := stack[:0]
	if 2*len(piece) > len(stack) {
		buf = make([]byte, 0, 2*len(piece))
	}
	buf = appendByteLevel(buf, piece)
	id, ok := m.vocab[string(buf)]
	return id, ok
}

func appendByteLevel(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		dst = append(dst, byteToUTF8[s[i]]...)
	}
	return dst
}

// initBytes makes one symbol per byte of a raw piece (byte-level models).
func (m *bpe) initBytes(ws *workspace, piece string) {
	ws.syms = ws.syms[:0]
	if m.prefix != "" || m.suffix != "" {
		m.initChars(ws, byteLevelString(piece))
		return
	}
	for i := 0; i < len(piece); i++ {
		id := m.byteIDs[piece[i]]
		if id < 0 {
			// The vocabulary lacks this byte: take the general path for its unk rules.
			m.initChars(ws, byteLevelString(piece))
			return
		}
		ws.syms = append(ws.syms, symbol{id: id, size: 1})
	}
	linkSymbols(ws.syms)
}

// initChars makes one symbol per character, as BPE::merge_word does: with the subword
// prefix on all but the first, the suffix on the last, byte fallback, then unk.
func (m *bpe) initChars(ws *workspace, w string) {
	ws.syms = ws.syms[:0]
	unkID, unkSize := int32(-1), int32(0)
	flushUnk := func() {
		if unkID >= 0 {
			ws.syms = append(ws.syms, symbol{id: unkID, size: unkSize})
			unkID = -1
		}
	}
	for i := 0; i < len(w); {
		_, n := utf8.DecodeRuneInString(w[i:])
		s := w[i : i+n]
		if i > 0 && m.prefix != "" {
			s = m.prefix + s
		}
		if i+n == len(w) && m.suffix != "" {
			s += m.suffix
		}
		i += n
		if id, ok := m.vocab[s]; ok {
			flushUnk()
			ws.syms = append(ws.syms, symbol{id: id, size: int32(n)})
			continue
		}
		if m.byteFallback && m.appendByteTokens(ws, s) {
			continue
		}
		if m.unk < 0 {
			continue // no unk token: the character is dropped, as in the Rust model
		}
		if unkID >= 0 && m.fuseUnk {
			unkSize += int32(n)
			continue
		}
		flushUnk()
		unkID, unkSize = m.unk, int32(n)
	}
	flushUnk()
	linkSymbols(ws.syms)
}

func (m *bpe) appendByteTokens(ws *workspace, s string) bool {
	ids := make([]int32, 0, len(s))
	for i := 0; i < len(s); i++ {
		id, ok := m.vocab[fmt.Sprintf("<0x%02X>", s[i])]
		if !ok {
			return false
		}
		ids = append(ids, id)
	}
	for _, id := range ids {
		ws.syms = append(ws.syms, symbol{id: id, size: 1})
	}
	return true
}

func linkSymbols(syms []symbol) {
	for i := range syms {
		syms[i].prev = int32(i - 1)
		syms[i].next = int32(i + 1)
	}
	if len(syms) > 0 {
		syms[len(syms)-1].next = -1
	}
}

// smallWord is the symbol count up to which mergeSmall beats the heap.
const smallWord = 48

// mergeSmall gives the same result as mergeAll (lowest rank first, leftmost among equal
// ranks) for short words with a linear scan over an array of pair ranks: for the typical
// word of a few symbols this avoids the heap's bookkeeping. It appends the final ids.
func (m *bpe) mergeSmall(ws *workspace, dst []int) []int {
	n := len(ws.syms)
	var idsBuf, rankBuf, newBuf [smallWord]int32
	ids, ranks, newIDs := idsBuf[:n], rankBuf[:max(n-1, 0)], newBuf[:max(n-1, 0)]
	for i := range ids {
		ids[i] = ws.syms[i].id
	}
	pair := func(i int) {
		if mg, ok := m.merges[pairKey(ids[i], ids[i+1])]; ok {
			ranks[i], newIDs[i] = mg.rank, mg.id
		} else {
			ranks[i] = -1
		}
	}
	for i := range ranks {
		pair(i)
	}
	for {
		best := -1
		for i, r := range ranks {
			if r >= 0 && (best < 0 || r < ranks[best]) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		ids[best] = newIDs[best]
		ids = append(ids[:best+1], ids[best+2:]...)
		ranks = append(ranks[:best], ranks[best+1:]...)
		newIDs = append(newIDs[:best], newIDs[best+1:]...)
		if best > 0 {
			pair(best - 1)
		}
		if best < len(ranks) {
			pair(best)
		}
	}
	for _, id := range ids {
		dst = append(dst, int(id))
	}
	return dst
}

// mergeAll applies merges lowest rank first (leftmost among equal ranks) until none apply.
func (m *bpe) mergeAll(ws *workspace) {
	syms := ws.syms
	h := ws.heap[:0]
	for i := 0; i+1 < len(syms); i++ {
		if mg, ok := m.merges[pairKey(syms[i].id, syms[i+1].id)]; ok {
			h = heapPush(h, candidate{mg.rank, int32(i), mg.id})
		}
	}
	for len(h) > 0 {
		var top candidate
		top, h = heapPop(h)
		cur := &syms[top.pos]
		if cur.size == 0 || cur.next < 0 {
			continue
		}
		ri := cur.next
		right := &syms[ri]
		// Skip entries made stale by an earlier merge on either side.
		if mg, ok := m.merges[pairKey(cur.id, right.id)]; !ok || mg.id != top.id {
			continue
		}
		cur.id = top.id
		cur.size += right.size
		cur.next = right.next
		right.size = 0
		if cur.next >= 0 {
			syms[cur.next].prev = top.pos
		}
		if cur.prev >= 0 {
			if mg, ok := m.merges[pairKey(syms[cur.prev].id, cur.id)]; ok {
				h = heapPush(h, candidate{mg.rank, cur.prev, mg.id})
			}
		}
		if cur.next >= 0 {
			if mg, ok := m.merges[pairKey(cur.id, syms[cur.next].id)]; ok {
				h = heapPush(h, candidate{mg.rank, top.pos, mg.id})
			}
		}
	}
	ws.heap = h
}

func heapPush(h []candidate, c candidate) []candidate {
	h = append(h, c)
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !h[i].less(h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
	return h
}

func heapPop(h []candidate) (candidate, []candidate) {
	top := h[0]
	n := len(h) - 1
	h[0] = h[n]
	h = h[:n]
	for i := 0; ; {
		l, r, min := 2*i+1, 2*i+2, i
		if l < n && h[l].less(h[min]) {
			min = l
		}
		if r < n && h[r].less(h[min]) {
			min = r
		}
		if min == i {
			break
		}
		h[i], h[min] = h[min], h[i]
		i = min
	}
	return top, h
}
