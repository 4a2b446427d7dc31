package torch

/*
#include "shim.h"
*/
import "C"

func (t *Tensor) unary(op string, code C.int) *Tensor {
	var out C.mt_tensor
	check(op, C.mt_unary(code, t.handle(op), &out))
	return wrap(op, out)
}

// Neg is -t.
func (t *Tensor) Neg() *Tensor { return t.unary("Neg", C.MT_NEG) }

// Exp is e^t.
func (t *Tensor) Exp() *Tensor { return t.unary("Exp", C.MT_EXP) }

// Log is the natural logarithm.
func (t *Tensor) Log() *Tensor { return t.unary("Log", C.MT_LOG) }

// Log1p is log(1+t).
func (t *Tensor) Log1p() *Tensor { return t.unary("Log1p", C.MT_LOG1P) }

// Sqrt is the square root.
func (t *Tensor) Sqrt() *Tensor { return t.unary("Sqrt", C.MT_SQRT) }

// Rsqrt is 1/sqrt(t).
func (t *Tensor) Rsqrt() *Tensor { return t.unary("Rsqrt", C.MT_RSQRT) }

// Tanh is the hyperbolic tangent.
func (t *Tensor) Tanh() *Tensor { return t.unary("Tanh", C.MT_TANH) }

// Sigmoid is 1/(1+e^-t).
func (t *Tensor) Sigmoid() *Tensor { return t.unary("Sigmoid", C.MT_SIGMOID) }

// Silu is t*sigmoid(t).
func (t *Tensor) Silu() *Tensor { return t.unary("Silu", C.MT_SILU) }

// Relu is max(t, 0).
func (t *Tensor) Relu() *Tensor { return t.unary("Relu", C.MT_RELU) }

// Gelu is the exact (erf) GELU.
func (t *Tensor) Gelu() *Tensor { return t.unary("Gelu", C.MT_GELU) }

// GeluTanh is the tanh approximation of GELU.
func (t *Tensor) GeluTanh() *Tensor { return t.unary("GeluTanh", C.MT_GELU_TANH) }

// Abs is |t|.
func (t *Tensor) Abs() *Tensor { return t.unary("Abs", C.MT_ABS) }

// Not is the logical not (bool result).
func (t *Tensor) Not() *Tensor { return t.unary("Not", C.MT_NOT) }

// Sin is the sine.
func (t *Tensor) Sin() *Tensor { return t.unary("Sin", C.MT_SIN) }

// Cos is the cosine.
func (t *Tensor) Cos() *Tensor { return t.unary("Cos", C.MT_COS) }

// Reciprocal is 1/t.
func (t *Tensor) Reciprocal() *Tensor { return t.unary("Reciprocal", C.MT_RECIPROCAL) }

// Square is t*t.
func (t *Tensor) Square() *Tensor { return t.unary("Square", C.MT_SQUARE) }

// IsNaN marks NaN elements.
func (t *Tensor) IsNaN() *Tensor { return t.unary("IsNaN", C.MT_ISNAN) }

// IsFinite marks elements that are neither infinite nor NaN.
func (t *Tensor) IsFinite() *Tensor { return t.unary("IsFinite", C.MT_ISFINITE) }

func (t *Tensor) binary(op string, code C.int, o *Tensor) *Tensor {
	var out C.mt_tensor
	check(op, C.mt_binary(code, t.handle(op), o.handle(op), &out))
	return wrap(op, out)
}

func (t *Tensor) binaryInPlace(op string, code C.int, o *Tensor) *Tensor {
	check(op, C.mt_binary(code, t.handle(op), o.handle(op), nil))
	return t
}

func (t *Tensor) scalar(op string, code C.int, s float64) *Tensor {
	var out C.mt_tensor
	check(op, C.mt_binary_scalar(code, t.handle(op), C.double(s), &out))
	return wrap(op, out)
}

func (t *Tensor) scalarInPlace(op string, code C.int, s float64) *Tensor {
	check(op, C.mt_binary_scalar(code, t.handle(op), C.double(s), nil))
	return t
}

// Add is t+o (broadcasting).
func (t *Tensor) Add(o *Tensor) *Tensor { return t.binary("Add", C.MT_ADD, o) }

