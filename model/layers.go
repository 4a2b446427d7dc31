package model

import "github.com/mtgrpo/mtgrpo/torch"

// Leaf layers shared by every architecture: Linear, RMSNorm, the SwiGLU MLP, RoPE and attention.
// Everything above them (which projections have a bias, whether q/k are normalised) is written out
// per architecture in llama.go, qwen2.go and qwen3.go.

// Linear is y = x Wᵀ + b with W [out, in] as HF stores it; Bias is nil when the layer has none.
// LoRA, when set, adds its low-rank update (lora.go) unless the model's adapters are switched off.
type Linear struct {
	Weight, Bias *torch.Tensor
	LoRA         *Adapter
}

// Forward applies the layer to x [..., in].
func (l *Linear) Forward(x *torch.Tensor) *torch.Tensor {
	y := torch.Linear(x, l.Weight, l.Bias)
	if l.LoRA.active() {
		y = l.LoRA.add(x, y)
	}
	return y
}

// RMSNorm is weight · x / sqrt(mean(x²) + eps), computed in float32 and cast back before the weight
// multiply, as HF's LlamaRMSNorm / Qwen2RMSNorm / Qwen3RMSNorm.
type RMSNorm struct {
	Weight *torch.Tensor
	Eps    float64
}

// Forward normalises over the last dimension.
func (n *RMSNorm) Forward(x *torch.Tensor) *torch.Tensor { return torch.RMSNorm(x, n.Weight, n.Eps) }

// MLP is SwiGLU: down(silu(gate(x)) · up(x)).
type MLP struct {
	GateProj, UpProj, DownProj Linear
}

// Forward applies the MLP to x [..., hidden].
func (m *MLP) Forward(x *torch.Tensor) *torch.Tensor { return m.forward(x, nil) }

// forward is Forward with gate and up as one product over f's fused weights when f is not nil
// (generation, fused.go).
func (m *MLP) forward(x *torch.Tensor, f *fusedLayer) *torch.Tensor {
	if f == nil {
		return m.DownProj.Forward(torch.SiluMul(m.GateProj.Forward(x), m.UpProj.Forward(x)))
	}
	gu := torch.Linear(x, f.gateUp, f.gateUpBias).SplitSizes([]int64{f.inter, f.inter}, -1)
	return m.DownProj.Forward(torch.SiluMul(adapt(&m.GateProj, x, gu[0]), adapt(&m.UpProj, x, gu[1])))
}

// splitHeads reshapes a projection [B, T, heads·D] to [B, heads, T, D].
func splitHeads(x *torch.Tensor, heads, headDim int) *torch.Tensor {
	s := x.Shape()
	return x.View(s[0], s[1], int64(heads), int64(headDim)).Transpose(1, 2)
}

// mergeHeads reshapes attention output [B, heads, T, D] back to [B, T, heads·D].
func mergeHeads(x *torch.Tensor) *torch.Tensor {
	s := x.Shape()
	return x.Transpose(1, 2).Reshape(s[0], s[2], s[1]*s[3])
}

// applyRope rotates x [B, H, T, D] by the batch's angles: x·cos + rotate_half(x)·sin with
// rotate_half(x) = cat(−x₂, x₁), cos and sin [B, 1, T, D] already in x's dtype (HF casts them to the
// activations' dtype too). One fused op.
func applyRope(x, cos, sin *torch.Tensor) *torch.Tensor { return torch.RoPE(x, cos, sin) }
