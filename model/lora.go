package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/mtgrpo/mtgrpo/internal/setting"
	"github.com/mtgrpo/mtgrpo/torch"
)

// LoRA (Hu et al., arXiv 2106.09685) as PEFT's LoraLayer computes it: a targeted Linear's output
// gains scale · B(A(dropout(x))), with A [r, in] and B [out, r] in float32 beside the frozen base
// weight, scale = alpha/r (alpha/√r with rsLoRA). x is cast to float32 for the adapter, the sum is
// made in float32 and cast back to the base's dtype, as PEFT does. A is drawn Kaiming-uniform with
// a = √5 (nn.Linear's default: U(−1/√in, 1/√in)) and B is zero, so a new adapter leaves the model
// exactly as it was.

// Linear modules an adapter can target, by PEFT's module names.
const (
	ModuleQ    = "q_proj"
	ModuleK    = "k_proj"
	ModuleV    = "v_proj"
	ModuleO    = "o_proj"
	ModuleGate = "gate_proj"
	ModuleUp   = "up_proj"
	ModuleDown = "down_proj"
	// AllLinear is PEFT's shorthand for every linear layer but the output head.
	AllLinear = "all-linear"
)

// LinearModules are the decoder's linear modules in the order of a layer's forward pass.
var LinearModules = []string{ModuleQ, ModuleK, ModuleV, ModuleO, ModuleGate, ModuleUp, ModuleDown}

// LoRAConfig describes the adapters (PEFT's LoraConfig fields of the same meaning): the run
// configuration's lora: section, whose rank 0 (the default) means no adapters.
type LoRAConfig struct {
	// Rank is r, the adapters' rank (0 in the lora: section: none, the whole model trains).
	Rank int `yaml:"rank"`
	// Alpha is lora_alpha: the update is scaled by alpha/r (alpha/√r with UseRSLoRA).
	Alpha float64 `yaml:"alpha"`
	// Dropout is lora_dropout, on the adapters' input in training passes only.
	Dropout float64 `yaml:"dropout"`
	// TargetModules are the linear layers that carry adapters, by PEFT's names (q_proj, k_proj,
	// v_proj, o_proj, gate_proj, up_proj, down_proj), or all-linear alone (empty: all-linear).
	TargetModules Modules `yaml:"target_modules"`
	// RSLoRA is use_rslora: rank-stabilised scaling alpha/√r.
	RSLoRA bool `yaml:"use_rslora"`
}

// DefaultLoRA is the lora: section's default: no adapters; given a rank, verl's alpha 16 on every
// linear layer, no dropout.
func DefaultLoRA() LoRAConfig {
	return LoRAConfig{Alpha: 16, TargetModules: Modules{AllLinear}}
}

// Modules is a list of module names; written as one string it is a comma-separated list
// (target_modules: all-linear, as PEFT and verl take it).
type Modules []string

// UnmarshalText reads a list written as one string.
func (m *Modules) UnmarshalText(b []byte) error {
	*m = nil
	for _, s := range strings.Split(string(b), ",") {
		if s = strings.TrimSpace(s); s != "" {
			*m = append(*m, s)
		}
	}
	return nil
}

// Scale is the factor on B·A: alpha/r, or alpha/√r with rsLoRA.
func (c LoRAConfig) Scale() float64 {
	if c.RSLoRA {
		return c.Alpha / math.Sqrt(float64(c.Rank))
	}
	return c.Alpha / float64(c.Rank)
}

// Targets is the list of targeted modules in LinearModules order (AllLinear expanded).
func (c LoRAConfig) Targets() []string {
	if len(c.TargetModules) == 0 || slices.Contains(c.TargetModules, AllLinear) {
		return slices.Clone(LinearModules)
	}
	var ts []string
	for _, m := range LinearModules {
		if slices.Contains(c.TargetModules, m) {
			ts = append(ts, m)
		}
	}
	return ts
}

// MaxLoRARank bounds lora.rank: far above any adapter's (PEFT's go to a few hundred), low enough
// that a mistyped rank is refused rather than allocated.
const MaxLoRARank = 1 << 16

// Check names the first bad field of the section (lora or critic_lora) by its key (a
// setting.KeyError: lora.rank, critic_lora.target_modules).
func (c LoRAConfig) Check(section string) error {
	err := setting.Check(
		setting.In(section+".rank", c.Rank, 1, MaxLoRARank),
		setting.AtLeast(section+".alpha", c.Alpha, 0).Above(),
		setting.In(section+".dropout", c.Dropout, 0, 1).Below(),
	)
	if err != nil {
		return err
	}
	for _, m := range c.TargetModules {
		if m == AllLinear && len(c.TargetModules) > 1 {
			return setting.Errorf(section+".target_modules", "%q stands alone, not beside %v", AllLinear, c.TargetModules)
		}
		if m != AllLinear && !slices.Contains(LinearModules, m) {
			return setting.Errorf(section+".target_modules", "%q is not one of %s or %q", m, strings.Join(LinearModules, ", "), AllLinear)
		}
	}
	return nil
}

