package model

import "github.com/mtgrpo/mtgrpo/torch"

// Qwen2 and Qwen2.5 (Qwen2ForCausalLM, modeling_qwen2.py): Llama with a bias on q, k and v (always,
// whatever attention_bias says) and none on o. Sliding-window attention (use_sliding_window) is
// refused by Config.Validate; the released Qwen2.5 configs have it off.

// Qwen2Attention is the attention block: project (q/k/v with bias) → split heads → RoPE → cache →
// SDPA → o_proj (no bias).
type Qwen2Attention struct {
	QProj, KProj, VProj, OProj Linear

	layer, heads, kvHeads, headDim int
}

// Forward attends x [B, T, hidden] under a's positions, mask and cache.
func (m *Qwen2Attention) Forward(x *torch.Tensor, a *attention) *torch.Tensor {
	q, k, v := a.project(m.layer, x, &m.QProj, &m.KProj, &m.VProj)
	q, k, v = splitHeads(q, m.heads, m.headDim), splitHeads(k, m.kvHeads, m.headDim), splitHeads(v, m.kvHeads, m.headDim)
	q, k = a.rope(q), a.rope(k)
	k, v = a.cached(m.layer, k, v)
	return m.OProj.Forward(a.attend(q, k, v))
}

// Qwen2DecoderLayer is one pre-norm block.
type Qwen2DecoderLayer struct {
	InputLayernorm         RMSNorm
	SelfAttn               Qwen2Attention
	PostAttentionLayernorm RMSNorm
	MLP                    MLP
}

// Forward is x + attn(norm(x)), then h + mlp(norm(h)).
func (l *Qwen2DecoderLayer) Forward(x *torch.Tensor, a *attention) *torch.Tensor {
	h := x.Add(l.SelfAttn.Forward(l.InputLayernorm.Forward(x), a))
	return h.Add(l.MLP.forward(l.PostAttentionLayernorm.Forward(h), a.fusedAt(l.SelfAttn.layer)))
}

func newQwen2Layer(c *Config, i int) decoderLayer {
	return &Qwen2DecoderLayer{
		InputLayernorm:         RMSNorm{Eps: c.RMSNormEps},
		SelfAttn:               Qwen2Attention{layer: i, heads: c.NumAttentionHeads, kvHeads: c.KVHeads(), headDim: c.HeadDimension()},
		PostAttentionLayernorm: RMSNorm{Eps: c.RMSNormEps},
	}
}

func (l *Qwen2DecoderLayer) parts() layerParts {
	a := &l.SelfAttn
	return layerParts{inNorm: &l.InputLayernorm, postNorm: &l.PostAttentionLayernorm, q: &a.QProj, k: &a.KProj,
		v: &a.VProj, o: &a.OProj, mlp: &l.MLP}
}

// weights is the layer's HF weight table (names relative to model.layers.{i}.).
func (l *Qwen2DecoderLayer) weights(c *Config) []weight {
	hidden, inter := int64(c.HiddenSize), int64(c.IntermediateSize)
	q, kv := int64(c.NumAttentionHeads*c.HeadDimension()), int64(c.KVHeads()*c.HeadDimension())
	a, m := &l.SelfAttn, &l.MLP
	return []weight{
		{"input_layernorm.weight", shape(hidden), &l.InputLayernorm.Weight},
		{"self_attn.q_proj.weight", shape(q, hidden), &a.QProj.Weight},
		{"self_attn.q_proj.bias", shape(q), &a.QProj.Bias},
		{"self_attn.k_proj.weight", shape(kv, hidden), &a.KProj.Weight},
		{"self_attn.k_proj.bias", shape(kv), &a.KProj.Bias},
		{"self_attn.v_proj.weight", shape(kv, hidden), &a.VProj.Weight},
		{"self_attn.v_proj.bias", shape(kv), &a.VProj.Bias},
		{"self_attn.o_proj.weight", shape(hidden, q), &a.OProj.Weight},
		{"post_attention_layernorm.weight", shape(hidden), &l.PostAttentionLayernorm.Weight},
		{"mlp.gate_proj.weight", shape(inter, hidden), &m.GateProj.Weight},
		{"mlp.up_proj.weight", shape(inter, hidden), &m.UpProj.Weight},
		{"mlp.down_proj.weight", shape(hidden, inter), &m.DownProj.Weight},
	}
}

// linears is the layer's linear table (adapter targets), module paths relative to the layer.
func (l *Qwen2DecoderLayer) linears() []namedLinear {
	a := &l.SelfAttn
	return projections(&a.QProj, &a.KProj, &a.VProj, &a.OProj, &l.MLP)
}