// Sub is t-o.
func (t *Tensor) Sub(o *Tensor) *Tensor { return t.binary("Sub", C.MT_SUB, o) }

// Mul is t*o elementwise.
func (t *Tensor) Mul(o *Tensor) *Tensor { return t.binary("Mul", C.MT_MUL, o) }

// Div is t/o (true division).
func (t *Tensor) Div(o *Tensor) *Tensor { return t.binary("Div", C.MT_DIV, o) }

// Pow is t^o.
func (t *Tensor) Pow(o *Tensor) *Tensor { return t.binary("Pow", C.MT_POW, o) }

// Maximum is the elementwise max.
func (t *Tensor) Maximum(o *Tensor) *Tensor { return t.binary("Maximum", C.MT_MAXIMUM, o) }

// Minimum is the elementwise min.
func (t *Tensor) Minimum(o *Tensor) *Tensor { return t.binary("Minimum", C.MT_MINIMUM, o) }

// And is the logical and.
func (t *Tensor) And(o *Tensor) *Tensor { return t.binary("And", C.MT_AND, o) }

// Or is the logical or.
func (t *Tensor) Or(o *Tensor) *Tensor { return t.binary("Or", C.MT_OR, o) }

// Eq is t == o (bool).
func (t *Tensor) Eq(o *Tensor) *Tensor { return t.binary("Eq", C.MT_EQ, o) }

// Ne is t != o.
func (t *Tensor) Ne(o *Tensor) *Tensor { return t.binary("Ne", C.MT_NE, o) }

// Lt is t < o.
func (t *Tensor) Lt(o *Tensor) *Tensor { return t.binary("Lt", C.MT_LT, o) }

// Le is t <= o.
func (t *Tensor) Le(o *Tensor) *Tensor { return t.binary("Le", C.MT_LE, o) }

// Gt is t > o.
func (t *Tensor) Gt(o *Tensor) *Tensor { return t.binary("Gt", C.MT_GT, o) }

// Ge is t >= o.
func (t *Tensor) Ge(o *Tensor) *Tensor { return t.binary("Ge", C.MT_GE, o) }

// Add_ adds o into t in place and returns t.
func (t *Tensor) Add_(o *Tensor) *Tensor { return t.binaryInPlace("Add_", C.MT_ADD, o) }

// Sub_ subtracts o from t in place.
func (t *Tensor) Sub_(o *Tensor) *Tensor { return t.binaryInPlace("Sub_", C.MT_SUB, o) }

// Mul_ multiplies t by o in place.
func (t *Tensor) Mul_(o *Tensor) *Tensor { return t.binaryInPlace("Mul_", C.MT_MUL, o) }

// Div_ divides t by o in place.
func (t *Tensor) Div_(o *Tensor) *Tensor { return t.binaryInPlace("Div_", C.MT_DIV, o) }

// AddScalar is t+s.
func (t *Tensor) AddScalar(s float64) *Tensor { return t.scalar("AddScalar", C.MT_ADD, s) }

// SubScalar is t-s.
func (t *Tensor) SubScalar(s float64) *Tensor { return t.scalar("SubScalar", C.MT_SUB, s) }

// RSubScalar is s-t.
func (t *Tensor) RSubScalar(s float64) *Tensor { return t.scalar("RSubScalar", C.MT_RSUB, s) }

// MulScalar is t*s.
func (t *Tensor) MulScalar(s float64) *Tensor { return t.scalar("MulScalar", C.MT_MUL, s) }

// DivScalar is t/s.
func (t *Tensor) DivScalar(s float64) *Tensor { return t.scalar("DivScalar", C.MT_DIV, s) }

// PowScalar is t^s.
func (t *Tensor) PowScalar(s float64) *Tensor { return t.scalar("PowScalar", C.MT_POW, s) }

// EqScalar is t == s.
func (t *Tensor) EqScalar(s float64) *Tensor { return t.scalar("EqScalar", C.MT_EQ, s) }

// NeScalar is t != s.
func (t *Tensor) NeScalar(s float64) *Tensor { return t.scalar("NeScalar", C.MT_NE, s) }

// LtScalar is t < s.
func (t *Tensor) LtScalar(s float64) *Tensor { return t.scalar("LtScalar", C.MT_LT, s) }

