package config

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/mtgrpo/mtgrpo/grpo"
	"github.com/mtgrpo/mtgrpo/grpo/algo"
)

// deriveVerl combines verl's keys that mean something together: the KL switches and their
// coefficients, the mini-batch size in prompts, the clip range of the loss mode, DAPO's overlong
// buffer, the rollout correction, the chat template's variables and AdamW's betas; then verl's
// default estimator where the configuration relies on it.
func deriveVerl(c *Config, g given) error {
	var errs []error
	errs = append(errs, klSwitch(c, g, "actor_rollout_ref.actor.use_kl_loss", "actor_rollout_ref.actor.kl_loss_coef", "loss.kl_coef"))
	errs = append(errs, klSwitch(c, g, "algorithm.use_kl_in_reward", "algorithm.kl_ctrl.kl_coef", "reward.kl_coef"))
	if mb, ok := g["actor_rollout_ref.actor.ppo_mini_batch_size"]; ok {
		n, _ := strconv.Atoi(mb.node.Value) // checked by positive
		if c.Rollout.Tasks%n != 0 {
			errs = append(errs, &Error{Where: mb.where, Key: "actor_rollout_ref.actor.ppo_mini_batch_size", Err: fmt.Errorf(
				"%d prompts per mini-batch do not divide the %d prompts of a step (data.train_batch_size, rollout.tasks, %s)",
				n, c.Rollout.Tasks, c.Origin("rollout.tasks"))})
		} else {
			errs = append(errs, c.Set("update.mini_batches", strconv.Itoa(c.Rollout.Tasks/n), mb.where+" (ppo_mini_batch_size)"))
		}
	}
	errs = append(errs, verlClip(c, g), verlOverlong(c, g), verlRolloutCorrection(c, g), verlChatVars(c, g), verlBetas(c, g))
	verlEstimator(c)
	return joinErrors(errs)
}

// verlEstimator honours verl's default estimator, gae: a configuration with verl's critic keys and
// no estimator trains PPO with that critic; without critic keys the difference is warned about.
func verlEstimator(c *Config) {
	if c.explicit("advantage.estimator") {
		return
	}
	if where := c.sawUnder("critic."); where != "" {
		if err := c.Set("advantage.estimator", string(algo.EstGAE), where+" (verl's default estimator gae: PPO with the critic this critic section configures)"); err != nil {
			panic(err) // a known estimator
		}
		return
	}
	if where, ok := c.layouts[verlFamily.Name]; ok {
		c.warn(fmt.Sprintf("%s: verl's default algorithm.adv_estimator is gae (PPO with a critic); this configuration gives none, so %s's %s trains: set algorithm.adv_estimator to choose",
			where, c.Origin("advantage.estimator"), c.Advantage.Estimator))
	}
}

// verlClip sets the clip range from clip_ratio, clip_ratio_low and clip_ratio_high: PPO's (and
// CISPO's) ε, or GSPO's sequence-ratio range under loss_mode gspo. A CISPO lower ratio of 1 or more
// is no lower bound (the IS weight is positive), as verl's example sets it (clip_ratio_low=10).
func verlClip(c *Config, g given) error {
	const p = "actor_rollout_ref.actor."
	pick := func(keys ...string) (givenValue, string, bool) {
		for _, k := range keys {
			if v, ok := g[p+k]; ok {
				return v, k, true
			}
		}
		return givenValue{}, "", false
	}
	native := "loss.clip_"
	if c.Loss.Policy == grpo.PolicyGSPO {
		native = "loss.gspo_clip_"
	}
	var errs []error
	low, lowKey, hasLow := pick("clip_ratio_low", "clip_ratio")
	high, highKey, hasHigh := pick("clip_ratio_high", "clip_ratio")
	if hasLow {
		v := low.node.Value
		if f, _ := strconv.ParseFloat(v, 64); c.Loss.Policy == grpo.PolicyCISPO && f >= 1 {
			v = "1" // 1 − ε ≤ 0: no lower bound
		}
		errs = append(errs, c.Set(native+"low", v, low.where+" ("+lowKey+")"))
	}
	if hasHigh {
		errs = append(errs, c.Set(native+"high", high.node.Value, high.where+" ("+highKey+")"))
	}
	if where, ok := c.foreignSeen[p+"policy_loss.loss_mode"]; ok && c.Loss.Policy == grpo.PolicyGSPO && !hasLow && !hasHigh {
		c.warn(fmt.Sprintf("%s: loss_mode gspo without clip_ratio_low/high: verl would clip GSPO's sequence ratio at its clip_ratio (0.2); "+
			"here it is clipped at loss.gspo_clip_low %g and loss.gspo_clip_high %g (the GSPO paper's)", where, c.Loss.GSPOClipLow, c.Loss.GSPOClipHigh))
	}
	return joinErrors(errs)
}

