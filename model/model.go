package model

import (
	"fmt"

	"github.com/mtgrpo/mtgrpo/torch"
)

// Model is a decoder-only language model (Llama, Qwen2 or Qwen3) with its weights on one device in
// one dtype. Its field names follow the HF module names; the weight table (weights) maps them one to
// one onto checkpoint names. All methods run on the torch thread (inside torch.Run).
type Model struct {
	Config     *Config
	Generation *GenerationConfig

	EmbedTokens *torch.Tensor // model.embed_tokens.weight [vocab, hidden]
	Layers      []decoderLayer
	Norm        RMSNorm // model.norm
	LMHead      Linear  // lm_head; its Weight is EmbedTokens when tie_word_embeddings

	Device torch.Device
	DType  torch.DType

	// TokenizerDir is where the tokenizer files came from (the loaded directory); Export copies them.
	TokenizerDir string

	invFreq []float32    // RoPE inverse frequencies, llama3 scaling applied
	rope    ropeTable    // cos / sin by position
	scope   *torch.Scope // owns the weights and the RoPE table
	lora    *adapters    // the LoRA adapters (AddAdapters), or nil
}

// decoderLayer is one block of an architecture (LlamaDecoderLayer, Qwen2DecoderLayer,
// Qwen3DecoderLayer).
type decoderLayer interface {
	// Forward maps hidden states [B, T, hidden] to the next layer's input.
	Forward(x *torch.Tensor, a *attention) *torch.Tensor
	// weights is the layer's weight table, names relative to model.layers.{i}.
	weights(c *Config) []weight
	// linears is the layer's linear modules, paths relative to model.layers.{i}.
	linears() []namedLinear
	// parts points at the layer's leaf layers, for the passes that take them all at once (the
	// fused projections, the static decode step).
	parts() layerParts
}

// layerParts are a layer's leaf layers. qNorm and kNorm are nil where the architecture has none
// (Llama, Qwen2).
type layerParts struct {
	inNorm, postNorm *RMSNorm
	q, k, v, o       *Linear
	qNorm, kNorm     *RMSNorm
	mlp              *MLP
}

var newLayer = map[string]func(c *Config, i int) decoderLayer{
	"llama": newLlamaLayer,
	"qwen2": newQwen2Layer,
	"qwen3": newQwen3Layer,
}

// weight is one row of a weight table: the HF name, the shape it must have, and the field it fills.
type weight struct {
	name  string
	shape []int64
	t     **torch.Tensor
}

func shape(dims ...int64) []int64 { return dims }

// Options say where the weights live and in which dtype they compute. Checkpoints in any stored
// dtype are converted on load.
type Options struct {
	Device string // "cpu" (default), "cuda", "cuda:N"
	// "float32" (default), "bfloat16", "float16" (CUDA only with Debian's libtorch 1.13), or "auto":
	// config.json's torch_dtype.
	DType string
	// Progress, when set, is told how Load reads the weights (nil: Load reports nothing).
	Progress Progress
}

// Progress follows a long operation: Start once with the total work in bytes, Add as parts arrive,
// Done once at the end, whether it succeeded or not. Callers draw it (a terminal bar, a log line);
// the model package writes nothing itself.
type Progress interface {
	Start(label string, total int64)
	Add(n int64)
	Done()
}

func (o Options) resolve(c *Config) (torch.Device, torch.DType, error) {
	dev, dt := torch.CPU, torch.Float32
	var err error
	if o.Device != "" {
		if dev, err = torch.ParseDevice(o.Device); err != nil {
			return 0, 0, fmt.Errorf("model: device: %w", err)
		}
	}
	if o.DType == "auto" {
		o.DType, _ = c.StoredDType()
	}
	if o.DType != "" {
		if dt, err = ParseDType(o.DType); err != nil {
			return 0, 0, fmt.Errorf("model: dtype: %w", err)
		}
	}
	return dev, dt, nil
}

// ParseDType reads a compute dtype as Options.DType takes it ("auto" aside): float32, bfloat16 or
// float16, under any of torch.ParseDType's names for them (fp32, bf16, half, ...).
func ParseDType(name string) (torch.DType, error) {
	dt, err := torch.ParseDType(name)
	if err != nil || dt != torch.Float32 && dt != torch.BFloat16 && dt != torch.Float16 {
		return 0, fmt.Errorf("%q is not a model dtype (float32, bfloat16, float16)", name)
	}
	return dt, nil
}

// newModel builds the module tree of c with no weights yet.
func newModel(c *Config, o Options) (*Model, error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("model: config: %w", err)
	}
	dev, dt, err := o.resolve(c)
	if err != nil {
		return nil, err
	}
	r, _ := c.Rope()
	m := &Model{Config: c, Device: dev, DType: dt, Norm: RMSNorm{Eps: c.RMSNormEps},
		invFreq: invFreq(r, c.HeadDimension()), scope: torch.NewLongScope("model weights")}
	for i := 0; i < c.NumHiddenLayers; i++ {
		m.Layers = append(m.Layers, newLayer[c.ModelType](c, i))
	}
	return m, nil
}

