package model

import (
	"fmt"

	"github.com/mtgrpo/mtgrpo/torch"
)

// Batch is a set of token sequences laid out for one training or scoring forward pass.
//
// Padded (the default): one row per sequence, right-padded to the longest, [B, T]; a sequence
// attends causally to its own tokens only (through a [B, 1, T, T] mask unless all lengths are
// equal). Packed: all sequences end to end in one row, [1, ΣT], with position ids restarting at 0
// for each sequence and causal attention within each sequence (attended segment by segment, so no
// mask at all and no compute spent on padding). Packed with a shared prefix (NewSharedBatch): the
// sequences' common first tokens appear once, followed by each sequence's remainder; every
// remainder attends to the prefix and causally to itself, so the prefix is computed once for all
// sequences, exactly (causal attention makes its states independent of what follows). Per-token
// results (log-probs, entropies) come back as float32
// tensors in the same [rows, cols] layout; Tensor and Values convert between that layout and
// per-sequence Go slices.
type Batch struct {
	Seqs   [][]int32
	Packed bool
	// ScoreFrom, when set, holds per sequence the index of the first token to score: log-probs and
	// entropies of earlier tokens (a prompt the loss masks anyway) are left 0 and the vocabulary-
	// sized head is not computed for them. nil scores every token from the second on.
	ScoreFrom []int

	// Prefix is the number of leading tokens all sequences share and the layout holds once
	// (NewSharedBatch); 0 otherwise.
	Prefix int

	rows, cols int
	row, start []int   // where sequence i sits: row, first column (of its remainder after Prefix)
	ids        []int64 // [rows*cols], 0 at padding
	pos        []int32 // [rows*cols], position ids (0 at padding)
}

// NewBatch lays out seqs (each non-empty) padded or packed.
func NewBatch(seqs [][]int32, packed bool) (*Batch, error) {
	if len(seqs) == 0 {
		return nil, fmt.Errorf("model: empty batch")
	}
	b := &Batch{Seqs: seqs, Packed: packed, row: make([]int, len(seqs)), start: make([]int, len(seqs))}
	for i, s := range seqs {
		if len(s) == 0 {
			return nil, fmt.Errorf("model: batch sequence %d is empty", i)
		}
		if packed {
			b.row[i], b.start[i] = 0, b.cols
			b.cols += len(s)
		} else {
			b.row[i] = i
			b.cols = max(b.cols, len(s))
		}
	}
	b.rows = 1
	if !packed {
		b.rows = len(seqs)
	}
	b.fill()
	return b, nil
}

// NewSharedBatch lays seqs out packed in one row with their first prefix tokens, which every
// sequence must share, stored and computed once: [prefix, rest of seq 0, rest of seq 1, ...]. Each
// sequence must be longer than the prefix. Scoring (ScoreFrom) must start after the prefix: its
// positions belong to every sequence at once.
func NewSharedBatch(seqs [][]int32, prefix int) (*Batch, error) {
	if len(seqs) == 0 {
		return nil, fmt.Errorf("model: empty batch")
	}
	if prefix < 0 {
		return nil, fmt.Errorf("model: shared prefix %d must be >= 0", prefix)
	}
	b := &Batch{Seqs: seqs, Packed: true, Prefix: prefix, rows: 1, cols: prefix,
		row: make([]int, len(seqs)), start: make([]int, len(seqs))}
	for i, s := range seqs {
		if len(s) <= prefix {
			return nil, fmt.Errorf("model: batch sequence %d has %d tokens, not more than the shared prefix of %d", i, len(s), prefix)
		}
		for t := 0; t < prefix; t++ {
			if s[t] != seqs[0][t] {
				return nil, fmt.Errorf("model: batch sequence %d differs from sequence 0 at token %d, inside the shared prefix of %d", i, t, prefix)
			}
		}
		b.start[i] = b.cols
		b.cols += len(s) - prefix
	}
	b.fill()
	return b, nil
}

// SharedPrefix is the length of the longest prefix all seqs have in common (at most each one's
// length minus one, so that every sequence keeps a token of its own).
func SharedPrefix(seqs [][]int32) int {
	if len(seqs) == 0 {
		return 0
	}
	n := len(seqs[0]) - 1
	for _, s := range seqs[1:] {
		n = min(n, len(s)-1)
		for t := 0; t < n; t++ {
			if s[t] != seqs[0][t] {
				n = t
				break
			}
		}
	}
	return max(n, 0)
}

// fill writes the ids and position ids of the layout.
func (b *Batch) fill() {
	b.ids = make([]int64, b.rows*b.cols)
	b.pos = make([]int32, b.rows*b.cols)
	for i, s := range b.Seqs {
		for t, id := range s {
			o := b.at(i, t)
			b.ids[o] = int64(id)
			b.pos[o] = int32(t)
		}
	}
}

// at is the flat index of token t of sequence i in the layout.
func (b *Batch) at(i, t int) int {
	if t < b.Prefix {
		return t
	}
	return b.row[i]*b.cols + b.start[i] + t - b.Prefix
}

// Shape is the [rows, cols] layout of the batch's per-token tensors.
func (b *Batch) Shape() (rows, cols int) { return b.rows, b.cols }

