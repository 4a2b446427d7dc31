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
// (-2^2 = -4), with integer exponents only. Errors (division by zero, garbage, limits) are
// messages for the model.
//
// The work one expression can ask for is bounded, because the model writes the expression and
// reward functions evaluate it without a deadline (countdown): at most maxExpression bytes,
// maxDepth levels of parentheses and exponents (the parser recurses per level), literals and every
// intermediate result at most maxDigits digits (math/big converts a decimal literal in time
// quadratic in its length), exponents at most maxExponent. Within those bounds the worst
// expression takes about a second; Call and EvaluateContext also stop at their context's end.
type Calculator struct{}

// Bounds on one expression (see Calculator).
const (
	maxExpression = 5_000 // bytes
	maxDepth      = 256   // nested parentheses and exponents
	maxExponent   = 10_000
	maxDigits     = 1_000              // of a literal, and of any intermediate numerator or denominator
	maxBits       = maxDigits * 10 / 3 // ≈ maxDigits·log2(10): 3.33 bits per digit
)

func (Calculator) Name() string { return "calculator" }
func (Calculator) Description() string {
	return "Evaluate an arithmetic expression exactly. Supports + - * / ^, parentheses and decimals."
}
func (Calculator) Parameters() json.RawMessage {
	return json.RawMessage(`{"type": "object", "properties": {"expression": {"type": "string", "description": "The expression, e.g. 123 * (45 + 6)"}}, "required": ["expression"]}`)
}

// Call evaluates {"expression": "..."}. It returns ctx's error once ctx is done.
func (c Calculator) Call(ctx context.Context, args json.RawMessage) (string, error) {
	var a struct {
		Expression string `json:"expression"`
	}
	if err := DecodeArgs(args, &a, "expression"); err != nil {
		return "", err
	}
	v, err := EvaluateContext(ctx, a.Expression)
	if err != nil {
		return "", err
	}
	return FormatRat(v), nil
}

// Evaluate parses and evaluates an arithmetic expression exactly.
func Evaluate(expr string) (*big.Rat, error) {
	return EvaluateContext(context.Background(), expr)
}

// EvaluateContext is Evaluate that gives up with ctx's error once ctx is done.
func EvaluateContext(ctx context.Context, expr string) (*big.Rat, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if strings.TrimSpace(expr) == "" {
		return nil, fmt.Errorf("empty expression")
	}
	if len(expr) > maxExpression {
		return nil, fmt.Errorf("expression too long (%d bytes; the limit is %d)", len(expr), maxExpression)
	}
	p := &calcParser{ctx: ctx, s: expr}
	v, err := p.expr()
	if err != nil {
		return nil, err
	}
	p.space()
	if p.i < len(p.s) {
		return nil, fmt.Errorf("unexpected %q at position %d", clip(p.s[p.i:], 20), p.i+1)
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

// calcParser is a recursive-descent parser that evaluates as it goes:
//
//	expr    = term { ("+" | "-") term }
//	term    = unary { ("*" | "/") unary }
//	unary   = { "+" | "-" } power            (a loop, not recursion)
//	power   = primary [ "^" unary ]          (right-associative: one level per "^")
//	primary = number | "(" expr ")"          (one level per parenthesis)
type calcParser struct {
	ctx   context.Context
	s     string
	i     int
	depth int // open parentheses and exponents at the cursor
	ops   int // operations done, to poll ctx every few
}

// enter opens a nesting level; leave closes it.
func (p *calcParser) enter() error {
	if p.depth++; p.depth > maxDepth {
		return fmt.Errorf("expression nested too deeply (over %d levels of parentheses and powers)", maxDepth)
	}
	return nil
}

func (p *calcParser) leave() { p.depth-- }

// op is called before each arithmetic operation: it stops the evaluation once ctx is done.
// Operations on numbers near maxDigits take up to a millisecond, so polling every 16 keeps the
// delay after a deadline small.
func (p *calcParser) op() error {
	if p.ops++; p.ops%16 == 0 {
		return p.ctx.Err()
	}
	return nil
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
			err = p.op()
		}
		if err == nil {
			if op == "+" {
				v = new(big.Rat).Add(v, r)
			} else {
				v = new(big.Rat).Sub(v, r)
			}
			err = checkSize(v) // a sum's denominator is the product of its terms'
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
			err = p.op()
		}
		if err == nil {
			if op == "*" {
				v = new(big.Rat).Mul(v, r)
			} else if r.Sign() == 0 {
				err = fmt.Errorf("division by zero")
			} else {
				v = new(big.Rat).Quo(v, r)
			}
		}
		if err == nil {
			err = checkSize(v)
		}
	}
	return nil, err
}

