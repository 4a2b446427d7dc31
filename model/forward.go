package model

import (
	"fmt"

	"github.com/mtgrpo/mtgrpo/torch"
)

// ForwardOptions configure LogProbs and Train.
type ForwardOptions struct {
	// Temperature divides the logits before the softmax (the sampler's temperature, so that training
	// log-probs match the distribution the tokens were sampled from). 0 means 1.
	Temperature float64
	// Entropy also returns the per-token entropy of the (tempered) predictive distribution.
	Entropy bool
	// ChunkTokens is how many tokens' logits are materialised at once in the head. 0 picks about
	// 64M logits (256 MB of float32): 441 tokens at Qwen's 151,936 vocabulary.
	ChunkTokens int
	// Checkpoint (Train only) recomputes each decoder layer in the backward pass instead of keeping
	// its activations: memory for one layer's activations plus one [tokens, hidden] input per layer.
	Checkpoint bool
	// HeadMemoryBudget (Train only) decides between two ways of training the head. When the pass's
	// [scored tokens, vocab] float32 logits take at most this many bytes, Train computes the head
	// once, with grad, and keeps what its backward needs (one such [tokens, vocab] float32 tensor,
	// the log-probabilities; about three of them briefly in Backward): plain autograd, the fastest.
	// Above it, Train computes the head without grad and Backward recomputes it ChunkTokens rows at
	// a time, so that no [tokens, vocab] tensor ever exists (one more head forward: about 13 % more
	// work on a 39M-parameter model with a 32,000 vocabulary). 0 means DefaultHeadMemoryBudget;
	// negative always recomputes.
	HeadMemoryBudget int64
	// Hidden also returns the final hidden states (after the last norm) [rows, cols, hidden]; in
	// Train they carry gradients, so a value head (a PPO critic) can be trained through the model.
	Hidden bool
	// HiddenOnly (Train only, with Hidden) skips the language-model head: Output holds Hidden
	// alone, for a pass whose loss reads nothing else (a PPO critic's value head), which then
	// spends neither the head's compute nor its logits' memory.
	HiddenOnly bool
	// GradsReady (Train only), when set, is called by Backward each time a unit's gradients are
	// complete (units: see Model.Units), so that they can be reduced and dropped before the next
	// unit's are made: the last unit (the final norm and an untied head) after the head's backward,
	// then layer by layer down to the embedding (unit 0). With Checkpoint each layer's call follows
	// its own backward; without it, the layers' calls follow the one backward pass through all of
	// them. The order is the same in every pass.
	GradsReady func(unit int)
	// Weights (Train only, with Checkpoint), when set, holds each unit's weights only while the
	// pass needs them (ZeRO-3: the weights are gathered from shards): Train and Backward call
	// Gather(u) before unit u's weights are used and Release(u) once the pass is done with them
	// (in Backward, after GradsReady(u)). The calls come in the same order in every pass: Train
	// gathers the embedding, each layer in turn and the last unit; Backward releases the last
	// unit, gathers and releases each layer from the top, then gathers (untied) and releases the
	// embedding. A tied embedding stays gathered from Train's start to Backward's end (the head
	// uses it); an untied one is released after the embedding lookup.
	Weights UnitWeights
}

// UnitWeights gathers and releases a unit's weights (see ForwardOptions.Weights and Model.Units).
type UnitWeights interface {
	Gather(unit int)
	Release(unit int)
}

// DefaultHeadMemoryBudget is the HeadMemoryBudget that 0 selects: 1 GiB of float32 logits, which
// keeps the head of 8,388 scored tokens at a 32,000 vocabulary and of 1,766 at Qwen's 151,936 (an
// 8 × 1,024-token micro-batch of Qwen2.5 is recomputed: its logits would take 5 GB).
const DefaultHeadMemoryBudget int64 = 1 << 30

