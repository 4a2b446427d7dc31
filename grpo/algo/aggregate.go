package algo

// Loss aggregation as per-token weights computed on the host. Every mode of verl's agg_loss
// becomes a weight w per trained token such that the mini-batch loss is Σ w·L over all of its
// tokens. The weights see the whole mini-batch (its token and sequence counts), so the loss of any
// split into micro-batches, or later into data-parallel ranks, adds up to the unsplit loss
// exactly; verl needs dp_size, global_batch_size and batch_num_tokens for the same effect.
// Reference: verl core_algos.py agg_loss.
//
// Deviation, on purpose: D6 (seq-mean-token-sum-norm also divides by the sequences), stated in
// doc.go.

import (
	"fmt"

	"github.com/mtgrpo/mtgrpo/internal/setting"
)

// AggMode names a loss aggregation, spelled as verl's loss_agg_mode.
type AggMode string

// Aggregation modes.
const (
	// AggTokenMean: Σ m·L / (trained tokens of the mini-batch). Every token weighs the same (DAPO).
	AggTokenMean AggMode = "token-mean"
	// AggSeqMeanTokenSum: mean over sequences of Σ_t m·L.
	AggSeqMeanTokenSum AggMode = "seq-mean-token-sum"
	// AggSeqMeanTokenMean: mean over sequences of the sequence's token mean (original GRPO).
	AggSeqMeanTokenMean AggMode = "seq-mean-token-mean"
	// AggSeqMeanTokenSumNorm: mean over sequences of Σ_t m·L / AggConfig.Norm (Dr.GRPO).
	AggSeqMeanTokenSumNorm AggMode = "seq-mean-token-sum-norm"
)

var aggModes = []AggMode{AggTokenMean, AggSeqMeanTokenSum, AggSeqMeanTokenMean, AggSeqMeanTokenSumNorm}

// ParseAggMode reads a loss_agg_mode; unknown modes are an error naming the value.
func ParseAggMode(s string) (AggMode, error) {
	return setting.Parse("loss aggregation mode", s, aggModes, nil)
}

// UnmarshalText reads a mode's name as ParseAggMode does (YAML, flags).
func (m *AggMode) UnmarshalText(b []byte) error { return setting.Decode(m, b, ParseAggMode) }

// TurnWeighting says what a "sequence" of the seq-mean modes is when a trajectory's turns are
// trained as samples of their own.
type TurnWeighting string

// Turn weightings.
const (
	// TurnsAsSequences: every turn is a sequence. A trajectory with more turns weighs more (each of
	// its turns weighs as much as a one-turn trajectory). What step-wise trainers (SkyRL, ROLL) do.
	TurnsAsSequences TurnWeighting = "turn"
	// TrajectoryAsSequence: a trajectory's turns together are one sequence (their trained tokens
	// concatenated), so every trajectory shares one unit of weight among its turns: what verl
	// computes when a whole multi-turn trajectory is one response row.
	TrajectoryAsSequence TurnWeighting = "trajectory"
)

var turnWeightings = []TurnWeighting{TurnsAsSequences, TrajectoryAsSequence}

// ParseTurnWeighting reads a turn weighting; unknown values are an error naming the value.
func ParseTurnWeighting(s string) (TurnWeighting, error) {
	return setting.Parse("turn weighting", s, turnWeightings, nil)
}

// UnmarshalText reads a weighting's name as ParseTurnWeighting does (YAML, flags).
func (w *TurnWeighting) UnmarshalText(b []byte) error {
	return setting.Decode(w, b, ParseTurnWeighting)
}

// AggConfig configures loss aggregation. token-mean ignores Turns: every token weighs the same
// whichever turn it is in.
type AggConfig struct {
	// Mode is the aggregation (token-mean, verl's default).
	Mode AggMode `yaml:"agg"`
	// Turns says what a sequence is for the seq-mean modes (turn).
	Turns TurnWeighting `yaml:"agg_turns"`
	// Norm is seq-mean-token-sum-norm's constant (Dr.GRPO: the maximum response length; verl's
	// loss_scale_factor). Required, > 0, for that mode; unused otherwise.
	Norm float64 `yaml:"agg_norm"`
}