// LeScalar is t <= s.
func (t *Tensor) LeScalar(s float64) *Tensor { return t.scalar("LeScalar", C.MT_LE, s) }

// GtScalar is t > s.
func (t *Tensor) GtScalar(s float64) *Tensor { return t.scalar("GtScalar", C.MT_GT, s) }

// GeScalar is t >= s.
func (t *Tensor) GeScalar(s float64) *Tensor { return t.scalar("GeScalar", C.MT_GE, s) }

// AddScalar_ adds s in place.
func (t *Tensor) AddScalar_(s float64) *Tensor { return t.scalarInPlace("AddScalar_", C.MT_ADD, s) }

// MulScalar_ multiplies by s in place.
func (t *Tensor) MulScalar_(s float64) *Tensor { return t.scalarInPlace("MulScalar_", C.MT_MUL, s) }

// DivScalar_ divides by s in place.
func (t *Tensor) DivScalar_(s float64) *Tensor { return t.scalarInPlace("DivScalar_", C.MT_DIV, s) }

// Clamp limits t to [lo, hi].
func (t *Tensor) Clamp(lo, hi float64) *Tensor { return t.clamp("Clamp", true, lo, true, hi) }

// ClampMin limits t to [lo, inf).
func (t *Tensor) ClampMin(lo float64) *Tensor { return t.clamp("ClampMin", true, lo, false, 0) }

// ClampMax limits t to (-inf, hi].
func (t *Tensor) ClampMax(hi float64) *Tensor { return t.clamp("ClampMax", false, 0, true, hi) }

func (t *Tensor) clamp(op string, hasLo bool, lo float64, hasHi bool, hi float64) *Tensor {
	var out C.mt_tensor
	check(op, C.mt_clamp(t.handle(op), cbool(hasLo), C.double(lo), cbool(hasHi), C.double(hi), &out))
	return wrap(op, out)
}

// Where picks a where cond is true, else b (broadcasting).
func Where(cond, a, b *Tensor) *Tensor {
	var out C.mt_tensor
	check("Where", C.mt_where(cond.handle("Where"), a.handle("Where"), b.handle("Where"), &out))
	return wrap("Where", out)
}

// MaskedFill is t with v where mask (bool, broadcasting) is true.
func (t *Tensor) MaskedFill(mask *Tensor, v float64) *Tensor {
	var out C.mt_tensor
	check("MaskedFill", C.mt_masked_fill(t.handle("MaskedFill"), mask.handle("MaskedFill"), C.double(v), &out))
	return wrap("MaskedFill", out)
}

// MaskedFill_ writes v where mask is true, in place.
func (t *Tensor) MaskedFill_(mask *Tensor, v float64) *Tensor {
	check("MaskedFill_", C.mt_masked_fill(t.handle("MaskedFill_"), mask.handle("MaskedFill_"), C.double(v), nil))
	return t
}

// Matmul is the matrix product with numpy broadcasting rules.
func (t *Tensor) Matmul(o *Tensor) *Tensor {
	var out C.mt_tensor
	check("Matmul", C.mt_matmul(t.handle("Matmul"), o.handle("Matmul"), &out))
	return wrap("Matmul", out)
}

// Linear is x @ w^T + bias with w [out, in]; bias may be nil.
func Linear(x, w, bias *Tensor) *Tensor {
	var b C.mt_tensor
	if bias != nil {
		b = bias.handle("Linear")
	}
	var out C.mt_tensor
	check("Linear", C.mt_linear(x.handle("Linear"), w.handle("Linear"), b, &out))
	return wrap("Linear", out)
}

// Triu keeps the elements on and above the diagonal-th diagonal of the last two dimensions.
func (t *Tensor) Triu(diagonal int64) *Tensor { return t.tri("Triu", diagonal, true) }

// Tril keeps the elements on and below the diagonal-th diagonal.
func (t *Tensor) Tril(diagonal int64) *Tensor { return t.tri("Tril", diagonal, false) }

func (t *Tensor) tri(op string, diagonal int64, upper bool) *Tensor {
	var out C.mt_tensor
	check(op, C.mt_tri(t.handle(op), C.int64_t(diagonal), cbool(upper), &out))
	return wrap(op, out)
}