// keepHead reports whether a training pass scoring tokens tokens keeps the head's graph.
func (o ForwardOptions) keepHead(tokens, vocab int) bool {
	budget := o.HeadMemoryBudget
	if budget == 0 {
		budget = DefaultHeadMemoryBudget
	}
	return budget > 0 && int64(tokens)*int64(vocab)*4 <= budget
}

func (o ForwardOptions) chunk(vocab int) int {
	if o.ChunkTokens > 0 {
		return o.ChunkTokens
	}
	return max(1, (64<<20)/vocab)
}

func (o ForwardOptions) temperature() float64 {
	if o.Temperature <= 0 {
		return 1
	}
	return o.Temperature
}

// Output holds per-token results in the batch's [rows, cols] layout, float32. At the position of
// token t of a sequence, LogProbs holds log p(token_t | tokens_<t of its sequence) and Entropy the
// entropy of that predictive distribution; both are 0 at each sequence's first token and at padding.
type Output struct {
	LogProbs *torch.Tensor
	Entropy  *torch.Tensor // nil unless ForwardOptions.Entropy
	Hidden   *torch.Tensor // [rows, cols, hidden] after the final norm; nil unless ForwardOptions.Hidden
}

// inputs uploads the ids and the attention state of a batch (checked by checkIDs): plain causal when
// every row is one whole sequence, per-sequence segments when packed, a padding mask otherwise.
func (m *Model) inputs(b *Batch) (*torch.Tensor, *attention) {
	ids := torch.FromSlice(b.ids, int64(b.rows), int64(b.cols)).ToDevice(m.Device)
	if b.Packed && len(b.Seqs) > 1 {
		a := m.newAttention(b.pos, b.rows, b.cols)
		a.prefix = int64(b.Prefix)
		for i, s := range b.Seqs {
			a.segments = append(a.segments, [2]int64{int64(b.start[i]), int64(len(s) - b.Prefix)})
		}
		return ids, a
	}
	a := m.newAttention(b.pos, b.rows, b.cols)
	if !b.full() {
		a.mask = b.paddingMask(m.Device)
	}
	return ids, a
}

// layers runs x through every decoder layer; each layer's temporaries are freed as it returns.
func (m *Model) layers(x *torch.Tensor, a *attention) *torch.Tensor {
	for _, l := range m.Layers {
		in := x
		x = torch.Scoped(func() *torch.Tensor { return l.Forward(in, a) })
	}
	return x
}

// Hidden returns the final hidden states (after the last norm, as HF's last_hidden_state) [rows,
// cols, hidden] in the model dtype, without gradients.
func (m *Model) Hidden(b *Batch) (h *torch.Tensor, err error) {
	defer torch.Recover(&err)
	if err := b.checkIDs(m.Config.VocabSize); err != nil {
		return nil, err
	}
	torch.NoGrad(func() {
		h = torch.Scoped(func() *torch.Tensor {
			ids, a := m.inputs(b)
			return m.Norm.Forward(m.layers(m.embed(ids), a))
		})
	})
	return h, nil
}

// Logits returns the full float32 logits [rows, cols, vocab] without gradients. Meant for small
// models and tests: training and scoring use LogProbs and Train, which never hold more than
// ChunkTokens rows of logits.
func (m *Model) Logits(b *Batch) (logits *torch.Tensor, err error) {
	defer torch.Recover(&err)
	if err := b.checkIDs(m.Config.VocabSize); err != nil {
		return nil, err
	}
	torch.NoGrad(func() {
		logits = torch.Scoped(func() *torch.Tensor {
			ids, a := m.inputs(b)
			return m.logits(m.layers(m.embed(ids), a))
		})
	})
	return logits, nil
}

