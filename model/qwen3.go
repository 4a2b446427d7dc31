package model

import "github.com/mtgrpo/mtgrpo/torch"

// Qwen3 (Qwen3ForCausalLM, modeling_qwen3.py): Llama plus q_norm and k_norm, RMSNorms over head_dim
// applied per head before RoPE; no q/k/v bias (attention_bias, false in every release, adds one to
// q, k, v and o). head_dim is written in config.json and need not be hidden/heads (Qwen3-0.6B:
// 1024 hidden, 16 heads, head_dim 128).

// Qwen3Attention is the attention block: project → split heads → q/k norm → RoPE → cache → SDPA →
// o_proj.
type Qwen3Attention struct {
	QProj, KProj, VProj, OProj Linear
	QNorm, KNorm               RMSNorm

	layer, heads, kvHeads, headDim int
}

// Forward attends x [B, T, hidden] under a's positions, mask and cache.
func (m *Qwen3Attention) Forward(x *torch.Tensor, a *attention) *torch.Tensor {
	q, k, v := a.project(m.layer, x, &m.QProj, &m.KProj, &m.VProj)
	q = m.QNorm.Forward(splitHeads(q, m.heads, m.headDim))
	k = m.KNorm.Forward(splitHeads(k, m.kvHeads, m.headDim))
	v = splitHeads(v, m.kvHeads, m.headDim)
	q, k = a.rope(q), a.rope(k)
	k, v = a.cached(m.layer, k, v)
	return m.OProj.Forward(a.attend(q, k, v))
}

// Qwen3DecoderLayer is one pre-norm block.
type Qwen3DecoderLayer struct {
	InputLayernorm         RMSNorm
	SelfAttn               Qwen3Attention
	PostAttentionLayernorm RMSNorm
	MLP                    MLP
}

// Forward is x + attn(norm(x)), then h + mlp(norm(h)).
func (l *Qwen3DecoderLayer) Forward(x *torch.Tensor, a *attention) *torch.Tensor {
	h := x.Add(l.SelfAttn.Forward(l.InputLayernorm.Forward(x), a))
	return h.Add(l.MLP.forward(l.PostAttentionLayernorm.Forward(h), a.fusedAt(l.SelfAttn.layer)))
}

func newQwen3Layer(c *Config, i int) decoderLayer {
	return &Qwen3DecoderLayer{
		InputLayernorm: RMSNorm{Eps: c.RMSNormEps},
		SelfAttn: Qwen3Attention{layer: i, heads: c.NumAttentionHeads, kvHeads: c.KVHeads(), headDim: c.HeadDimension(),
			QNorm: RMSNorm{Eps: c.RMSNormEps}, KNorm: RMSNorm{Eps: c.RMSNormEps}},
		PostAttentionLayernorm: RMSNorm{Eps: c.RMSNormEps},
	}
}

func (l *Qwen3DecoderLayer) parts() layerParts {
	a := &l.SelfAttn
	return layerParts{inNorm: &l.InputLayernorm, postNorm: &l.PostAttentionLayernorm, q: &a.QProj, k: &a.KProj,
		v: &a.VProj, o: &a.OProj, qNorm: &a.QNorm, kNorm: &a.KNorm, mlp: &l.MLP}
}

// weights is the layer's HF weight table (names relative to model.layers.{i}.).
func (l *Qwen3DecoderLayer) weights(c *Config) []weight {
	hidden, inter, d := int64(c.HiddenSize), int64(c.IntermediateSize), int64(c.HeadDimension())
	q, kv := int64(c.NumAttentionHeads)*d, int64(c.KVHeads())*d
	a, m := &l.SelfAttn, &l.MLP
	w := []weight{
		{"input_layernorm.weight", shape(hidden), &l.InputLayernorm.Weight},
		{"self_attn.q_proj.weight", shape(q, hidden), &a.QProj.Weight},
		{"self_attn.k_proj.weight", shape(kv, hidden), &a.KProj.Weight},
		{"self_attn.v_proj.weight", shape(kv, hidden), &a.VProj.Weight},
		{"self_attn.o_proj.weight", shape(hidden, q), &a.OProj.Weight},
		{"self_attn.q_norm.weight", shape(d), &a.QNorm.Weight},
		{"self_attn.k_norm.weight", shape(d), &a.KNorm.Weight},
		{"post_attention_layernorm.weight", shape(hidden), &l.PostAttentionLayernorm.Weight},
		{"mlp.gate_proj.weight", shape(inter, hidden), &m.GateProj.Weight},
		{"mlp.up_proj.weight", shape(inter, hidden), &m.UpProj.Weight},
		{"mlp.down_proj.weight", shape(hidden, inter), &m.DownProj.Weight},
	}
	if c.AttentionBias {
		w = append(w,
			weight{"self_attn.q_proj.bias", shape(q), &a.QProj.Bias},
			weight{"self_attn.k_proj.bias", shape(kv), &a.KProj.Bias},
			weight{"self_attn.v_proj.bias", shape(kv), &a.VProj.Bias},
			weight{"self_attn.o_proj.bias", shape(hidden), &a.OProj.Bias})
	}
	return w
}

// linears is the layer's linear table (adapter targets), module paths relative to the layer.
func (l *Qwen3DecoderLayer) linears() []namedLinear {
	a := &l.SelfAttn
	return projections(&a.QProj, &a.KProj, &a.VProj, &a.OProj, &l.MLP)
}
