package config

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/mtgrpo/mtgrpo/env"
	"github.com/mtgrpo/mtgrpo/env/data"
	"github.com/mtgrpo/mtgrpo/grpo/algo"
	"github.com/mtgrpo/mtgrpo/rollout"
)

// finish runs once every source is read: each family combines its Derived keys, and a layout's
// implied settings apply where the native key was not set.
func (c *Config) finish() error {
	var errs []error
	for _, f := range Families {
		if f.Derive != nil {
			errs = append(errs, f.Derive(c, c.given))
		}
	}
	for _, f := range Families {
		where, used := c.layouts[f.Name]
		if !used {
			continue
		}
		for _, im := range f.Implies {
			if _, set := c.origin[im.Native]; set {
				continue
			}
			errs = append(errs, c.Set(im.Native, im.Value, fmt.Sprintf("%s (%s)", where, im.Why)))
		}
	}
	c.given = nil
	errs = append(errs, c.aggNormDefault())
	return joinErrors(errs)
}

// aggNormDefault gives seq-mean-token-sum-norm its constant when none is set: the output limit,
// rollout.max_new_tokens (verl divides by the response length when loss_scale_factor is null, TRL's
// dr_grpo by max_completion_length).
func (c *Config) aggNormDefault() error {
	if c.Loss.Agg.Mode != algo.AggSeqMeanTokenSumNorm || c.Loss.Agg.Norm != 0 {
		return nil
	}
	return c.Set("loss.agg_norm", strconv.Itoa(c.Rollout.Sampling.MaxNewTokens),
		fmt.Sprintf("%s (loss.agg seq-mean-token-sum-norm divides by rollout.max_new_tokens, from %s, unless loss.agg_norm is given)",
			c.Origin("loss.agg"), c.Origin("rollout.max_new_tokens")))
}

// useLayout records the first place a family's key was given.
func (c *Config) useLayout(family, where string) {
	if c.layouts == nil {
		c.layouts = map[string]string{}
	}
	if _, ok := c.layouts[family]; !ok {
		c.layouts[family] = where
	}
}

// sawForeign records where a foreign key was given (the first time), for the families' rules
// that look at what else a configuration says (Family.Derive).
func (c *Config) sawForeign(key, where string) {
	if c.foreignSeen == nil {
		c.foreignSeen = map[string]string{}
	}
	if _, ok := c.foreignSeen[key]; !ok {
		c.foreignSeen[key] = where
	}
}

// sawUnder is where the first foreign key under prefix was given ("" when none was), the keys
// taken in sorted order.
func (c *Config) sawUnder(prefix string) string {
	var keys []string
	for k := range c.foreignSeen {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return ""
	}
	sort.Strings(keys)
	return c.foreignSeen[keys[0]]
}

// explicit reports whether key was set by a file, a variable or a flag (not a default or the
// preset).
// hasExtraTools reports whether tools from outside the binary (MCP servers) join the
// environment's.
func (c *Config) hasExtraTools() bool { return c.MCP != nil && len(c.MCP.Servers) > 0 }

func (c *Config) explicit(key string) bool {
	_, ok := c.origin[key]
	return ok
}