// LogProbs scores every token of the batch under the model (no gradients): old-policy and reference
// log-probs. See Output for the alignment. Only the Output tensors stay in the caller's scope.
func (m *Model) LogProbs(b *Batch, o ForwardOptions) (out *Output, err error) {
	defer torch.Recover(&err)
	if err := b.checkIDs(m.Config.VocabSize); err != nil {
		return nil, err
	}
	s := torch.NewScope()
	defer s.Close()
	torch.NoGrad(func() {
		ids, a := m.inputs(b)
		h := m.layers(m.embed(ids), a)
		out = m.head(b, h.View(-1, int64(m.Config.HiddenSize)), o)
		if o.Hidden {
			out.Hidden = m.Norm.Forward(h)
		}
	})
	s.Keep(out.tensors()...)
	return out, nil
}

// tensors lists the non-nil tensors of o.
func (o *Output) tensors() []*torch.Tensor {
	var ts []*torch.Tensor
	for _, t := range []*torch.Tensor{o.LogProbs, o.Entropy, o.Hidden} {
		if t != nil {
			ts = append(ts, t)
		}
	}
	return ts
}

// head computes log-probs (and entropies) of every scored token from pre-norm hidden states
// hflat [rows*cols, hidden], ChunkTokens rows of logits at a time, and lays them out [rows, cols].
func (m *Model) head(b *Batch, hflat *torch.Tensor, o ForwardOptions) *Output {
	pred, target, at := b.scored()
	out := &Output{LogProbs: torch.Zeros([]int64{int64(b.rows * b.cols)}, torch.Float32, m.Device)}
	if o.Entropy {
		out.Entropy = torch.Zeros([]int64{int64(b.rows * b.cols)}, torch.Float32, m.Device)
	}
	step := o.chunk(m.Config.VocabSize)
	for lo := 0; lo < len(pred); lo += step {
		hi := min(lo+step, len(pred))
		s := torch.NewScope()
		where := torch.FromSlice(at[lo:hi]).ToDevice(m.Device)
		lp, ent := m.scoreChunk(hflat, pred[lo:hi], target[lo:hi], o)
		out.LogProbs.IndexCopy_(0, where, lp)
		if o.Entropy {
			out.Entropy.IndexCopy_(0, where, ent)
		}
		s.Close()
	}
	// The flat tensors' handles go as soon as the views exist: with a graph (Train keeping the
	// head), the graph lives as long as the views, which Backward frees, not as long as the pass's
	// scope (a branch backward does not take, the entropies', keeps its saved tensors).
	lp := out.LogProbs
	out.LogProbs = lp.View(int64(b.rows), int64(b.cols))
	lp.Free()
	if o.Entropy {
		ent := out.Entropy
		out.Entropy = ent.View(int64(b.rows), int64(b.cols))
		ent.Free()
	}
	return out
}

// scoreChunk is the head on a few rows: norm → lm_head → float32 → /temperature → log_softmax,
// taken at the targets; entropy −Σ p log p when asked (nil otherwise). The logits are freed as soon
// as the log-probabilities exist (log_softmax's backward needs only its output), so a chunk holds
// one [rows, vocab] float32 tensor, not two, from there on, in backward too.
func (m *Model) scoreChunk(hflat *torch.Tensor, pred, target []int64, o ForwardOptions) (lp, ent *torch.Tensor) {
	rows := torch.FromSlice(pred).ToDevice(m.Device)
	tgt := torch.FromSlice(target).ToDevice(m.Device)
	logp := torch.Scoped(func() *torch.Tensor {
		logits := m.logits(hflat.IndexSelect(0, rows))
		if t := o.temperature(); t != 1 {
			logits = logits.DivScalar(t)
		}
		return logits.LogSoftmax(-1)
	})
	lp = logp.Gather(-1, tgt.Unsqueeze(-1)).Squeeze(-1)
	if o.Entropy {
		ent = logp.Exp().Mul(logp).Sum(false, -1).Neg()
	}
	return lp, ent
}

// checkTrainable refuses a training pass over frozen weights with a clear message (otherwise
// libtorch fails deep in backward).
func (m *Model) checkTrainable() error {
	if !m.ParameterTensors()[0].RequiresGrad() {
		return fmt.Errorf("model: weights are frozen: call SetTrainable(true) before Train")
	}
	return nil
}
