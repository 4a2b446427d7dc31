package grpo

import (
	"fmt"
	"strings"

	"github.com/mtgrpo/mtgrpo/torch"
)

// Progress is the trainer's position: what a checkpoint saves besides tensors. With the weights and
// State restored, the next Step continues the run exactly (its randomness depends only on
// Config.Seed and Steps).
type Progress struct {
	// Steps counts Step calls, Updates optimizer steps taken, Skipped optimizer steps skipped for
	// a non-finite gradient norm; SFTSteps counts SFT calls (part of Updates/Skipped too).
	Steps    int `json:"steps" yaml:"steps"`
	Updates  int `json:"updates" yaml:"updates"`
	Skipped  int `json:"skipped" yaml:"skipped"`
	SFTSteps int `json:"sft_steps" yaml:"sft_steps"`
}

// Progress returns the trainer's position.
func (t *Trainer) Progress() Progress {
	return Progress{Steps: t.iter, Updates: t.updates, Skipped: t.skipped, SFTSteps: t.sftSteps}
}

// State prefixes.
const (
	stateOptim  = "optim/"        // the policy's AdamW (moments, masters, step counts)
	stateCritic = "critic/"       // the critic's weights by name (value head included)
	stateCOptim = "critic_optim/" // the critic's AdamW
)

// State returns the tensors a checkpoint needs besides the policy's weights: the policy
// optimizer's state and, with a critic, the critic's weights (decoder and value head) and its
// optimizer's state, each entry named (optim/<param>.exp_avg, critic/value_head.weight, ...). The
// tensors are live buffers or belong to the current scope: write them out before the next step.
func (t *Trainer) State() map[string]*torch.Tensor {
	out := map[string]*torch.Tensor{}
	if t.opt == nil {
		return out // a rank that only generates (rollout ahead) holds no optimizer state
	}
	for k, v := range t.opt.State() {
		out[stateOptim+k] = v
	}
	if c := t.ms.Critic; c != nil {
		for _, p := range c.Parameters() {
			out[stateCritic+p.Name] = p.Tensor
		}
		for k, v := range c.opt.State() {
			out[stateCOptim+k] = v
		}
	}
	return out
}

// Restore puts a checkpoint's State and Progress back (the policy's weights are loaded by the
// caller, as a model directory). Every entry is checked first; on an error nothing has changed
// in the optimizers, and the error names the entry.
func (t *Trainer) Restore(p Progress, st map[string]*torch.Tensor) (err error) {
	defer torch.Recover(&err)
	if p.Steps < 0 || p.Updates < 0 || p.Skipped < 0 || p.SFTSteps < 0 {
		return fmt.Errorf("grpo: restore: negative counts in %+v", p)
	}
	opt, critic, copt := map[string]*torch.Tensor{}, map[string]*torch.Tensor{}, map[string]*torch.Tensor{}
	for k, v := range st {
		switch {
		case strings.HasPrefix(k, stateOptim):
			opt[strings.TrimPrefix(k, stateOptim)] = v
		case strings.HasPrefix(k, stateCOptim):
			copt[strings.TrimPrefix(k, stateCOptim)] = v
		case strings.HasPrefix(k, stateCritic):
			critic[strings.TrimPrefix(k, stateCritic)] = v
		default:
			return fmt.Errorf("grpo: restore: unexpected entry %q", k)
		}
	}
	c := t.ms.Critic
	if c == nil && (len(critic) > 0 || len(copt) > 0) {
		return fmt.Errorf("grpo: restore: the checkpoint has a critic but this run has none")
	}
	if c != nil {
		params := c.Parameters()
		if len(critic) != len(params) {
			return fmt.Errorf("grpo: restore: %d critic tensors, want %d", len(critic), len(params))
		}
		for _, prm := range params {
			v, ok := critic[prm.Name]
			if !ok {
				return fmt.Errorf("grpo: restore: missing %q", stateCritic+prm.Name)
			}
			if a, b := v.Shape(), prm.Tensor.Shape(); fmt.Sprint(a) != fmt.Sprint(b) {
				return fmt.Errorf("grpo: restore: %q has shape %v, want %v", stateCritic+prm.Name, a, b)
			}
		}
	}
	if err := t.opt.LoadState(opt); err != nil {
		return fmt.Errorf("grpo: restore: policy optimizer: %w", err)
	}
	if c != nil {
		if err := c.opt.LoadState(copt); err != nil {
			return fmt.Errorf("grpo: restore: critic optimizer: %w", err)
		}
		torch.NoGrad(func() {
			for _, prm := range c.Parameters() {
				prm.Tensor.Copy_(critic[prm.Name])
			}
		})
	}
	t.iter, t.updates, t.skipped, t.sftSteps = p.Steps, p.Updates, p.Skipped, p.SFTSteps
	return nil
}
