package tokenizer

import (
	"fmt"
	"io"
	"slices"

	cs "github.com/nikolalohinski/gonja/v2/builtins/control_structures"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/nodes"
	"github.com/nikolalohinski/gonja/v2/tokens"
)

// The parsed template is rewritten once, at compile time, so that a render runs through the
// guards of chat_sandbox_ops.go (see chat_sandbox.go for what they limit). The walk knows every
// node and control structure the sandbox's parser can produce and refuses any other, so a gonja
// upgrade that adds one fails loudly instead of running unguarded.

// Names of the guarded functions in the render's variables; like budgetKey, they are not
// identifiers, so a template can neither call nor replace them.
const (
	fnMul    = "mtgrpo *"
	fnAdd    = "mtgrpo +"
	fnConcat = "mtgrpo ~"
	fnWork   = "mtgrpo work"
)

type sandboxWalker struct{ err error }

// sandboxTree rewrites root in place: guards on *, + and ~, a printed-size charge on every
// {{ }}, a budget node at the start of the template and of every block body, depth-counted
// macros. It fails on anything it does not know.
func sandboxTree(root *nodes.Template) error {
	w := &sandboxWalker{}
	root.Nodes = w.body(root.Nodes, &sandboxStart{tick{at: &tokens.Token{Line: 1}}})
	return w.err
}

func (w *sandboxWalker) fail(format string, args ...any) {
	if w.err == nil {
		w.err = fmt.Errorf(format, args...)
	}
}

// body walks a block's nodes and puts the budget node first, charged with one step and the
// bytes of the block's literal text (what executing the block writes besides its {{ }}).
func (w *sandboxWalker) body(list []nodes.Node, start budgetNode) []nodes.Node {
	bytes := 0
	for i, n := range list {
		var b int
		list[i], b = w.node(n)
		bytes += b
	}
	start.setCost(bytes)
	at := &tokens.Token{Line: 1}
	if len(list) > 0 && list[0].Position() != nil {
		at = list[0].Position()
	}
	head := &nodes.ControlStructureBlock{Location: at, Name: "sandbox", ControlStructure: start}
	return append([]nodes.Node{head}, list...)
}

func (w *sandboxWalker) wrapper(wr *nodes.Wrapper) {
	if wr == nil {
		return
	}
	at := wr.Location
	if at == nil {
		at = &tokens.Token{Line: 1}
	}
	wr.Nodes = w.body(wr.Nodes, &tick{at: at})
}

// node rewrites one node of a block; it returns the node to run in its place and the literal
// bytes it writes.
func (w *sandboxWalker) node(n nodes.Node) (nodes.Node, int) {
	switch x := n.(type) {
	case *nodes.Data:
		return n, len(x.Data.Val)
	case *nodes.Comment:
	case *nodes.Output:
		x.Condition, x.Expression, x.Alternative = w.expr(x.Condition), w.expr(x.Expression), w.expr(x.Alternative)
		return &nodes.ControlStructureBlock{Location: x.Start, Name: "print", ControlStructure: &printNode{x}}, 0
	case *nodes.ControlStructureBlock:
		x.ControlStructure = w.control(x.ControlStructure)
		if raw, ok := x.ControlStructure.(*rawBlock); ok {
			return n, len(raw.text)
		}
	default:
		w.fail("chat template sandbox: unexpected node %T at %v", n, n.Position())
	}
	return n, 0
}

// control rewrites the expressions and bodies of a control structure, and returns it (or its
// guarded replacement).
func (w *sandboxWalker) control(c nodes.ControlStructure) nodes.ControlStructure {
	switch x := c.(type) {
	case *cs.ForControlStructure:
		if x.Recursive {
			w.fail("line %d: recursive for loops are not supported in chat templates", x.Position().Line)
		}
		x.ObjectEvaluator, x.IfCondition = w.expr(x.ObjectEvaluator), w.expr(x.IfCondition)
		w.wrapper(x.BodyWrapper)
		w.wrapper(x.EmptyWrapper)
	case *cs.IfControlStructure:
		for i := range x.Conditions {
			x.Conditions[i] = w.expr(x.Conditions[i])
		}
		for _, wr := range x.Wrappers {
			w.wrapper(wr)
		}
	case *cs.MacroControlStructure:
		for _, kw := range x.Kwargs {
			kw.Value = w.expr(kw.Value)
		}
		w.wrapper(x.Wrapper)
		return &depthMacro{inner: x}
	case *cs.CallControlStructure:
		w.call(x.Call)
		w.wrapper(x.Body)
	case *cs.DoControlStructure:
		x.Expression = w.expr(x.Expression)
	case *cs.AutoescapeControlStructure:
		w.wrapper(x.Wrapper)
	case *setBlock:
		x.target, x.value = w.expr(x.target), w.expr(x.value)
		x.condition, x.alternative = w.expr(x.condition), w.expr(x.alternative)
		w.wrapper(x.body)
	case *withBlock:
		for i := range x.pairs {
			x.pairs[i].value = w.expr(x.pairs[i].value)
		}
		w.wrapper(x.body)
	case *filterBlock:
		for _, f := range x.filters {
			w.filterCall(f.Args, f.Kwargs)
		}
		w.wrapper(x.body)
	case *generationBlock:
		w.wrapper(x.body)
	case *inPlaceBlock:
		w.wrapper(x.body)
	case *cs.BreakControlStructure, *cs.ContinueControlStructure, *refused, *rawBlock:
	default:
		w.fail("chat template sandbox: unexpected control structure %T at %v", c, c.Position())
	}
	return c
}

