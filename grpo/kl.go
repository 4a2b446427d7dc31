package grpo

// KL to the reference model on tensors: algo.KLPenalty's estimators token by token on the device.
// Reference: verl core_algos.py kl_penalty_forward.

import (
	"github.com/mtgrpo/mtgrpo/grpo/algo"
	"github.com/mtgrpo/mtgrpo/torch"
)

// TokenKL is algo.KLPenalty on tensors: lp and ref of one shape (float32 math) → per-token KL of that
// shape. Differentiable in lp.
func TokenKL(kind algo.KLKind, lp, ref *torch.Tensor) (*torch.Tensor, error) {
	d := lp.Sub(ref)
	switch kind {
	case algo.KLK1:
		return d, nil
	case algo.KLK2:
		return d.Square().MulScalar(0.5), nil
	case algo.KLK3:
		x := d.Neg().Clamp(-20, 20)
		return x.Exp().Sub(x).AddScalar(-1).Clamp(-10, 10), nil
	case algo.KLAbs:
		return d.Abs(), nil
	}
	_, err := algo.ParseKLKind(string(kind))
	return nil, err
}
