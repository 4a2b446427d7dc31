package tokenizer

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// microBPE: vocab a b c ab bc abc, merges (b c) rank 0, (a b) rank 1, (a bc) rank 2.
func microBPE(t *testing.T) *Tokenizer {
	t.Helper()
	tk, err := FromJSON([]byte(`{"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "c": 2, "ab": 3, "bc": 4, "abc": 5},
		"merges": ["b c", "a b", "a bc"]}}`))
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func TestMergeOrderByHand(t *testing.T) {
	tk := microBPE(t)
	cases := []struct {
		in   string
		want []int
	}{
		// pairs (a b)=1, (b c)=0: bc merges first, then (a bc)=2 gives abc.
		{"abc", []int{5}},
		// (a b) at 0 and 2, equal rank: leftmost first, then the other; (ab ab) has no merge.
		{"abab", []int{3, 3}},
		// (b c)=0 beats (a b)=1 in "abca": a bc a, then (a bc) -> abc, a.
		{"abca", []int{5, 0}},
		// no pre-tokenizer: the space is not in the vocab and there is no unk, so it is dropped.
		{"c b", []int{2, 1}},
	}
	for _, c := range cases {
		if got := tk.Encode(c.in, false); !slices.Equal(got, c.want) {
			t.Errorf("%q: got %v want %v", c.in, got, c.want)
		}
	}
}

// mergeSmall (linear scan) and mergeAll (heap) must agree on every word; random words over a
// small alphabet hit many competing merges of equal rank.
func TestMergeSmallEqualsHeap(t *testing.T) {
	tk, err := FromJSON(tinyTokenizerJSON(t))
	if err != nil {
		t.Fatal(err)
	}
	m := tk.model
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "n", "s", "e", "t", "h", " ", "th", "e ", "is"}
	for i := 0; i < 3000; i++ {
		var b strings.Builder
		n := 1 + r.IntN(20)
		for j := 0; j < n; j++ {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		word := b.String()
		ws := &workspace{}
		m.initBytes(ws, word)
		if len(ws.syms) > smallWord {
			continue
		}
		small := m.mergeSmall(ws, nil)
		m.initBytes(ws, word)
		m.mergeAll(ws)
		var heap []int
		for k := 0; k >= 0 && k < len(ws.syms); k = int(ws.syms[k].next) {
			heap = append(heap, int(ws.syms[k].id))
		}
		if !slices.Equal(small, heap) {
			t.Fatalf("%q: linear %v, heap %v", word, small, heap)
		}
	}
}

// A 50,000-character piece must take milliseconds (the quadratic loop takes seconds).
func TestLongPieceIsFast(t *testing.T) {
	tk, err := FromJSON(tinyTokenizerJSON(t))
	if err != nil {
		t.Fatal(err)
	}
	res := testing.Benchmark(func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			tk.Encode(strings.Repeat("the", 17000)[:50000], false)
		}
	})
	if per := res.NsPerOp(); per > 500e6 {
		t.Errorf("50,000-character piece took %d ms", per/1e6)
	}
}
