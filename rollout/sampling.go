package rollout

import (
	"fmt"
	"math"
)

// Sampling is one request's sampling settings, with the meanings of transformers' generate() and
// vLLM's SamplingParams. The zero value samples from the model's distribution at temperature 1 with
// no truncation and the default stop ids, up to DefaultMaxNewTokens tokens. The fields with YAML
// keys are a run's rollout sampling keys (rollout.temperature, ...); the others are per request.
type Sampling struct {
	// Temperature divides the logits. 0 with Greedy unset means 1; Greedy picks the argmax.
	Temperature float64 `yaml:"temperature"`
	// Greedy picks the most likely token (temperature 0 in vLLM terms).
	Greedy bool `yaml:"-"`
	// TopP keeps the smallest set of most likely tokens whose probability reaches P (0 or 1: all).
	TopP float64 `yaml:"top_p"`
	// TopK keeps the K most likely tokens and any tied with the K-th (0: all).
	TopK int `yaml:"top_k"`
	// MinP keeps tokens whose probability is at least MinP times the most likely one's (0: all).
	MinP float64 `yaml:"min_p"`
	// Seed makes the request's draws reproducible and independent of what else is in the batch:
	// sample i of the request draws from its own stream (Seed, i). nil: the engine picks a seed from
	// its own generator, so a run is reproducible from EngineConfig.Seed and the order of submissions.
	Seed *uint64 `yaml:"-"`
	// MaxNewTokens caps the generated tokens (0: DefaultMaxNewTokens). The KV cache's length caps
	// prompt + output as well; either ends the sequence with FinishLength.
	MaxNewTokens int `yaml:"max_new_tokens"`
	// StopTokenIDs end the sequence when sampled (the token is kept in the output, as the trainer
	// must learn to emit it). nil: the engine's defaults (the model's eos ids).
	StopTokenIDs []int `yaml:"-"`
	// IgnoreEOS disables stop token ids (benchmarks generate exactly MaxNewTokens tokens).
	IgnoreEOS bool `yaml:"-"`
	// StopStrings end the sequence when the decoded text contains one of them, also when it spans
	// several tokens. The tokens through the one that completed the match stay in the output; the
	// text is cut before the match unless IncludeStopString.
	StopStrings       []string `yaml:"-"`
	IncludeStopString bool     `yaml:"-"`
}

// DefaultMaxNewTokens is the output cap when a request gives none.
const DefaultMaxNewTokens = 256

// Seed returns a pointer to s, for Sampling.Seed.
func Seed(s uint64) *uint64 { return &s }

// Validate reports the first bad field by name.
func (s *Sampling) Validate() error {
	switch {
	case s.Temperature < 0 || math.IsNaN(s.Temperature) || math.IsInf(s.Temperature, 0):
		return fmt.Errorf("sampling: temperature %v must be a finite number >= 0", s.Temperature)
	case s.TopK < 0:
		return fmt.Errorf("sampling: top_k %d must be >= 0", s.TopK)
	case !(s.TopP >= 0 && s.TopP <= 1):
		return fmt.Errorf("sampling: top_p %v must be in [0, 1]", s.TopP)
	case !(s.MinP >= 0 && s.MinP <= 1):
		return fmt.Errorf("sampling: min_p %v must be in [0, 1]", s.MinP)
	case s.MaxNewTokens < 0:
		return fmt.Errorf("sampling: max_new_tokens %d must be >= 0", s.MaxNewTokens)
	}
	for i, st := range s.StopStrings {
		if st == "" {
			return fmt.Errorf("sampling: stop string %d is empty", i)
		}
	}
	return nil
}

// greedy reports whether the request takes the argmax. Only Greedy asks for it: a Temperature of
// 0 means 1, so that the zero value samples (what RL needs) rather than decoding greedily.
func (s *Sampling) greedy() bool { return s.Greedy }

// temperature is the divisor of the logits (0 means 1).
func (s *Sampling) temperature() float64 {
	if s.Temperature == 0 {
		return 1
	}
	return s.Temperature
}

func (s *Sampling) maxNew() int {
	if s.MaxNewTokens == 0 {
		return DefaultMaxNewTokens
	}
	return s.MaxNewTokens
}

// sortNeeded: top-k and top-p work on the probabilities sorted in descending order.
func (s *Sampling) sortNeeded() bool {
	return !s.Greedy && (s.TopK > 0 || (s.TopP > 0 && s.TopP < 1))
}