// warnEffects warns of settings that have no effect under the resolved settings, naming what
// would give them effect. (Settings that cannot have their effect are refused by their
// sections' Validate: bi-level GAE without a critic by grpo/algo.)
func (c *Config) warnEffects() {
	a := c.Advantage
	gae := a.Estimator == algo.EstGAE
	noEffect := func(key, why string) {
		c.warn(fmt.Sprintf("%s: %s has no effect: %s", c.Origin(key), key, why))
	}
	if !a.GAE.BiLevel && c.explicit("advantage.turn_gamma") {
		noEffect("advantage.turn_gamma", "it is bi-level GAE's turn discount (advantage.bi_level true, estimator gae)")
	}
	if !gae {
		for _, k := range []string{"critic.lr", "critic.warmup", "critic.value_clip", "critic.max_grad_norm", "critic_model"} {
			if c.explicit(k) {
				noEffect(k, fmt.Sprintf("there is no critic with advantage.estimator %s (gae trains one)", a.Estimator))
			}
		}
		d := Defaults().Advantage
		discounts := a.Estimator == algo.EstReinforcePP
		if c.explicit("advantage.gamma") && a.GAE.Gamma != d.GAE.Gamma && !discounts {
			noEffect("advantage.gamma", fmt.Sprintf("γ is the discount of GAE and REINFORCE++ (advantage.estimator gae, reinforce_plus_plus), not of %s", a.Estimator))
		}
		if c.explicit("advantage.lambda") && a.GAE.Lambda != d.GAE.Lambda {
			noEffect("advantage.lambda", fmt.Sprintf("λ is GAE's (advantage.estimator gae), not %s's", a.Estimator))
		}
	}
	if a.StdOver == algo.StdBatch && c.explicit("advantage.std_over") {
		switch {
		case a.Estimator != algo.EstGRPO && a.Estimator != algo.EstMultiTurnGRPO:
			noEffect("advantage.std_over", fmt.Sprintf("it is where grpo's and grpo_multiturn's std comes from, not %s's", a.Estimator))
		case !a.NormStd:
			noEffect("advantage.std_over", "advantage.norm_std is false: nothing is divided by a std")
		}
	}
	if !c.Train.Checkpoint {
		for _, k := range []string{"train.checkpoint_every", "train.keep_checkpoints"} {
			if c.explicit(k) {
				noEffect(k, "train.checkpoint is false: no checkpoint is written")
			}
		}
	}
	if o := c.Optim; o.WarmupRatio > 0 && o.Warmup > 0 && c.explicit("optim.warmup_ratio") {
		noEffect("optim.warmup_ratio", fmt.Sprintf("optim.warmup gives the warm-up in steps (%d, from %s)", o.Warmup, c.Origin("optim.warmup")))
	}
	cc := c.Rollout.Condenser
	if cc.MaxTokens != 0 && c.explicit("rollout.condenser.max_tokens") && cc.Type != rollout.CondenseTokenBudget && cc.Type != rollout.CondenseSummary {
		noEffect("rollout.condenser.max_tokens", fmt.Sprintf("condenser %s does not count tokens; the budget applies to "+
			"rollout.condenser.type token_budget or summary (a turn's context is capped by rollout.max_context_tokens)", cc.Type))
	}
	if cc.KeepLastN != 0 && c.explicit("rollout.condenser.keep_last_n") && cc.Type != rollout.CondenseLastN && cc.Type != rollout.CondenseSummary {
		noEffect("rollout.condenser.keep_last_n", fmt.Sprintf("condenser %s keeps no last steps; it applies to rollout.condenser.type last_n or summary", cc.Type))
	}
	if cc.Type != rollout.CondenseSummary {
		for _, k := range []string{"rollout.condenser.summary_every", "rollout.condenser.summary_tokens", "rollout.condenser.train_summary"} {
			if c.explicit(k) {
				noEffect(k, "it applies to rollout.condenser.type summary")
			}
		}
	}
	if c.explicit("rollout.cuda_graphs") && !strings.HasPrefix(c.Device, "cuda") {
		noEffect("rollout.cuda_graphs", fmt.Sprintf("device %s decodes eagerly; CUDA graphs are for a cuda device", c.Device))
	} else if c.explicit("rollout.cuda_graphs") && c.Rollout.CUDAGraphs && c.PolicyLoRA() != nil {
		noEffect("rollout.cuda_graphs", "with LoRA adapters (lora.rank > 0) the decode steps run eagerly, the adapters' products beside the base weights'")
	}
	e := c.Env
	if e.Name != "data" {
		if e.Data.Domain != "" && c.explicit("env.domain") && e.Data.Domain != envDomains[e.Name] {
			noEffect("env.domain", fmt.Sprintf("environment %s scores with its own rubric; the domain picks the rubric of env.name data", e.Name))
		}
		if len(e.Data.Tools) > 0 && c.explicit("env.tools") {
			noEffect("env.tools", fmt.Sprintf("environment %s has its own tools; the list gives env.name data its tools", e.Name))
		}
	}
	if e.Facts.Countries != 0 && c.explicit("env.countries") {
		switch {
		case e.Name != "wiki_qa" && !(e.Name == "data" && slices.Contains(e.Data.Tools, "search")):
			noEffect("env.countries", fmt.Sprintf("environment %s has no generated facts corpus; it applies to env.name wiki_qa "+
				"(and data with the search tool)", e.Name))
		case e.Name == "data" && e.CorpusPath != "":
			noEffect("env.countries", "the search tool indexes env.corpus, not the generated corpus")
		}
	}
	keys, shapes := env.ShapingKeys()
	for _, k := range keys { // env.countries also sizes the data environment's search corpus: above
		if k != "countries" && c.explicit("env."+k) && !slices.Contains(shapes[k], e.Name) {
			noEffect("env."+k, fmt.Sprintf("environment %s generates no tasks it shapes; it shapes the generated tasks of env.name %s",
				e.Name, strings.Join(shapes[k], " and ")))
		}
	}
	if e.DirectDemos != 0 && c.explicit("env.direct_demos") {
		switch {
		case !env.Demonstrates(e.Name, c.hasExtraTools()):
			noEffect("env.direct_demos", fmt.Sprintf("environment %s has no demonstrator; the share applies to the warm-up "+
				"demonstrations of the environments with a task generator (%s)", e.Name, strings.Join(env.GeneratorNames(), ", ")))
		case c.SFT.Steps == 0:
			noEffect("env.direct_demos", "it shapes the warm-up's demonstrations, and sft.steps is 0 (no warm-up)")
		}
	}
	if e.RewardBudget != 0 && c.explicit("env.reward_budget") && e.RewardRule != env.RuleScaled {
		noEffect("env.reward_budget", "it is the budget of env.reward_rule scaled")
	}
}