// expr rewrites an expression tree bottom-up and returns its root, which a guarded operator
// replaces by a call.
func (w *sandboxWalker) expr(e nodes.Expression) nodes.Expression {
	switch x := e.(type) {
	case nil:
		return nil
	case *nodes.BinaryExpression:
		x.Left, x.Right = w.expr(x.Left), w.expr(x.Right)
		switch x.Operator.Token.Type {
		case tokens.Multiply:
			return guardCall(fnMul, x.Operator.Token, x.Left, x.Right)
		case tokens.Addition:
			return guardCall(fnAdd, x.Operator.Token, x.Left, x.Right)
		case tokens.Tilde:
			return guardCall(fnConcat, x.Operator.Token, x.Left, x.Right)
		case tokens.Equals, tokens.Ne: // linear in the operands' size, unless one is a literal
			if !literal(x.Left) && !literal(x.Right) {
				x.Left, x.Right = guardCall(fnWork, x.Operator.Token, x.Left), guardCall(fnWork, x.Operator.Token, x.Right)
			}
		case tokens.In: // linear in the container's size
			if !literal(x.Right) {
				x.Right = guardCall(fnWork, x.Operator.Token, x.Right)
			}
		}
	case *nodes.UnaryExpression:
		x.Term = w.expr(x.Term)
	case *nodes.Negation:
		x.Term = w.expr(x.Term)
	case *nodes.FilteredExpression:
		x.Expression = w.expr(x.Expression)
		for _, f := range x.Filters {
			w.filterCall(f.Args, f.Kwargs)
		}
	case *nodes.TestExpression:
		x.Expression = w.expr(x.Expression)
		w.filterCall(x.Test.Args, x.Test.Kwargs)
		if linearTests[x.Test.Name] { // like in and ==: charged as work on their operands
			x.Expression = guardCall(fnWork, x.Test.Token, x.Expression)
			for i, a := range x.Test.Args {
				x.Test.Args[i] = guardCall(fnWork, x.Test.Token, a)
			}
		}
	case *nodes.Call:
		w.call(x)
	case *nodes.GetItem:
		x.Node, x.Arg = w.anyNode(x.Node), w.anyNode(x.Arg)
	case *nodes.GetSlice:
		x.Node, x.Start, x.End, x.Step = w.anyNode(x.Node), w.anyNode(x.Start), w.anyNode(x.End), w.anyNode(x.Step)
	case *nodes.GetAttribute:
		x.Node = w.anyNode(x.Node)
	case *nodes.List:
		w.list(x.Val)
	case *nodes.Tuple:
		w.list(x.Val)
	case *nodes.Dict:
		for _, p := range x.Pairs {
			p.Key, p.Value = w.expr(p.Key), w.expr(p.Value)
		}
	case *nodes.Pair:
		x.Key, x.Value = w.expr(x.Key), w.expr(x.Value)
	case *nodes.String, *nodes.Integer, *nodes.Float, *nodes.Bool, *nodes.Name, *nodes.None, *nodes.Error:
	default:
		w.fail("chat template sandbox: unexpected expression %T at %v", e, e.Position())
	}
	return e
}

// literal reports whether e is written out in the template (a constant, or a list of them):
// comparing with it, or searching it, costs no more than its own size.
func literal(e nodes.Expression) bool {
	switch x := e.(type) {
	case *nodes.String, *nodes.Integer, *nodes.Float, *nodes.Bool, *nodes.None:
		return true
	case *nodes.List:
		return !slices.ContainsFunc(x.Val, func(v nodes.Expression) bool { return !literal(v) })
	case *nodes.Tuple:
		return !slices.ContainsFunc(x.Val, func(v nodes.Expression) bool { return !literal(v) })
	}
	return false
}

// linearTests are the tests that walk their operands (the others look at a type or a number).
var linearTests = map[string]bool{"in": true, "eq": true, "equalto": true, "ne": true}

// anyNode rewrites a child that gonja types as a Node (it is always an expression or nil).
func (w *sandboxWalker) anyNode(n nodes.Node) nodes.Node {
	if n == nil {
		return nil
	}
	return w.expr(n)
}