// verlOverlong is DAPO's overlong buffer, in the recipe's reward_model.overlong_buffer or as the
// reward manager's reward_kwargs: enable true sets dapo.overlong_len and dapo.overlong_factor.
func verlOverlong(c *Config, g given) error {
	var errs []error
	for _, p := range []string{"reward_model.overlong_buffer.", "reward_model.reward_kwargs.overlong_buffer_cfg."} {
		en, hasEn := g[p+"enable"]
		ln, hasLen := g[p+"len"]
		pf, hasPF := g[p+"penalty_factor"]
		switch {
		case hasEn && en.node.Value == "true":
			if !hasLen || ln.node.Value == "0" {
				errs = append(errs, &Error{Where: en.where, Key: p + "enable", Err: fmt.Errorf("true needs %slen > 0, the buffer's length in tokens", p)})
				continue
			}
			errs = append(errs, c.Set("dapo.overlong_len", ln.node.Value, ln.where+" ("+p+"len)"))
			if hasPF {
				errs = append(errs, c.Set("dapo.overlong_factor", pf.node.Value, pf.where+" ("+p+"penalty_factor)"))
			}
		case hasEn:
			errs = append(errs, c.Set("dapo.overlong_len", "0", en.where+" ("+p+"enable)"))
			if hasLen || hasPF {
				c.warn(fmt.Sprintf("%s: %slen and penalty_factor have no effect: %senable is false", en.where, p, p))
			}
		case hasLen || hasPF:
			where := ln.where
			if !hasLen {
				where = pf.where
			}
			c.warn(fmt.Sprintf("%s: %slen and penalty_factor have no effect without %senable=true (verl's default is false)", where, p, p))
		}
	}
	if m, ok := g["reward_model.reward_kwargs.max_resp_len"]; ok && m.node.Value != strconv.Itoa(c.Rollout.Sampling.MaxNewTokens) {
		errs = append(errs, &Error{Where: m.where, Key: "reward_model.reward_kwargs.max_resp_len", Err: fmt.Errorf(
			"%s: the overlong buffer counts back from the output limit, rollout.max_new_tokens %d (from %s): give the same length",
			m.node.Value, c.Rollout.Sampling.MaxNewTokens, c.Origin("rollout.max_new_tokens"))})
	}
	return joinErrors(errs)
}

// verlRolloutCorrection maps algorithm.rollout_correction onto loss.is: truncated IS weights
// (rollout_is) or rejection by the ratio's bounds (rollout_rs), one of the two.
func verlRolloutCorrection(c *Config, g given) error {
	const p = "algorithm.rollout_correction."
	is, isOn := g[p+"rollout_is"]
	rs, rsOn := g[p+"rollout_rs"]
	set := func(key, value, where string) error { return c.Set(key, value, where) }
	switch {
	case isOn && rsOn:
		return &Error{Where: rs.where, Key: p + "rollout_rs", Err: fmt.Errorf(
			"with rollout_is %s: truncated IS weights and rejection sampling together are not implemented; loss.is takes one of them", is.node.Value)}
	case isOn:
		errs := []error{set("loss.is", is.node.Value+"_truncate", is.where+" (rollout_is)")}
		if t, ok := g[p+"rollout_is_threshold"]; ok {
			errs = append(errs, set("loss.is_max", t.node.Value, t.where+" (rollout_is_threshold)"))
		}
		return joinErrors(errs)
	case rsOn:
		errs := []error{set("loss.is", rs.node.Value+"_mask", rs.where+" (rollout_rs)")}
		t, ok := g[p+"rollout_rs_threshold"]
		if !ok {
			return joinErrors(append(errs, &Error{Where: rs.where, Key: p + "rollout_rs", Err: fmt.Errorf("needs rollout_rs_threshold, the ratio's bounds")}))
		}
		lo, hi, err := ratioBounds(t.node)
		if err != nil {
			return joinErrors(append(errs, &Error{Where: t.where, Key: p + "rollout_rs_threshold", Err: err}))
		}
		if l, ok := g[p+"rollout_rs_threshold_lower"]; ok {
			lo = l.node.Value
		}
		return joinErrors(append(errs, set("loss.is_max", hi, t.where+" (rollout_rs_threshold)"), set("loss.is_min", lo, t.where+" (rollout_rs_threshold)")))
	}
	for _, k := range []string{"rollout_is_threshold", "rollout_rs_threshold", "rollout_rs_threshold_lower"} {
		if v, ok := g[p+k]; ok {
			c.warn(fmt.Sprintf("%s: %s%s has no effect: rollout_is and rollout_rs are null", v.where, p, k))
		}
	}
	return nil
}