// Tokens is the number of real (non-padding) tokens in the layout (a shared prefix counts once).
func (b *Batch) Tokens() int {
	n := b.Prefix
	for _, s := range b.Seqs {
		n += len(s) - b.Prefix
	}
	return n
}

// full reports a batch whose rows are single sequences with no padding: plain causal attention.
func (b *Batch) full() bool {
	if b.Packed && len(b.Seqs) > 1 {
		return false
	}
	for _, s := range b.Seqs {
		if len(s) != b.cols {
			return false
		}
	}
	return true
}

// paddingMask builds, on dev, the bool attention mask [rows, 1, cols, cols] of a padded batch: token
// i of row r attends to token j iff j <= i and j < len(r). Padding queries (i >= len) still see
// token 0, so no softmax row is empty (their outputs are never read). Built from the lengths on the
// device: no host-side [rows, cols, cols] array.
func (b *Batch) paddingMask(dev torch.Device) *torch.Tensor {
	return torch.Scoped(func() *torch.Tensor {
		n := float64(b.cols)
		i := torch.Arange(0, n, 1, torch.Int64, dev).View(int64(b.cols), 1)
		j := torch.Arange(0, n, 1, torch.Int64, dev).View(1, int64(b.cols))
		lens := make([]int64, b.rows)
		for k, s := range b.Seqs {
			lens[k] = int64(len(s))
		}
		l := torch.FromSlice(lens).ToDevice(dev).View(int64(b.rows), 1, 1, 1)
		return j.Le(i).And(j.Lt(l)) // [cols, cols] & [rows, 1, 1, cols] → [rows, 1, cols, cols]
	})
}

// scored lists, for every scored token (one with a predecessor in its sequence, from ScoreFrom on),
// the flat index of the position that predicts it, the token itself, and its own flat index (where
// its log-prob goes).
func (b *Batch) scored() (pred, target, at []int64) {
	for i, s := range b.Seqs {
		from := 1
		if b.ScoreFrom != nil {
			from = max(1, b.ScoreFrom[i])
		}
		for t := from; t < len(s); t++ {
			pred = append(pred, int64(b.at(i, t-1)))
			target = append(target, int64(s[t]))
			at = append(at, int64(b.at(i, t)))
		}
	}
	return pred, target, at
}

// checkIDs refuses token ids outside the vocabulary, naming the sequence and position, and a
// ScoreFrom of the wrong length.
func (b *Batch) checkIDs(vocab int) error {
	if b.ScoreFrom != nil && len(b.ScoreFrom) != len(b.Seqs) {
		return fmt.Errorf("model: ScoreFrom has %d entries for %d sequences", len(b.ScoreFrom), len(b.Seqs))
	}
	if b.Prefix > 0 && len(b.Seqs) > 1 {
		for i := range b.Seqs {
			if b.ScoreFrom == nil || b.ScoreFrom[i] <= b.Prefix {
				return fmt.Errorf("model: sequence %d is scored inside the shared prefix of %d tokens (set ScoreFrom past it)", i, b.Prefix)
			}
		}
	}
	for i, s := range b.Seqs {
		for t, id := range s {
			if id < 0 || int(id) >= vocab {
				return fmt.Errorf("model: sequence %d, token %d: id %d is outside the vocabulary [0, %d)", i, t, id, vocab)
			}
		}
	}
	return nil
}

// Tensor lays per-token values out as a float32 [rows, cols] tensor on dev (0 at padding): values[i]
// must have one entry per token of sequence i. A shared prefix takes sequence 0's values. Use it for loss masks, advantages and old log-probs.
func (b *Batch) Tensor(values [][]float32, dev torch.Device) (*torch.Tensor, error) {
	if len(values) != len(b.Seqs) {
		return nil, fmt.Errorf("model: %d value rows for %d sequences", len(values), len(b.Seqs))
	}
	flat := make([]float32, b.rows*b.cols)
	for i, v := range values {
		if len(v) != len(b.Seqs[i]) {
			return nil, fmt.Errorf("model: sequence %d has %d tokens but %d values", i, len(b.Seqs[i]), len(v))
		}
		for t, x := range v {
			if t >= b.Prefix || i == 0 {
				flat[b.at(i, t)] = x
			}
		}
	}
	var t *torch.Tensor
	err := torch.Do(func() error {
		t = torch.Scoped(func() *torch.Tensor { return torch.FromSlice(flat, int64(b.rows), int64(b.cols)).ToDevice(dev) })
		return nil
	})
	return t, err
}

// Values reads a [rows, cols] per-token tensor back as one slice per sequence.
func (b *Batch) Values(t *torch.Tensor) ([][]float32, error) {
	var flat []float32
	if err := torch.Do(func() error { d := t.Detach(); flat = d.Float32s(); d.Free(); return nil }); err != nil {
		return nil, err
	}
	if len(flat) != b.rows*b.cols {
		return nil, fmt.Errorf("model: tensor has %d elements, batch layout is %dx%d", len(flat), b.rows, b.cols)
	}
	out := make([][]float32, len(b.Seqs))
	for i, s := range b.Seqs {
		out[i] = make([]float32, len(s))
		for t := range s {
			out[i][t] = flat[b.at(i, t)]
		}
	}
	return out, nil
}
