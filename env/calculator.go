package env

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"strings"
)

// Calculator evaluates arithmetic exactly (math/big.Rat): + - * / ^ (also ** × ÷), parentheses,
// unary minus, decimals. "^" is right-associative and binds tighter than unary minus
// (-2^2 = -4), with integer exponents only. Errors (division by zero, garbage) are messages for
// the model.
type Calculator struct{}

// maxExponent and maxDigits bound the work one expression can ask for (2^10^9 would not finish).
const (
	maxExponent = 10000
	maxDigits   = 10000
)

func (Calculator) Name() string { return "calculator" }
func (Calculator) Description() string {
	return "Evaluate an arithmetic expression exactly. Supports + - * / ^, parentheses and decimals."
}
func (Calculator) Parameters() json.RawMessage {
	return json.RawMessage(`{"type": "object", "properties": {"expression": {"type": "string", "description": "The expression, e.g. 123 * (45 + 6)"}}, "required": ["expression"]}`)
}

// Call evaluates {"expression": "..."}.
func (c Calculator) Call(_ context.Context, args json.RawMessage) (string, error) {
	var a struct {
		Expression string `json:"expression"`
	}
	if err := DecodeArgs(args, &a, "expression"); err != nil {
		return "", err
	}
	v, err := Evaluate(a.Expression)
	if err != nil {
		return "", err
	}
	return FormatRat(v), nil
}

// Evaluate parses and evaluates an arithmetic expression exactly.
func Evaluate(expr string) (*big.Rat, error) {
	p := &calcParser{s: expr}
	if strings.TrimSpace(expr) == "" {
		return nil, fmt.Errorf("empty expression")
	}
	v, err := p.expr()
	if err != nil {
		return nil, err
	}
	p.space()
	if p.i < len(p.s) {
		return nil, fmt.Errorf("unexpected %q at position %d", p.s[p.i:], p.i+1)
	}
	return v, nil
}

// FormatRat writes an integer as an integer, a terminating fraction as a decimal, and anything
// else as "p/q (≈ decimal)".
func FormatRat(v *big.Rat) string {
	if v.IsInt() {
		return v.Num().String()
	}
	if exact, ok := terminatingDecimal(v); ok {
		return exact
	}
	return fmt.Sprintf("%s (≈ %s)", v.RatString(), strings.TrimRight(v.FloatString(10), "0"))
}

// terminatingDecimal returns v's exact decimal form when its denominator is 2^a·5^b.
func terminatingDecimal(v *big.Rat) (string, bool) {
	d := new(big.Int).Set(v.Denom())
	digits := 0
	two, five, zero := big.NewInt(2), big.NewInt(5), new(big.Int)
	for _, f := range []*big.Int{two, five} {
		n := 0
		for new(big.Int).Mod(d, f).Cmp(zero) == 0 {
			d.Div(d, f)
			n++
		}
		digits = max(digits, n)
	}
	if d.Cmp(big.NewInt(1)) != 0 {
		return "", false
	}
	return v.FloatString(digits), true
}

type calcParser struct {
	s string
	i int
}

func (p *calcParser) space() {
	for p.i < len(p.s) && strings.ContainsRune(" \t\n\r", rune(p.s[p.i])) {
		p.i++
	}
}

// peekOp reports which operator starts at the cursor, normalising ** × ÷.
func (p *calcParser) peekOp() string {
	p.space()
	rest := p.s[p.i:]
	for _, op := range []struct{ lit, op string }{{"**", "^"}, {"×", "*"}, {"÷", "/"}, {"+", "+"}, {"-", "-"}, {"*", "*"}, {"/", "/"}, {"^", "^"}} {
		if strings.HasPrefix(rest, op.lit) {
			return op.op
		}
	}
	return ""
}

func (p *calcParser) take() {
	rest := p.s[p.i:]
	for _, lit := range []string{"**", "×", "÷"} {
		if strings.HasPrefix(rest, lit) {
			p.i += len(lit)
			return
		}
	}
	p.i++
}

func (p *calcParser) expr() (*big.Rat, error) {
	v, err := p.term()
	for err == nil {
		op := p.peekOp()
		if op != "+" && op != "-" {
			return v, nil
		}
		p.take()
		var r *big.Rat
		if r, err = p.term(); err == nil {
			if op == "+" {
				v = new(big.Rat).Add(v, r)
			} else {
				v = new(big.Rat).Sub(v, r)
			}
		}
	}
	return nil, err
}

