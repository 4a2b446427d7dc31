package torch

/*
#include "shim.h"
*/
import "C"

// AttentionOpts configures ScaledDotProductAttention.
type AttentionOpts struct {
	// Mask broadcasts to [B, H, Tq, Tk]: bool (true = may attend) or float, added to the scores
	// after a cast to q's dtype (PyTorch 2.x's CUDA kernels take no other). A query row that may
	// attend to nothing gives NaN or zeros depending on the libtorch version and kernel: give every
	// row at least one key.
	Mask *Tensor
	// Causal masks future positions, aligned top-left as in PyTorch: query i sees keys 0..i. With
	// a KV cache (Tq < Tk) pass an explicit Mask instead.
	Causal bool
	// Scale multiplies q·k; 0 means 1/sqrt(D).
	Scale float64
}

// ScaledDotProductAttention is softmax(q k^T * scale + mask) v for q [B, H, Tq, D] and k, v
// [B, Hkv, Tk, D]; Hkv may divide H (grouped-query attention: each kv head serves H/Hkv query
// heads). On CUDA with bf16/f16 and no mask this picks the flash kernel, reading grouped k and v
// heads in place (libtorch 2.5+); otherwise grouped heads are expanded first, which keeps the
// memory-efficient kernel for masked attention.
func ScaledDotProductAttention(q, k, v *Tensor, o AttentionOpts) *Tensor {
	var mask C.mt_tensor
	if o.Mask != nil {
		mask = o.Mask.handle("SDPA")
	}
	var out C.mt_tensor
	check("SDPA", C.mt_sdpa(q.handle("SDPA"), k.handle("SDPA"), v.handle("SDPA"), mask, cbool(o.Causal),
		C.double(o.Scale), &out))
	return wrap("SDPA", out)
}

// RMSNorm is weight * x / sqrt(mean(x², last dim) + eps), computed in float32 and cast back to x's
// dtype before the weight multiply (as Llama and Qwen do), in one crossing.
func RMSNorm(x, weight *Tensor, eps float64) *Tensor {
	var out C.mt_tensor
	check("RMSNorm", C.mt_rms_norm(x.handle("RMSNorm"), weight.handle("RMSNorm"), C.double(eps), &out))
	return wrap("RMSNorm", out)
}

// SiluMul is silu(gate) * up, the SwiGLU activation, in one crossing.
func SiluMul(gate, up *Tensor) *Tensor {
	var out C.mt_tensor
	check("SiluMul", C.mt_silu_mul(gate.handle("SiluMul"), up.handle("SiluMul"), &out))
	return wrap("SiluMul", out)
}

// RoPE applies rotary position embeddings in the Hugging Face layout (Llama, Qwen):
// x·cos + rotate_half(x)·sin with rotate_half(x) = cat(−x[..., D/2:], x[..., :D/2]), in one crossing.
// x is [..., T, D]; cos and sin broadcast to it (e.g. [T, D]) and are cast to x's dtype.
func RoPE(x, cos, sin *Tensor) *Tensor {
	var out C.mt_tensor
	check("RoPE", C.mt_rope(x.handle("RoPE"), cos.handle("RoPE"), sin.handle("RoPE"), &out))
	return wrap("RoPE", out)
}

// TokenLogprobs is log_softmax(logits, -1) taken at ids, in float32: logits [..., V], ids [...]
// int64 -> [...]. One crossing and no [..., V] log-prob tensor kept alive by the caller.
func TokenLogprobs(logits, ids *Tensor) *Tensor {
	var out C.mt_tensor
	check("TokenLogprobs", C.mt_token_logprobs(logits.handle("TokenLogprobs"), ids.handle("TokenLogprobs"), &out))
	return wrap("TokenLogprobs", out)
}