// unary reads any run of signs iteratively: "- - - 1" is one level, not three.
func (p *calcParser) unary() (*big.Rat, error) {
	neg := false
	for op := p.peekOp(); op == "-" || op == "+"; op = p.peekOp() {
		p.take()
		neg = neg != (op == "-")
	}
	v, err := p.power()
	if err != nil || !neg {
		return v, err
	}
	return new(big.Rat).Neg(v), nil
}

func (p *calcParser) power() (*big.Rat, error) {
	base, err := p.primary()
	if err != nil || p.peekOp() != "^" {
		return base, err
	}
	p.take()
	if err := p.enter(); err != nil {
		return nil, err
	}
	exp, err := p.unary() // right-associative; allows 2^-1
	p.leave()
	if err == nil {
		err = p.op()
	}
	if err != nil {
		return nil, err
	}
	return pow(base, exp)
}

func pow(base, exp *big.Rat) (*big.Rat, error) {
	if !exp.IsInt() {
		return nil, fmt.Errorf("exponent %s is not an integer", clip(exp.RatString(), 40))
	}
	e := exp.Num()
	if e.CmpAbs(big.NewInt(maxExponent)) > 0 {
		return nil, fmt.Errorf("exponent %s too large (limit %d)", clip(e.String(), 40), maxExponent)
	}
	n := e.Int64()
	// Refuse before computing: the result has about bits(base)·|n| bits.
	if bits := max(base.Num().BitLen(), base.Denom().BitLen()); int64(bits-1)*abs64(n) > maxBits {
		return nil, errTooLarge
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
	return v, checkSize(v)
}

func abs64(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}

var errTooLarge = fmt.Errorf("result too large (over %d digits)", maxDigits)

// checkSize refuses a value whose numerator or denominator has more than maxDigits digits.
func checkSize(v *big.Rat) error {
	if v.Num().BitLen() > maxBits || v.Denom().BitLen() > maxBits {
		return errTooLarge
	}
	return nil
}

func (p *calcParser) primary() (*big.Rat, error) {
	p.space()
	if p.i >= len(p.s) {
		return nil, fmt.Errorf("expression ends where a number was expected")
	}
	if p.s[p.i] == '(' {
		p.i++
		if err := p.enter(); err != nil {
			return nil, err
		}
		v, err := p.expr()
		p.leave()
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
	return p.number()
}

// number reads a literal: digits with an optional decimal point, and "," or "_" as thousands
// separators. Its digit count is checked before math/big converts it.
func (p *calcParser) number() (*big.Rat, error) {
	start, digits := p.i, 0
	for ; p.i < len(p.s); p.i++ {
		c := p.s[p.i]
		if c >= '0' && c <= '9' {
			digits++
		} else if c != '.' && c != ',' && c != '_' {
			break
		}
	}
	lit := strings.NewReplacer(",", "", "_", "").Replace(p.s[start:p.i])
	if lit == "" || strings.Count(lit, ".") > 1 || lit == "." {
		return nil, fmt.Errorf("expected a number at position %d, found %q", start+1, clip(p.s[start:], 20))
	}
	if digits > maxDigits {
		return nil, fmt.Errorf("number too long (%d digits; the limit is %d)", digits, maxDigits)
	}
	v, ok := new(big.Rat).SetString(lit)
	if !ok {
		return nil, fmt.Errorf("bad number %q", clip(lit, 40))
	}
	return v, nil
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
