package rollout

import (
	"math"
	"sync"
	"testing"

	"github.com/mtgrpo/mtgrpo/tokenizer"
	"github.com/mtgrpo/mtgrpo/torch"
)

// onTorch runs fn on the torch thread; fn reports with t.Error (never t.Fatal) or returns an
// error, which fails the test.
func onTorch(t *testing.T, fn func() error) {
	t.Helper()
	if err := torch.Run(fn); err != nil {
		t.Fatal(err)
	}
}

var tinyTok = sync.OnceValues(func() (*tokenizer.Tokenizer, error) {
	dir, err := mkdirTemp()
	if err != nil {
		return nil, err
	}
	if err := tokenizer.WriteTiny(dir); err != nil {
		return nil, err
	}
	return tokenizer.Load(dir)
})

// tiny returns the tiny byte-level tokenizer: ids 0..255 are the bytes themselves.
func tiny(t *testing.T) *tokenizer.Tokenizer {
	t.Helper()
	tok, err := tinyTok()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// oneHot is logits with big at id and 0 elsewhere.
func oneHot(v, id int, big float32) []float32 {
	row := make([]float32, v)
	row[id] = big
	return row
}

// nextPlusOne is a mock whose greedy continuation of a history is its last token + 1 (mod v).
func nextPlusOne(v int) func([]int32) []float32 {
	return func(h []int32) []float32 { return oneHot(v, (int(h[len(h)-1])+1)%v, 10) }
}

// bytesOf is the tiny tokenizer's ids of s, one per byte.
func bytesOf(s string) []int32 {
	ids := make([]int32, len(s))
	for i := 0; i < len(s); i++ {
		ids[i] = int32(s[i])
	}
	return ids
}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func sameIDs(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
