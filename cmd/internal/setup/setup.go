// Package setup builds what every generating command needs from a model directory: the tokenizer,
// the model on its device, the KV-cache backend and the rollout engine over them. generate, demo,
// train and eval call Open instead of repeating the sequence.
package setup

import (
	"fmt"

	"github.com/mtgrpo/mtgrpo/model"
	"github.com/mtgrpo/mtgrpo/rollout"
	"github.com/mtgrpo/mtgrpo/rollout/serve"
	"github.com/mtgrpo/mtgrpo/tokenizer"
)

// Options say what to load and how big the engine is.
type Options struct {
	Dir    string // model directory: config.json, safetensors, tokenizer files
	Device string // "cpu" (default), "cuda", "cuda:N"
	// DType is the compute dtype; empty means float32 on CPU and the checkpoint's dtype elsewhere.
	DType string
	// Slots is the number of sequences the KV cache holds at once (at least 1).
	Slots int
	// MaxLen is the KV-cache length of a sequence, prompt and output together (at least 1).
	MaxLen int
	// Seed seeds the engine's sampling of requests that bring no seed.
	Seed uint64
	// Trainable keeps autograd state on the weights (train); off for generation only.
	Trainable bool
	// LoRA, when set, attaches fresh adapters (seeded by Seed) after loading: with Trainable only
	// they train, and the base weights stay frozen in their dtype. With Adapter it is what the
	// adapter directory must hold (a resumed run's settings).
	LoRA *model.LoRAConfig
	// Adapter is a LoRA adapter directory (PEFT's layout, or a checkpoint's) to apply to the
	// model; one that names its base's fingerprint is refused on other weights.
	Adapter string
	// Eager decodes without CUDA graphs on a CUDA device (rollout.cuda_graphs false).
	Eager bool
	// Progress, when set, follows the weight loading.
	Progress model.Progress
	// Parked, when > 0, adds that many KV slots that keep finished calls' caches for the next
	// call of their conversation (serve.PrefixCache: agent programs, mtgrpo serve).
	Parked int
}

// Policy is a loaded model with its generation engine. Close releases the backend and the model.
type Policy struct {
	Tok     *tokenizer.Tokenizer
	Model   *model.Model
	Backend *rollout.ModelBackend
	Engine  *rollout.Engine
	// Cache is the engine's backend when Options.Parked > 0 (nil otherwise).
	Cache *serve.PrefixCache
}

// Open loads o.Dir and builds the engine. Run it on the torch thread.
func Open(o Options) (*Policy, error) {
	if o.Dir == "" {
		return nil, fmt.Errorf("setup: no model directory")
	}
	if o.Slots < 1 || o.MaxLen < 1 {
		return nil, fmt.Errorf("setup: %d slots of %d tokens: both must be at least 1", o.Slots, o.MaxLen)
	}
	dtype := o.DType
	if dtype == "" && o.Device != "" && o.Device != "cpu" {
		dtype = "auto" // the checkpoint's own dtype off CPU
	}
	tok, err := tokenizer.Load(o.Dir)
	if err != nil {
		return nil, err
	}
	m, err := model.Load(o.Dir, model.Options{Device: o.Device, DType: dtype, Progress: o.Progress})
	if err != nil {
		return nil, err
	}
	if err := Adapt(m, o); err != nil {
		m.Close()
		return nil, err
	}
	if o.Trainable {
		m.SetTrainable(true)
	}
	p := &Policy{Tok: tok, Model: m}
	if p.Backend, err = rollout.NewModelBackend(m, o.Slots+max(o.Parked, 0), o.MaxLen, tok.EOSIDs()...); err != nil {
		p.Close()
		return nil, err
	}
	p.Backend.SetCUDAGraphs(!o.Eager)
	var back rollout.Backend = p.Backend
	if o.Parked > 0 {
		if p.Cache, err = serve.NewPrefixCache(p.Backend, o.Parked); err != nil {
			p.Close()
			return nil, err
		}
		back = p.Cache
	}
	if p.Engine, err = rollout.NewEngine(back, tok, rollout.EngineConfig{Seed: o.Seed}); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// Adapt attaches o's adapters to m, the model of o.Dir: those of o.Adapter, checked against the
// base's fingerprint and o.LoRA, or fresh ones of o.LoRA (Open calls it; export uses it alone).
func Adapt(m *model.Model, o Options) error {
	if o.Adapter == "" {
		if o.LoRA == nil {
			return nil
		}
		return m.AddAdapters(*o.LoRA, o.Seed)
	}
	a, err := model.ReadAdapter(o.Adapter)
	if err != nil {
		return err
	}
	if err := m.LoadAdapters(a); err != nil {
		return err
	}
	if fp := a.Base.Fingerprint; fp != "" {
		have, err := model.Fingerprint(o.Dir)
		if err != nil {
			return err
		}
		if have != fp {
			return fmt.Errorf("adapter %s was trained on other base weights (%s, %s) than model %s (%s)",
				o.Adapter, a.Base.NameOrPath, fp, o.Dir, have)
		}
	}
	if o.LoRA != nil {
		return SameLoRA(*m.LoRA(), *o.LoRA, o.Adapter)
	}
	return nil
}

// SameLoRA reports the first setting in which the adapters of dir (have) differ from the lora:
// section (want), by its key.
func SameLoRA(have, want model.LoRAConfig, dir string) error {
	for _, d := range []struct {
		key        string
		have, want any
	}{{"lora.rank", have.Rank, want.Rank}, {"lora.alpha", have.Alpha, want.Alpha}, {"lora.dropout", have.Dropout, want.Dropout},
		{"lora.target_modules", have.Targets(), want.Targets()}, {"lora.use_rslora", have.RSLoRA, want.RSLoRA}} {
		if fmt.Sprint(d.have) != fmt.Sprint(d.want) {
			return fmt.Errorf("%s %v differs from the adapters' %v in %s: adapters keep the settings they were made with", d.key, d.want, d.have, dir)
		}
	}
	return nil
}

// Close frees the KV cache and the weights; safe to call twice.
func (p *Policy) Close() {
	if p.Backend != nil {
		p.Backend.Close()
		p.Backend = nil
	}
	if p.Model != nil {
		p.Model.Close()
		p.Model = nil
	}
}