func (p *calcParser) term() (*big.Rat, error) {
	v, err := p.unary()
	for err == nil {
		op := p.peekOp()
		if op != "*" && op != "/" {
			return v, nil
		}
		p.take()
		var r *big.Rat
		if r, err = p.unary(); err == nil {
			if op == "*" {
				v = new(big.Rat).Mul(v, r)
			} else if r.Sign() == 0 {
				err = fmt.Errorf("division by zero")
			} else {
				v = new(big.Rat).Quo(v, r)
			}
		}
		if err == nil && tooBig(v) {
			err = fmt.Errorf("result too large (over %d digits)", maxDigits)
		}
	}
	return nil, err
}

func (p *calcParser) unary() (*big.Rat, error) {
	switch p.peekOp() {
	case "-":
		p.take()
		v, err := p.unary()
		if err != nil {
			return nil, err
		}
		return new(big.Rat).Neg(v), nil
	case "+":
		p.take()
		return p.unary()
	}
	return p.power()
}

func (p *calcParser) power() (*big.Rat, error) {
	base, err := p.primary()
	if err != nil || p.peekOp() != "^" {
		return base, err
	}
	p.take()
	exp, err := p.unary() // right-associative; allows 2^-1
	if err != nil {
		return nil, err
	}
	return pow(base, exp)
}

func pow(base, exp *big.Rat) (*big.Rat, error) {
	if !exp.IsInt() {
		return nil, fmt.Errorf("exponent %s is not an integer", exp.RatString())
	}
	e := exp.Num()
	if e.CmpAbs(big.NewInt(maxExponent)) > 0 {
		return nil, fmt.Errorf("exponent %s too large (limit %d)", e, maxExponent)
	}
	n := e.Int64()
	// Refuse before computing: the result has about bits(base)·|n| bits.
	if bits := max(base.Num().BitLen(), base.Denom().BitLen()); int64(bits-1)*abs64(n) > maxDigits*10/3 {
		return nil, fmt.Errorf("result too large (over %d digits)", maxDigits)
	}
	if n < 0 && base.Sign() == 0 {
		return nil, fmt.Errorf("division by zero (0 to a negative power)")
	}
	num := new(big.Int).Exp(base.Num(), big.NewInt(abs64(n)), nil)
	den := new(big.Int).Exp(base.Denom(), big.NewInt(abs64(n)), nil)
	if n < 0 {
		num, den = den, num
	}
	v := new(big.Rat).SetFrac(num, den)
	if tooBig(v) {
		return nil, fmt.Errorf("result too large (over %d digits)", maxDigits)
	}
	return v, nil
}

func abs64(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}

func tooBig(v *big.Rat) bool {
	// bits·log10(2) ≈ digits; 3.33 bits per digit.
	return v.Num().BitLen() > maxDigits*10/3 || v.Denom().BitLen() > maxDigits*10/3
}

func (p *calcParser) primary() (*big.Rat, error) {
	p.space()
	if p.i >= len(p.s) {
		return nil, fmt.Errorf("expression ends where a number was expected")
	}
	if p.s[p.i] == '(' {
		p.i++
		v, err := p.expr()
		if err != nil {
			return nil, err
		}
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != ')' {
			return nil, fmt.Errorf("missing closing parenthesis")
		}
		p.i++
		return v, nil
	}
	start := p.i
	for p.i < len(p.s) && (p.s[p.i] >= '0' && p.s[p.i] <= '9' || p.s[p.i] == '.' || p.s[p.i] == ',' || p.s[p.i] == '_') {
		p.i++
	}
	lit := strings.NewReplacer(",", "", "_", "").Replace(p.s[start:p.i])
	if lit == "" || strings.Count(lit, ".") > 1 || lit == "." {
		return nil, fmt.Errorf("expected a number at position %d, found %q", start+1, clip(p.s[start:], 20))
	}
	v, ok := new(big.Rat).SetString(lit)
	if !ok {
		return nil, fmt.Errorf("bad number %q", lit)
	}
	return v, nil
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
