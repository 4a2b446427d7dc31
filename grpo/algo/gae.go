package algo

// GAE and RAGEN's bi-level GAE for PPO with a critic, per trajectory over its turns' trained
// tokens, in plain Go. References: Schulman et al., "High-Dimensional Continuous Control Using
// Generalized Advantage Estimation" (arXiv 1506.02438); verl core_algos.py
// compute_gae_advantage_return (masked tokens skipped, advantages whitened); RAGEN
// ragen/trainer/core_algos.py compute_bi_level_gae_advantage_return.
//
// Deviations from the references, on purpose: D4 (explicit turn ends) and D5 (turns without
// trained tokens), stated in doc.go.

import (
	"fmt"
	"math"

	"github.com/mtgrpo/mtgrpo/internal/setting"
)

// GAEConfig configures gae.
type GAEConfig struct {
	// Gamma and Lambda are the token-level discount and GAE λ (verl's algorithm.gamma, lam).
	Gamma  float64 `yaml:"gamma"`
	Lambda float64 `yaml:"lambda"`
	// BiLevel runs RAGEN's bi-level GAE: over turns with TurnGamma first, then over the tokens
	// inside each turn.
	BiLevel bool `yaml:"bi_level"`
	// TurnGamma is the turn-level discount γ_hi of bi-level GAE (RAGEN's high_level_gamma).
	TurnGamma float64 `yaml:"turn_gamma"`
}

// DefaultGAEConfig is γ = λ = 1 (verl), γ_hi = 0.95 (RAGEN), bi-level off.
func DefaultGAEConfig() GAEConfig { return GAEConfig{Gamma: 1, Lambda: 1, TurnGamma: 0.95} }

// Validate names the first bad field.
func (c GAEConfig) Validate() error {
	return setting.Check(setting.In("advantage.gamma", c.Gamma, 0, 1), setting.In("advantage.lambda", c.Lambda, 0, 1),
		setting.In("advantage.turn_gamma", c.TurnGamma, 0, 1))
}

// GAETurn is one turn of a trajectory as GAE sees it.
type GAETurn struct {
	// Values are the critic's V for each trained token of the turn, in order.
	Values []float64
	// Reward is the turn reward; it arrives at the turn's last trained token.
	Reward float64
	// TokenRewards are extra per-token rewards (e.g. −β·KL, see KLRewards), one per value; nil
	// means none.
	TokenRewards []float64
}

// GAEAdvantage runs GAE, or BiLevelGAE when c.BiLevel, with c's discounts: the estimator gae.
func GAEAdvantage(trajs [][]GAETurn, c GAEConfig) (adv, ret [][][]float64, err error) {
	if err := c.Validate(); err != nil {
		return nil, nil, err
	}
	chain := tokenGAE
	if c.BiLevel {
		chain = biLevelGAE
	}
	return runGAE("GAE", trajs, c, chain)
}

// GAE computes per-token advantages and returns for a batch of trajectories, [B][turns][tokens]
// of values → advantages and returns of the same shape: one chain over all trained tokens of a
// trajectory in order, δ_p = r_p + γ·V_{p+1} − V_p, A_p = δ_p + γλ·A_{p+1}, V after the last token
// 0, with each turn's reward on its last trained token. Returns are A + V; the advantages are then
// whitened over every trained token of the batch, the returns are not.
// Reference: verl compute_gae_advantage_return.
func GAE(trajs [][]GAETurn, gamma, lambda float64) (adv, ret [][][]float64, err error) {
	return GAEAdvantage(trajs, GAEConfig{Gamma: gamma, Lambda: lambda, TurnGamma: 1})
}

// BiLevelGAE is RAGEN's bi-level GAE, shapes as GAE's: a turn-level chain over the turn ends e_k
// first, δ_k = r_k + γ_hi·V(e_{k+1}) − V(e_k), Â_k = δ_k + γ_hi·λ·Â_{k+1}, then a token-level
// chain inside each turn that restarts at e_k with reward Â_k + V(e_k) and next value 0 (γ, λ).
// Returns are A + V; the advantages are whitened over every trained token of the batch.
// Reference: RAGEN compute_bi_level_gae_advantage_return.
func BiLevelGAE(trajs [][]GAETurn, gamma, lambda, turnGamma float64) (adv, ret [][][]float64, err error) {
	return GAEAdvantage(trajs, GAEConfig{Gamma: gamma, Lambda: lambda, TurnGamma: turnGamma, BiLevel: true})
}

// runGAE applies chain to every trajectory and whitens the advantages over the batch.
func runGAE(name string, trajs [][]GAETurn, c GAEConfig, chain func([]GAETurn, GAEConfig) (adv, ret [][]float64)) (adv, ret [][][]float64, err error) {
	adv = make([][][]float64, len(trajs))
	ret = make([][][]float64, len(trajs))
	var all [][]float64
	for i, tr := range trajs {
		if err := checkGAETurns(tr); err != nil {
			return nil, nil, fmt.Errorf("grpo: %s trajectory %d: %w", name, i, err)
		}
		adv[i], ret[i] = chain(tr, c)
		all = append(all, adv[i]...)
	}
	white := whiten(all)
	k := 0
	for i := range adv {
		for t := range adv[i] {
			adv[i][t] = white[k]
			k++
		}
	}
	return adv, ret, nil
}