// envDomains are the built-in environments' own rubrics by domain name: an env.domain that names
// it agrees with the environment and says nothing more.
var envDomains = map[string]string{"gsm8k": "math", "gsm8k_python": "math", "calc_mult": "math", "countdown": "math", "wiki_qa": "qa"}

// envSources are the data_source values of each built-in environment's rows (what its generator
// writes, and the public datasets it plays).
var envSources = map[string][]string{
	"gsm8k": {"gsm8k"}, "gsm8k_python": {"gsm8k"}, "calc_mult": {"calc_mult"}, "wiki_qa": {"wiki_qa"},
	"frozenlake": {"frozenlake"}, "guess_number": {"guess_number"}, "countdown": {"countdown"},
}

// CheckRows reports dataset rows that do not belong to the environment: a row whose data_source
// names another environment's tasks would be played under this one's prompt and rubric. The
// data and openenv environments take any rows; rows without a data_source are not checked.
func (c *Config) CheckRows(path string, rows []data.Row) error {
	want, ok := envSources[c.Env.Name]
	if !ok {
		return nil
	}
	key := "data.train"
	if c.Data.Val.Has(path) && !c.Data.Train.Has(path) {
		key = "data.val"
	}
	for i, r := range rows {
		if r.DataSource == "" || belongs(r.DataSource, want) {
			continue
		}
		var names []string
		for name, srcs := range envSources {
			if belongs(r.DataSource, srcs) {
				names = append(names, name)
			}
		}
		sort.Strings(names)
		fix := "env.name data (the rows' own prompts and rubric)"
		if len(names) > 0 {
			fix = "env.name " + strings.Join(names, " or ") + ", or " + fix
		}
		return &Error{Where: c.Origin(key), Key: key, Err: fmt.Errorf(
			"%s row %d has data_source %q: not a task of environment %s (env.name from %s; its rows' data_source: %s); set %s",
			path, i+1, r.DataSource, c.Env.Name, c.Origin("env.name"), strings.Join(want, ", "), fix)}
	}
	return nil
}

func belongs(source string, want []string) bool {
	for _, w := range want {
		if strings.Contains(strings.ToLower(source), w) {
			return true
		}
	}
	return false
}
