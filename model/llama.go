package model

import "github.com/mtgrpo/mtgrpo/torch"

// Llama 3.x (LlamaForCausalLM, modeling_llama.py): pre-norm decoder, grouped-query attention with
// RoPE (llama3 frequency scaling in Llama 3.1+), SwiGLU MLP. attention_bias adds a bias to q, k, v
// and o; mlp_bias to gate, up and down (both false in every Llama 3 release).

// LlamaAttention is the attention block: project → split heads → RoPE → cache → SDPA → o_proj.
type LlamaAttention struct {
	QProj, KProj, VProj, OProj Linear

	layer, heads, kvHeads, headDim int
}

// Forward attends x [B, T, hidden] under a's positions, mask and cache.
func (m *LlamaAttention) Forward(x *torch.Tensor, a *attention) *torch.Tensor {
	q, k, v := a.project(m.layer, x, &m.QProj, &m.KProj, &m.VProj)
	q, k, v = splitHeads(q, m.heads, m.headDim), splitHeads(k, m.kvHeads, m.headDim), splitHeads(v, m.kvHeads, m.headDim)
	q, k = a.rope(q), a.rope(k)
	k, v = a.cached(m.layer, k, v)
	return m.OProj.Forward(a.attend(q, k, v))
}

// LlamaDecoderLayer is one pre-norm block.
type LlamaDecoderLayer struct {
	InputLayernorm         RMSNorm
	SelfAttn               LlamaAttention
	PostAttentionLayernorm RMSNorm
	MLP                    MLP
}

// Forward is x + attn(norm(x)), then h + mlp(norm(h)).
func (l *LlamaDecoderLayer) Forward(x *torch.Tensor, a *attention) *torch.Tensor {
	h := x.Add(l.SelfAttn.Forward(l.InputLayernorm.Forward(x), a))
	return h.Add(l.MLP.forward(l.PostAttentionLayernorm.Forward(h), a.fusedAt(l.SelfAttn.layer)))
}

func newLlamaLayer(c *Config, i int) decoderLayer {
	return &LlamaDecoderLayer{
		InputLayernorm:         RMSNorm{Eps: c.RMSNormEps},
		SelfAttn:               LlamaAttention{layer: i, heads: c.NumAttentionHeads, kvHeads: c.KVHeads(), headDim: c.HeadDimension()},
		PostAttentionLayernorm: RMSNorm{Eps: c.RMSNormEps},
	}
}

func (l *LlamaDecoderLayer) parts() layerParts {
	a := &l.SelfAttn
	return layerParts{inNorm: &l.InputLayernorm, postNorm: &l.PostAttentionLayernorm, q: &a.QProj, k: &a.KProj,
		v: &a.VProj, o: &a.OProj, mlp: &l.MLP}
}

// weights is the layer's HF weight table (names relative to model.layers.{i}.).
func (l *LlamaDecoderLayer) weights(c *Config) []weight {
	hidden, inter := int64(c.HiddenSize), int64(c.IntermediateSize)
	q, kv := int64(c.NumAttentionHeads*c.HeadDimension()), int64(c.KVHeads()*c.HeadDimension())
	a, m := &l.SelfAttn, &l.MLP
	w := []weight{
		{"input_layernorm.weight", shape(hidden), &l.InputLayernorm.Weight},
		{"self_attn.q_proj.weight", shape(q, hidden), &a.QProj.Weight},
		{"self_attn.k_proj.weight", shape(kv, hidden), &a.KProj.Weight},
		{"self_attn.v_proj.weight", shape(kv, hidden), &a.VProj.Weight},
		{"self_attn.o_proj.weight", shape(hidden, q), &a.OProj.Weight},
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
	if c.MLPBias {
		w = append(w,
			weight{"mlp.gate_proj.bias", shape(inter), &m.GateProj.Bias},
			weight{"mlp.up_proj.bias", shape(inter), &m.UpProj.Bias},
			weight{"mlp.down_proj.bias", shape(hidden), &m.DownProj.Bias})
	}
	return w
}

// linears is the layer's linear table (adapter targets), module paths relative to the layer.
func (l *LlamaDecoderLayer) linears() []namedLinear {
	a := &l.SelfAttn
	return projections(&a.QProj, &a.KProj, &a.VProj, &a.OProj, &l.MLP)
}