// weights is the model's full weight table in checkpoint order: it drives Load, Export, Init and
// Parameters. lm_head.weight is listed only when the head is not tied to the embedding.
func (m *Model) weights() []weight {
	c := m.Config
	vocab, hidden := int64(c.VocabSize), int64(c.HiddenSize)
	w := []weight{{"model.embed_tokens.weight", shape(vocab, hidden), &m.EmbedTokens}}
	for i, l := range m.Layers {
		for _, e := range l.weights(c) {
			e.name = fmt.Sprintf("model.layers.%d.%s", i, e.name)
			w = append(w, e)
		}
	}
	w = append(w, weight{"model.norm.weight", shape(hidden), &m.Norm.Weight})
	if !c.TieWordEmbeddings {
		w = append(w, weight{"lm_head.weight", shape(vocab, hidden), &m.LMHead.Weight})
	}
	return w
}

// ready finishes a model whose weights are filled: it ties the head to the embedding when the config
// says so and builds the RoPE table for the first min(max_position_embeddings, 4096) positions.
func (m *Model) ready() {
	if m.Config.TieWordEmbeddings {
		m.LMHead.Weight = m.EmbedTokens
	}
	m.rope.ensure(m, max(1, min(m.Config.MaxPositionEmbeddings, 4096)))
	// Lay q/k/v and gate/up out back to back now, while memory is free (generation would do it on
	// its first pass otherwise).
	s := torch.NewScope()
	defer s.Close()
	m.fuse()
}

// Param is a named trainable tensor (the optimizer takes Parameters as they are).
type Param = torch.NamedTensor

// Parameters lists the trainable tensors by name: every weight once, by HF name (a tied head
// appears only as the embedding), or, with adapters, only the adapters (PEFT's names below
// base_model.model.: model.layers.N.self_attn.q_proj.lora_A.weight, then lora_B.weight).
func (m *Model) Parameters() []Param {
	var ps []Param
	if m.lora != nil {
		for _, a := range m.lora.list {
			ps = append(ps, Param{Name: a.Name + ".lora_A.weight", Tensor: a.A}, Param{Name: a.Name + ".lora_B.weight", Tensor: a.B})
		}
		return ps
	}
	for _, w := range m.weights() {
		ps = append(ps, Param{Name: w.name, Tensor: *w.t})
	}
	return ps
}

// Units is the unit of each of Parameters, in its order: 0 for the embedding (with a tied head),
// 1+l for decoder layer l, NumUnits-1 for the final norm and an untied head. A unit's gradients
// are complete together in Backward (ForwardOptions.GradsReady), so a sharded optimizer can
// reduce them unit by unit.
func (m *Model) Units() []int {
	if m.lora != nil { // an adapter pair belongs to its layer
		var us []int
		for _, a := range m.lora.list {
			us = append(us, a.Unit, a.Unit)
		}
		return us
	}
	us := []int{0} // the embedding, first in weights
	for i, l := range m.Layers {
		for range l.weights(m.Config) {
			us = append(us, 1+i)
		}
	}
	for len(us) < len(m.weights()) { // the final norm and an untied head
		us = append(us, m.NumUnits()-1)
	}
	return us
}

// NumUnits is the number of units of Units: the embedding, the layers and the final one.
func (m *Model) NumUnits() int { return len(m.Layers) + 2 }

// ParameterTensors is Parameters without the names, for the optimizer and grad clipping.
func (m *Model) ParameterTensors() []*torch.Tensor {
	var ts []*torch.Tensor
	for _, p := range m.Parameters() {
		ts = append(ts, p.Tensor)
	}
	return ts
}

// SetTrainable turns gradient tracking on or off for every trainable tensor (Parameters: with
// adapters, the adapters only; the base weights stay frozen).
func (m *Model) SetTrainable(on bool) {
	for _, t := range m.ParameterTensors() {
		t.SetRequiresGrad(on)
	}
}

// NumParameters is the number of scalar weights (a tied head counted once).
func (m *Model) NumParameters() int64 {
	var n int64
	for _, w := range m.weights() {
		k := int64(1)
		for _, d := range w.shape {
			k *= d
		}
		n += k
	}
	return n
}

// NumParameters is the number of scalar weights of a model of c (its weight table, a tied head
// counted once), from the config alone: no tensor is made.
func (c *Config) NumParameters() (int64, error) {
	if err := c.Validate(); err != nil {
		return 0, fmt.Errorf("model: config: %w", err)
	}
	m := &Model{Config: c}
	for i := 0; i < c.NumHiddenLayers; i++ {
		m.Layers = append(m.Layers, newLayer[c.ModelType](c, i))
	}
	return m.NumParameters(), nil
}

// Close frees the weights. The model is unusable afterwards.
func (m *Model) Close() {
	if m.lora != nil {
		m.lora.scope.Close()
	}
	if m.scope != nil {
		m.scope.Close()
	}
}

// embed looks the ids [B, T] up in the embedding: [B, T, hidden]. As in transformers, the
// pad_token_id row gets no gradient from the lookup (a tied head still trains it).
func (m *Model) embed(ids *torch.Tensor) *torch.Tensor {
	return torch.Embedding(m.EmbedTokens, ids, int64(m.Config.PaddingIdx()))
}

// logits applies the final norm and the head to hidden states [..., hidden]: float32 [..., vocab]
// (the head runs in the model dtype and is then upcast, as HF's logits.float()).
func (m *Model) logits(h *torch.Tensor) *torch.Tensor {
	return m.LMHead.Forward(m.Norm.Forward(h)).ToDType(torch.Float32)
}
