package grpo

import (
	"context"
	"fmt"
	"math"

	"github.com/mtgrpo/mtgrpo/env"
	"github.com/mtgrpo/mtgrpo/internal/setting"
	"github.com/mtgrpo/mtgrpo/model"
	"github.com/mtgrpo/mtgrpo/rollout"
	"github.com/mtgrpo/mtgrpo/tokenizer"
	"github.com/mtgrpo/mtgrpo/torch"
)

// SFT takes one optimizer step of supervised fine-tuning on demonstrations: cross-entropy on every
// trained token of every turn (the same per-turn samples and packing as the RL update: contexts
// masked, outputs trained), averaged over all trained tokens of the batch (token-mean). Use it to
// warm a policy up on the task's format before RL. Demonstrations are trajectories, typically
// played by a scripted policy (rollout.Scripted) through the same driver and chat template. The
// learning rate follows the same schedule as RL steps, counted in the same optimizer steps.
func (t *Trainer) SFT(demos []*rollout.Trajectory) (Metrics, error) {
	m := Metrics{}
	if t.dist.generates() {
		t.sftSteps++ // a rollout rank: the trainers' weights reach it at the next step
		return m, nil
	}
	samples := samplesOf(demos)
	tokens := 0
	for _, s := range samples {
		tokens += s.trained
	}
	if tokens == 0 {
		return nil, fmt.Errorf("grpo: sft: no trained token in %d demonstrations", len(demos))
	}
	var nll float64
	err := timedDo(m, phaseUpdateActor, func() error {
		// Data parallel: every rank has every demonstration and trains its share; the loss is the
		// whole batch's token mean, so the summed gradients are the single-process ones.
		micros := pack(t.dist.share(samples), t.cfg.Update.MicroTokens)
		return t.opt.Update(func() error {
			norm, err := t.opt.Passes(len(micros), func(i int, fo model.ForwardOptions) error {
				v, err := t.sftMicro(micros[i], tokens, fo)
				nll += v
				return err
			})
			if err != nil {
				return err
			}
			return t.stepPolicy(norm, m)
		})
	})
	if err != nil {
		return nil, fmt.Errorf("grpo: sft step %d: %w", t.sftSteps, err)
	}
	if nll, err = t.dist.sum(nll); err != nil {
		return nil, fmt.Errorf("grpo: sft: %w", err)
	}
	t.sftSteps++
	m["sft/loss"] = nll
	m["sft/tokens"] = float64(tokens)
	m["sft/ppl"] = math.Exp(nll)
	return m, nil
}

// sftMicro backpropagates one micro-batch's share of the token-mean cross-entropy, its training
// pass run with fo (the optimizer's hooks), and returns it.
func (t *Trainer) sftMicro(micro []*sample, tokens int, fo model.ForwardOptions) (float64, error) {
	b, err := batchOf(micro)
	if err != nil {
		return 0, err
	}
	var v float64
	err = torch.Do(func() error {
		s := torch.NewScope()
		defer s.Close()
		fo.Checkpoint, fo.HeadMemoryBudget = t.cfg.Update.Checkpoint, t.cfg.Update.HeadMemoryBudget
		p, err := t.ms.Policy.Train(b, fo)
		if err != nil {
			return fmt.Errorf("training pass: %w", err)
		}
		w := float32(1 / float64(tokens))
		mask := perToken(b, micro, p.LogProbs.Device(), func(s *sample) []float32 {
			out := make([]float32, len(s.IDs))
			for i, on := range s.Mask {
				if on {
					out[i] = w
				}
			}
			return out
		})
		loss := p.LogProbs.Mul(mask).Sum(false).Neg()
		v = loss.Float()
		return p.Backward(loss)
	})
	return v, err
}

// Demonstrations plays the environment's demonstrator (env.Environment.Demonstrate) on tasks
// through the rollout driver, with the run's condenser, turn and context limits and chat template,
// so that SFT trains on exactly the contexts RL will see. Each output ends with the chat
// template's end-of-turn token. Episodes that fail or score no reward are left out; an error says
// when none is left.
func Demonstrations(ctx context.Context, tok *tokenizer.Tokenizer, envs *env.Environment, tasks []env.Task,
	r RolloutConfig) ([]*rollout.Trajectory, error) {
	if envs.Demonstrate == nil {
		return nil, fmt.Errorf("grpo: environment %s has no demonstrator for SFT", envs.Name)
	}
	if err := CheckDemonstrable(r); err != nil {
		return nil, err
	}
	gen := &rollout.Scripted{Tok: tok, EOS: endOfTurn(tok), Turn: func(tag *rollout.TurnTag, _ int) (string, rollout.FinishReason) {
		text, err := envs.Demonstrate(tag.Task, tag.Messages)
		if err != nil {
			return err.Error(), rollout.FinishAbort
		}
		return text, ""
	}}
	d, err := rollout.NewDriver(gen, tok, rollout.DriverConfig{Condenser: r.Condenser, MaxTurns: r.MaxTurns,
		MaxContextTokens: r.MaxContextTokens, ChatVars: r.ChatVars, Workers: r.Workers,
		MaxOpenEpisodes: openEpisodeLimit(r.MaxOpenEpisodes, envs)})
	if err != nil {
		return nil, fmt.Errorf("grpo: demonstrations: %w", err)
	}
	eps := make([]rollout.Episode, len(tasks))
	for i, task := range tasks {
		eps[i] = rollout.Episode{Env: envs.New(), Task: task, Group: i}
	}
	// The batch profile is not kept: scripting the demonstrations happens once, before any step,
	// and no step's metrics would carry it (each trajectory keeps its own Profile).
	trajs, _, err := d.Run(ctx, eps)
	if err != nil {
		return nil, fmt.Errorf("grpo: demonstrations: %w", err)
	}
	var out []*rollout.Trajectory
	for _, tr := range trajs {
		if tr.Err == nil && tr.Reward > 0 && !aborted(tr) {
			out = append(out, tr)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("grpo: demonstrations: none of %d episodes succeeded", len(trajs))
	}
	return out, nil
}

// CheckDemonstrable reports whether demonstrations can be played with r's condenser. The
// demonstrators write actions only: under the summary condenser they would answer the request for
// a summary with an action, and the warm-up would teach the model to do the same.
func CheckDemonstrable(r RolloutConfig) error {
	switch r.Condenser.(type) {
	case rollout.Summary, *rollout.Summary:
		return setting.Errorf("rollout.condenser.type",
			"summary: the warm-up's demonstrators write no summaries; use last_n, token_budget or the full history with sft.steps > 0")
	}
	return nil
}

func aborted(tr *rollout.Trajectory) bool {
	for _, tu := range tr.Turns {
		if tu.Finish == rollout.FinishAbort {
			return true
		}
	}
	return false
}

// endOfTurn is the token that ends an assistant message in the chat template: <|im_end|> (Qwen),
// <|eot_id|> (Llama 3), else the tokenizer's first end-of-sequence id.
func endOfTurn(tok *tokenizer.Tokenizer) int32 {
	for _, s := range []string{"<|im_end|>", "<|eot_id|>"} {
		if id, ok := tok.TokenID(s); ok {
			return int32(id)
		}
	}
	if ids := tok.EOSIDs(); len(ids) > 0 {
		return int32(ids[0])
	}
	return -1
}
