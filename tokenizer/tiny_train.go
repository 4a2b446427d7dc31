package tokenizer

import "sort"

// trainBPE learns merges byte-level BPE style: the corpus is split with the Qwen pattern,
// every piece becomes its sequence of byte symbols (ids 0-255), and the most frequent
// adjacent pair is merged, numMerges times. Ties go to the smallest pair of ids, so the
// result is deterministic. Quadratic, but the built-in corpus is a few kilobytes.
func trainBPE(corpus string, numMerges int) (merges [][2]int, tokens [][]byte) {
	counts := map[string]int{}
	for _, m := range (scanner{maxDigits: 1}).find(corpus, nil) {
		counts[corpus[m.start:m.end]]++
	}
	type word struct {
		syms  []int
		count int
	}
	pieces := make([]string, 0, len(counts))
	for p := range counts {
		pieces = append(pieces, p)
	}
	sort.Strings(pieces)
	words := make([]word, len(pieces))
	for i, p := range pieces {
		syms := make([]int, len(p))
		for j := 0; j < len(p); j++ {
			syms[j] = int(p[j])
		}
		words[i] = word{syms, counts[p]}
	}
	known := map[string]int{}
	for b := 0; b < 256; b++ {
		tokens = append(tokens, []byte{byte(b)})
		known[string([]byte{byte(b)})] = b
	}
	for len(merges) < numMerges {
		pairs := map[[2]int]int{}
		for _, w := range words {
			for j := 0; j+1 < len(w.syms); j++ {
				pairs[[2]int{w.syms[j], w.syms[j+1]}] += w.count
			}
		}
		best, bestN := [2]int{}, 0
		for p, n := range pairs {
			if n > bestN || n == bestN && (p[0] < best[0] || p[0] == best[0] && p[1] < best[1]) {
				best, bestN = p, n
			}
		}
		if bestN == 0 {
			break // every piece is a single token
		}
		joined := append(append([]byte{}, tokens[best[0]]...), tokens[best[1]]...)
		id, ok := known[string(joined)]
		if !ok { // two different merges can spell the same bytes: they share one token
			id = len(tokens)
			tokens = append(tokens, joined)
			known[string(joined)] = id
		}
		merges = append(merges, best)
		for i := range words {
			words[i].syms = applyMerge(words[i].syms, best, id)
		}
	}
	return merges, tokens
}

func applyMerge(syms []int, pair [2]int, id int) []int {
	out := syms[:0]
	for j := 0; j < len(syms); j++ {
		if j+1 < len(syms) && syms[j] == pair[0] && syms[j+1] == pair[1] {
			out = append(out, id)
			j++
			continue
		}
		out = append(out, syms[j])
	}
	return out
}