// Validate is Check of the lora: section.
func (c LoRAConfig) Validate() error { return c.Check("lora") }

// Adapter is one targeted Linear's low-rank update.
type Adapter struct {
	Name string        // the base module's name, e.g. model.layers.3.self_attn.q_proj
	A, B *torch.Tensor // float32 lora_A.weight [r, in] and lora_B.weight [out, r]
	Unit int           // the decoder layer's unit (1+layer, as Units)

	id  uint64 // index among the model's adapters: the dropout mask's stream
	set *adapters
}

// adapters is a model's set of adapters and its switches.
type adapters struct {
	cfg   LoRAConfig
	scale float64
	list  []*Adapter
	off   bool   // WithoutAdapters: the base model
	drop  bool   // a training pass: dropout applies
	seed  uint64 // the training pass's dropout seed
	pass  uint64 // training passes so far: the next pass's seed
	scope *torch.Scope
}

// namedLinear is a decoder layer's Linear with its module path inside the layer.
type namedLinear struct {
	path string // e.g. self_attn.q_proj
	l    *Linear
}

// projections is the linear table every architecture shares (PEFT's module paths).
func projections(q, k, v, o *Linear, m *MLP) []namedLinear {
	return []namedLinear{
		{"self_attn." + ModuleQ, q}, {"self_attn." + ModuleK, k}, {"self_attn." + ModuleV, v},
		{"self_attn." + ModuleO, o},
		{"mlp." + ModuleGate, &m.GateProj}, {"mlp." + ModuleUp, &m.UpProj}, {"mlp." + ModuleDown, &m.DownProj},
	}
}

// moduleOf is the last part of a module path: self_attn.q_proj → q_proj.
func moduleOf(path string) string { return path[strings.LastIndexByte(path, '.')+1:] }

// AddAdapters attaches fresh adapters (PEFT's initialisation, drawn from Go's PCG seeded with seed
// in module order, so a seed gives the same adapters everywhere) to the targeted linear layers.
// From then on Parameters, Units and SetTrainable concern the adapters only: the base weights stay
// frozen in their dtype. Run it on the torch thread.
func (m *Model) AddAdapters(c LoRAConfig, seed uint64) error {
	rng := rand.New(rand.NewPCG(seed, 0x6c6f7261)) // "lora"
	return m.attach(c, func(name string, out, in int64) (a, b *torch.Tensor, err error) {
		bound := 1 / math.Sqrt(float64(in)) // kaiming_uniform_(a=√5): gain·√(3/fan_in), gain = √(1/3)
		vals := make([]float32, int64(c.Rank)*in)
		for j := range vals {
			vals[j] = float32((2*rng.Float64() - 1) * bound)
		}
		host := torch.FromSlice(vals, int64(c.Rank), in)
		a = host.ToDevice(m.Device)
		host.Free()
		return a, torch.Zeros([]int64{out, int64(c.Rank)}, torch.Float32, m.Device), nil
	})
}

// attach gives every targeted linear layer the adapter that make returns for it (module name
// such as model.layers.3.self_attn.q_proj, the base weight's out and in widths): A [r, in] and
// B [out, r] in float32 on the model's device, made inside the adapters' long-lived scope.
func (m *Model) attach(c LoRAConfig, make func(name string, out, in int64) (a, b *torch.Tensor, err error)) (err error) {
	defer torch.Recover(&err)
	if err := c.Validate(); err != nil {
		return err
	}
	if m.lora != nil {
		return fmt.Errorf("lora: the model has adapters already")
	}
	set := &adapters{cfg: c, scale: c.Scale(), scope: torch.NewLongScope("lora adapters")}
	defer func() {
		if err != nil {
			for _, a := range set.list {
				m.linear(a.Name).LoRA = nil
			}
			set.scope.Close()
		}
	}()
	targets := c.Targets()
	for i, l := range m.Layers {
		for _, nl := range l.linears() {
			if !slices.Contains(targets, moduleOf(nl.path)) {
				continue
			}
			ws := nl.l.Weight.Shape()
			a := &Adapter{Name: fmt.Sprintf("model.layers.%d.%s", i, nl.path), Unit: 1 + i, id: uint64(len(set.list)), set: set}
			set.scope.With(func() { a.A, a.B, err = make(a.Name, ws[0], ws[1]) })
			if err != nil {
				return err
			}
			nl.l.LoRA = a
			set.list = append(set.list, a)
		}
	}
	m.lora = set
	for _, p := range m.weights() { // frozen base: no gradients
		(*p.t).SetRequiresGrad(false)
	}
	return nil
}