// ratioBounds reads verl's rollout_rs_threshold: "lower_upper", or the upper bound alone (its
// reciprocal is the lower).
func ratioBounds(n *yaml.Node) (lo, hi string, err error) {
	if a, b, ok := strings.Cut(n.Value, "_"); ok {
		l, err1 := strconv.ParseFloat(a, 64)
		h, err2 := strconv.ParseFloat(b, 64)
		if err1 != nil || err2 != nil || !(l >= 0 && h > l) {
			return "", "", fmt.Errorf("%s: want the bounds as lower_upper (0.5_2.0) or the upper bound", shown(n))
		}
		return a, b, nil
	}
	h, err := strconv.ParseFloat(n.Value, 64)
	if err != nil || !(h > 0) {
		return "", "", fmt.Errorf("%s: want the upper bound (a number > 0) or lower_upper", shown(n))
	}
	return strconv.FormatFloat(1/h, 'g', -1, 64), n.Value, nil
}

// verlChatVars sets rollout.chat_vars from data.apply_chat_template_kwargs, given as a mapping or
// key by key.
func verlChatVars(c *Config, g given) error {
	const p = "data.apply_chat_template_kwargs"
	var keys []string
	for k := range g {
		if k == p || strings.HasPrefix(k, p+".") {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var errs []error
	for _, k := range keys {
		v := g[k]
		vars := map[string]any{}
		if k == p {
			if err := v.node.Decode(&vars); err != nil {
				errs = append(errs, &Error{Where: v.where, Key: k, Err: fmt.Errorf("want a mapping of chat template variables, got %s", kindName(v.node))})
				continue
			}
		} else {
			var x any
			if err := v.node.Decode(&x); err != nil {
				errs = append(errs, &Error{Where: v.where, Key: k, Err: err})
				continue
			}
			vars[strings.TrimPrefix(k, p+".")] = x
		}
		if c.Rollout.ChatVars == nil {
			c.Rollout.ChatVars = map[string]any{}
		}
		for name, x := range vars {
			c.Rollout.ChatVars[name] = x
		}
		c.setOrigin("rollout.chat_vars", v.where+" ("+k+")")
	}
	return joinErrors(errs)
}

// verlBetas sets AdamW's betas from a list of two.
func verlBetas(c *Config, g given) error {
	const k = "actor_rollout_ref.actor.optim.betas"
	b, ok := g[k]
	if !ok {
		return nil
	}
	n := deref(b.node)
	if n.Kind != yaml.SequenceNode || len(n.Content) != 2 {
		return &Error{Where: b.where, Key: k, Err: fmt.Errorf("want [β1, β2], got %s", kindName(n))}
	}
	return joinErrors([]error{c.Set("optim.beta1", n.Content[0].Value, b.where+" (betas)"), c.Set("optim.beta2", n.Content[1].Value, b.where+" (betas)")})
}

// klSwitch is verl's pair of a switch and a coefficient: the switch on sets native to the
// coefficient (verl's default 0.001), off sets it to 0; a coefficient without the switch has no
// effect in verl, and none here (a warning says so).
func klSwitch(c *Config, g given, switchKey, coefKey, native string) error {
	sw, hasSwitch := g[switchKey]
	coef, hasCoef := g[coefKey]
	switch {
	case hasSwitch && sw.node.Value == "true" && hasCoef:
		return c.Set(native, coef.node.Value, coef.where+" ("+coefKey+")")
	case hasSwitch && sw.node.Value == "true":
		return c.Set(native, "0.001", sw.where+" ("+switchKey+", verl's default coefficient)")
	case hasSwitch:
		if hasCoef && coef.node.Value != "0" {
			c.warn(fmt.Sprintf("%s: %s has no effect: %s is false", coef.where, coefKey, switchKey))
		}
		return c.Set(native, "0", sw.where+" ("+switchKey+")")
	case hasCoef:
		c.warn(fmt.Sprintf("%s: %s has no effect without %s=true (verl's default is false)", coef.where, coefKey, switchKey))
	}
	return nil
}