func checkGAETurns(tr []GAETurn) error {
	for t, u := range tr {
		if u.TokenRewards != nil && len(u.TokenRewards) != len(u.Values) {
			return fmt.Errorf("turn %d has %d values but %d token rewards", t, len(u.Values), len(u.TokenRewards))
		}
		if !finite(u.Reward) {
			return fmt.Errorf("turn %d reward is %v", t, u.Reward)
		}
		for p, v := range u.Values {
			if !finite(v) || (u.TokenRewards != nil && !finite(u.TokenRewards[p])) {
				return fmt.Errorf("turn %d token %d: value %v, token reward %v", t, p, v, tokenReward(u, p))
			}
		}
	}
	return nil
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

func tokenReward(u GAETurn, p int) float64 {
	if u.TokenRewards == nil {
		return 0
	}
	return u.TokenRewards[p]
}

// turnRewards returns each turn's reward with the rewards of turns that have no trained tokens
// folded into the previous turn that has some.
func turnRewards(tr []GAETurn) []float64 {
	r := make([]float64, len(tr))
	last := -1
	for t, u := range tr {
		r[t] = u.Reward
		if len(u.Values) > 0 {
			last = t
		} else if last >= 0 {
			r[last] += u.Reward
		}
	}
	return r
}

// tokenGAE is plain GAE over the trajectory's trained tokens (unwhitened).
func tokenGAE(tr []GAETurn, c GAEConfig) (adv, ret [][]float64) {
	r := turnRewards(tr)
	adv, ret = shaped(tr), shaped(tr)
	next, last := 0.0, 0.0
	for t := len(tr) - 1; t >= 0; t-- {
		u := tr[t]
		for p := len(u.Values) - 1; p >= 0; p-- {
			rew := tokenReward(u, p)
			if p == len(u.Values)-1 {
				rew += r[t]
			}
			delta := rew + c.Gamma*next - u.Values[p]
			last = delta + c.Gamma*c.Lambda*last
			adv[t][p], ret[t][p] = last, last+u.Values[p]
			next = u.Values[p]
		}
	}
	return adv, ret
}

// biLevelGAE is RAGEN's bi-level GAE with explicit turn ends (unwhitened).
func biLevelGAE(tr []GAETurn, c GAEConfig) (adv, ret [][]float64) {
	r := turnRewards(tr)
	adv, ret = shaped(tr), shaped(tr)
	// Turn level, backwards over the turns that have trained tokens. The end token's own token
	// reward belongs to the turn reward, as in RAGEN where both sit on the same position.
	turnRet := make([]float64, len(tr))
	nextV, last := 0.0, 0.0
	for t := len(tr) - 1; t >= 0; t-- {
		u := tr[t]
		n := len(u.Values)
		if n == 0 {
			continue
		}
		vEnd := u.Values[n-1]
		delta := r[t] + tokenReward(u, n-1) + c.TurnGamma*nextV - vEnd
		last = delta + c.TurnGamma*c.Lambda*last
		turnRet[t] = last + vEnd
		nextV = vEnd
	}
	// Token level inside each turn, restarting at the turn end with the turn return as reward.
	for t, u := range tr {
		n := len(u.Values)
		next, gae := 0.0, 0.0
		for p := n - 1; p >= 0; p-- {
			rew := tokenReward(u, p)
			if p == n-1 {
				rew = turnRet[t]
			}
			delta := rew + c.Gamma*next - u.Values[p]
			gae = delta + c.Gamma*c.Lambda*gae
			adv[t][p], ret[t][p] = gae, gae+u.Values[p]
			next = u.Values[p]
		}
	}
	return adv, ret
}

func shaped(tr []GAETurn) [][]float64 {
	out := make([][]float64, len(tr))
	for t, u := range tr {
		out[t] = make([]float64, len(u.Values))
	}
	return out
}

// whiten returns (x − m)/sqrt(v + 1e-8) over every element of x (a list of segments, e.g. the
// turns of a batch), m the mean and v the Bessel variance. Fewer than two elements in all give
// zeros (verl raises). Reference: verl verl/utils/torch_functional.py masked_whiten.
func whiten(x [][]float64) [][]float64 {
	var flat, w []float64
	for _, s := range x {
		for _, v := range s {
			flat = append(flat, v)
			w = append(w, 1)
		}
	}
	white := whitenWeighted(flat, w)
	out := make([][]float64, len(x))
	k := 0
	for i, s := range x {
		out[i] = white[k : k+len(s) : k+len(s)]
		k += len(s)
	}
	return out
}