// linear is the decoder's linear layer called name (model.layers.N.self_attn.q_proj), or nil.
func (m *Model) linear(name string) *Linear {
	for i, l := range m.Layers {
		for _, nl := range l.linears() {
			if name == fmt.Sprintf("model.layers.%d.%s", i, nl.path) {
				return nl.l
			}
		}
	}
	return nil
}

// LoRA is the adapters' configuration, or nil when the model has none.
func (m *Model) LoRA() *LoRAConfig {
	if m.lora == nil {
		return nil
	}
	c := m.lora.cfg
	return &c
}

// Adapters lists the model's adapters in module order (nil without LoRA).
func (m *Model) Adapters() []*Adapter {
	if m.lora == nil {
		return nil
	}
	return m.lora.list
}

// WithoutAdapters runs fn with the adapters switched off: the base model, e.g. the reference
// policy of a KL penalty, with no second copy of the weights. Without adapters it just runs fn.
func (m *Model) WithoutAdapters(fn func()) {
	if m.lora == nil {
		fn()
		return
	}
	was := m.lora.off
	m.lora.off = true
	defer func() { m.lora.off = was }()
	fn()
}

// dropping runs fn as (part of) a training pass whose dropout masks come from seed: the same seed
// gives the same masks, so a layer recomputed in the backward pass sees the forward's masks.
func (m *Model) dropping(seed uint64, fn func()) {
	if m.lora == nil || m.lora.cfg.Dropout == 0 {
		fn()
		return
	}
	m.lora.drop, m.lora.seed = true, seed
	defer func() { m.lora.drop = false }()
	fn()
}

// nextDropSeed is a fresh seed for a training pass's dropout masks.
func (m *Model) nextDropSeed() uint64 {
	if m.lora == nil {
		return 0
	}
	m.lora.pass++
	return m.lora.pass
}

// LoRAPasses is how many training passes have drawn dropout masks (0 without adapters): a
// checkpoint keeps it so that a resumed run draws the masks it would have drawn.
func (m *Model) LoRAPasses() uint64 {
	if m.lora == nil {
		return 0
	}
	return m.lora.pass
}

// SetLoRAPasses restores LoRAPasses from a checkpoint.
func (m *Model) SetLoRAPasses(n uint64) {
	if m.lora != nil {
		m.lora.pass = n
	}
}

// add returns y + scale·B(A(dropout(x))), made in float32 and cast to y's dtype.
func (a *Adapter) add(x, y *torch.Tensor) *torch.Tensor {
	xf := x.ToDType(torch.Float32)
	if s := a.set; s.drop && s.cfg.Dropout > 0 {
		g := torch.NewGenerator(s.seed*0x9e3779b97f4a7c15+a.id, x.Device())
		keep := torch.Rand(x.Shape(), torch.Float32, x.Device(), g).GeScalar(s.cfg.Dropout)
		g.Close()
		xf = xf.Mul(keep.ToDType(torch.Float32)).MulScalar(1 / (1 - s.cfg.Dropout))
	}
	d := torch.Linear(torch.Linear(xf, a.A, nil), a.B, nil).MulScalar(a.set.scale)
	if y.DType() == torch.Float32 {
		return y.Add(d)
	}
	return y.ToDType(torch.Float32).Add(d).ToDType(y.DType())
}

// active says whether the adapter takes part in a forward pass.
func (a *Adapter) active() bool { return a != nil && !a.set.off }

// Delta is scale·B·A [out, in] in float32: what merging adds to the base weight.
func (a *Adapter) Delta() *torch.Tensor { return a.B.Matmul(a.A).MulScalar(a.set.scale) }

// MergeAdapters folds every adapter into its base weight (W ← W + scale·B·A, computed in float32
// and stored in the weight's dtype) and removes the adapters: the model is then a plain model
// whose forward is the adapted one's (up to the dtype's rounding), for a merged export.
func (m *Model) MergeAdapters() (err error) {
	defer torch.Recover(&err)
	if m.lora == nil {
		return fmt.Errorf("lora: the model has no adapters to merge")
	}
	torch.NoGrad(func() {
		for _, l := range m.Layers {
			for _, nl := range l.linears() {
				a := nl.l.LoRA
				if a == nil {
					continue
				}
				s := torch.NewScope()
				merged := nl.l.Weight.ToDType(torch.Float32).Add(a.Delta()).ToDType(nl.l.Weight.DType())
				nl.l.Weight.Copy_(merged)
				s.Close()
				nl.l.LoRA = nil
			}
		}
	})
	m.lora.scope.Close()
	m.lora = nil
	return nil
}