func (w *sandboxWalker) call(c *nodes.Call) {
	c.Func, c.Parent = w.anyNode(c.Func), w.anyNode(c.Parent)
	w.filterCall(c.Args, c.Kwargs)
}

func (w *sandboxWalker) list(l []nodes.Expression) {
	for i := range l {
		l[i] = w.expr(l[i])
	}
}

func (w *sandboxWalker) filterCall(args []nodes.Expression, kwargs map[string]nodes.Expression) {
	w.list(args)
	for k, v := range kwargs {
		kwargs[k] = w.expr(v)
	}
}

// guardCall is the call fn(args...) standing for an operator at tok.
func guardCall(fn string, tok *tokens.Token, args ...nodes.Expression) nodes.Expression {
	if tok == nil {
		tok = &tokens.Token{}
	}
	name := &nodes.Name{Name: &tokens.Token{Type: tokens.Name, Val: fn, Line: tok.Line, Col: tok.Col, Pos: tok.Pos}}
	return &nodes.Call{Location: tok, Func: name, Args: args, Kwargs: map[string]nodes.Expression{}}
}

// printNode runs a {{ }} as gonja's renderer does (condition, alternative, autoescape) and charges
// what it writes.
type printNode struct{ out *nodes.Output }

func (p *printNode) Position() *tokens.Token { return p.out.Start }
func (p *printNode) String() string          { return p.out.String() }
func (p *printNode) Execute(r *exec.Renderer, _ *nodes.ControlStructureBlock) error {
	expr := p.out.Expression
	if p.out.Condition != nil {
		c := r.Eval(p.out.Condition)
		if c.IsError() {
			return fmt.Errorf("line %d: %s: %w", p.out.Condition.Position().Line, p.out.Condition, c)
		}
		if c.IsNil() || !c.IsTrue() {
			if expr = p.out.Alternative; expr == nil {
				return nil
			}
		}
	}
	v := r.Eval(expr)
	if v.IsError() {
		return fmt.Errorf("line %d: %s: %w", expr.Position().Line, expr, v)
	}
	text := v.String()
	if r.Config.AutoEscape && v.IsString() && !v.Safe {
		text = v.Escaped()
	}
	b, err := budgetOf(r.Environment.Context)
	if err != nil {
		return err
	}
	if err := b.charge(len(text), "printing "+short(v)); err != nil {
		return err
	}
	_, err = io.WriteString(r.Output, text)
	return err
}

// budgetNode is the first node of a block body: it charges the block's cost when it runs.
type budgetNode interface {
	nodes.ControlStructure
	exec.ControlStructure
	setCost(bytes int)
}

// tick charges one step and the block's literal bytes each time the block runs (each loop
// iteration, macro call, taken branch).
type tick struct {
	at    *tokens.Token
	bytes int
}

func (t *tick) setCost(bytes int)       { t.bytes = bytes }
func (t *tick) Position() *tokens.Token { return t.at }
func (t *tick) String() string          { return "sandbox budget" }
func (t *tick) Execute(r *exec.Renderer, _ *nodes.ControlStructureBlock) error {
	b, err := budgetOf(r.Environment.Context)
	if err != nil {
		return err
	}
	if err := b.step(1); err != nil {
		return err
	}
	return b.charge(t.bytes, "the template's text")
}

// sandboxStart is the template's first node: besides charging like a tick, it installs the
// render's guarded methods (methods, unlike filters, do not see the render's variables, so they
// carry its budget themselves), which every renderer made after it inherits.
type sandboxStart struct{ tick }

func (s *sandboxStart) Execute(r *exec.Renderer, tag *nodes.ControlStructureBlock) error {
	b, err := budgetOf(r.Environment.Context)
	if err != nil {
		return err
	}
	r.Environment.Methods = guardedMethods(b)
	return s.tick.Execute(r, tag)
}

// depthMacro defines a macro as gonja does, then replaces it by a wrapper that counts how deep
// macro calls nest: unbounded recursion would otherwise overflow the Go stack, which no recover
// catches.
type depthMacro struct{ inner *cs.MacroControlStructure }

func (d *depthMacro) Position() *tokens.Token { return d.inner.Position() }
func (d *depthMacro) String() string          { return d.inner.String() }
func (d *depthMacro) Execute(r *exec.Renderer, tag *nodes.ControlStructureBlock) error {
	if err := d.inner.Execute(r, tag); err != nil {
		return err
	}
	b, err := budgetOf(r.Environment.Context)
	if err != nil {
		return err
	}
	name := d.inner.Name
	v, _ := r.Environment.Context.Get(name)
	fn, ok := v.(exec.Macro)
	if !ok {
		return fmt.Errorf("macro %s: gonja defined it as %T, not a macro", name, v)
	}
	r.Environment.Context.Set(name, exec.Macro(func(args *exec.VarArgs) *exec.Value {
		if err := b.enter(name); err != nil {
			return exec.AsValue(err)
		}
		defer b.leave()
		return fn(args)
	}))
	return nil
}