// DefaultAggConfig is token-mean with turns as sequences.
func DefaultAggConfig() AggConfig { return AggConfig{Mode: AggTokenMean, Turns: TurnsAsSequences} }

// Validate names the first bad field.
func (c AggConfig) Validate() error {
	if err := setting.OneOf("loss.agg", c.Mode, aggModes); err != nil {
		return err
	}
	if err := setting.OneOf("loss.agg_turns", c.Turns, turnWeightings); err != nil {
		return err
	}
	if c.Mode == AggSeqMeanTokenSumNorm {
		return setting.AtLeast("loss.agg_norm", c.Norm, 0).Above().Because("the constant of " + string(c.Mode)).Check()
	}
	return nil
}

// AggSample is what aggregation needs of one training sample (one turn).
type AggSample struct {
	// Tokens is the number of trained (loss-mask 1) tokens of the sample.
	Tokens int
	// Traj identifies the sample's trajectory: samples with the same Traj are its turns.
	Traj int
}

// AggWeights returns, for the samples of one mini-batch [S], the weight [S] that each trained token
// of each sample gets, so that the mini-batch loss is Σ_s w_s·Σ_t m·L. With N trained tokens in
// all, K sequences with at least one trained token (turns or trajectories, c.Turns) and n_k the
// trained tokens of sequence k:
//
//	token-mean               w = 1/N
//	seq-mean-token-sum       w = 1/K
//	seq-mean-token-mean      w = 1/(K·n_k)
//	seq-mean-token-sum-norm  w = 1/(K·c.Norm)
//
// Samples without trained tokens get 0 and are not counted as sequences (verl excludes fully
// masked sequences); a mini-batch without trained tokens gets all zeros.
func AggWeights(samples []AggSample, c AggConfig) ([]float64, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	seqTokens := map[int]int{} // sequence key → trained tokens
	key := func(i int) int {
		if c.Turns == TrajectoryAsSequence {
			return samples[i].Traj
		}
		return i
	}
	n := 0
	for i, s := range samples {
		if s.Tokens < 0 {
			return nil, fmt.Errorf("grpo: sample %d has %d trained tokens", i, s.Tokens)
		}
		n += s.Tokens
		seqTokens[key(i)] += s.Tokens
	}
	k := 0
	for _, t := range seqTokens {
		if t > 0 {
			k++
		}
	}
	w := make([]float64, len(samples))
	for i, s := range samples {
		if s.Tokens == 0 {
			continue
		}
		switch c.Mode {
		case AggTokenMean:
			w[i] = 1 / float64(n)
		case AggSeqMeanTokenSum:
			w[i] = 1 / float64(k)
		case AggSeqMeanTokenMean:
			w[i] = 1 / (float64(k) * float64(seqTokens[key(i)]))
		case AggSeqMeanTokenSumNorm:
			w[i] = 1 / (float64(k) * c.Norm)
		}
	}
	return w, nil
}

// AggLoss is verl's agg_loss on the host: losses[s] are the per-token losses L of sample s's
// trained tokens ([S][n_s], so n_s is the sample's trained-token count) and traj[s] its
// trajectory ([S]); the result is Σ_s w_s·Σ_t L with w from AggWeights. The trainer applies the
// same weights to tensors (grpo.Loss); this form states the reduction for one mini-batch.
func AggLoss(losses [][]float64, traj []int, c AggConfig) (float64, error) {
	if len(traj) != len(losses) {
		return 0, fmt.Errorf("grpo: AggLoss: %d samples but %d trajectory ids", len(losses), len(traj))
	}
	in := make([]AggSample, len(losses))
	for s, l := range losses {
		in[s] = AggSample{Tokens: len(l), Traj: traj[s]}
	}
	w, err := AggWeights(in, c)
	if err != nil {
		return 0, err
	}
	var total float64
	for s, l := range losses {
		for _, v := range l {
			total += w[s] * v
		}
	}
	return total, nil
}
