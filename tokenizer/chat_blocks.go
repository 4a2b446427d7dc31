package tokenizer

import (
	"bytes"
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/nodes"
	"github.com/nikolalohinski/gonja/v2/parser"
	"github.com/nikolalohinski/gonja/v2/tokens"
)

// The sandbox's own {% set %}, {% with %}, {% filter %} and {% raw %}. They parse and run as
// gonja's do; they exist because gonja keeps the expressions of its versions in unexported
// fields, out of reach of the walk that guards every expression (chat_sandbox_ast.go), and
// because set is where a namespace could be made to contain itself.

// setBlock is {% set target = value [if condition else alternative] %} or
// {% set target %}body{% endset %}; target is a name, an attribute or an item.
type setBlock struct {
	at                                    *tokens.Token
	target, value, condition, alternative nodes.Expression
	body                                  *nodes.Wrapper
}

func (s *setBlock) Position() *tokens.Token { return s.at }
func (s *setBlock) String() string          { return fmt.Sprintf("{%% set %s %%}", s.target) }

func setParser(p *parser.Parser, args *parser.Parser) (nodes.ControlStructure, error) {
	s := &setBlock{at: p.Current()}
	target, err := args.ParseVariableOrLiteral()
	if err != nil {
		return nil, fmt.Errorf("unable to parse the set target: %w", err)
	}
	switch target.(type) {
	case *nodes.Name, *nodes.GetItem, *nodes.GetAttribute:
		s.target = target
	default:
		return nil, args.Error(fmt.Sprintf("cannot set %s", target), args.Current())
	}
	if args.Match(tokens.Assign) == nil {
		if !args.End() {
			return nil, args.Error("expected '=' or the end of the tag for a block set", args.Current())
		}
		body, end, err := p.WrapUntil("endset")
		if err != nil {
			return nil, err
		}
		if !end.End() {
			return nil, end.Error("endset takes no arguments", nil)
		}
		s.body = body
		return s, nil
	}
	if s.value, err = args.ParseExpression(); err != nil {
		return nil, err
	}
	if s.condition, s.alternative, err = args.ParseCondition(); err != nil {
		return nil, err
	}
	if s.condition != nil && s.alternative == nil {
		return nil, args.Error("malformed set: 'if' without 'else'", args.Current())
	}
	if !args.End() {
		return nil, args.Error("malformed set tag", args.Current())
	}
	return s, nil
}

func (s *setBlock) Execute(r *exec.Renderer, _ *nodes.ControlStructureBlock) error {
	value, err := s.evaluate(r)
	if err != nil {
		return err
	}
	switch t := s.target.(type) {
	case *nodes.Name:
		r.Environment.Context.Set(t.Name.Val, value.Interface())
		return nil
	case *nodes.GetAttribute:
		return assign(r, t.Node, exec.AsValue(t.Attribute), value)
	case *nodes.GetItem:
		key := r.Eval(t.Arg)
		if key.IsError() {
			return fmt.Errorf("set %s: %w", t, key)
		}
		return assign(r, t.Node, key, value)
	}
	return fmt.Errorf("cannot set %s", s.target)
}

func (s *setBlock) evaluate(r *exec.Renderer) (*exec.Value, error) {
	if s.body != nil { // a block set captures its rendered body, safe as in Jinja
		var buf bytes.Buffer
		sub := r.Inherit()
		sub.Output = &buf
		if err := sub.ExecuteWrapper(s.body); err != nil {
			return nil, err
		}
		return exec.AsSafeValue(buf.String()), nil
	}
	expr := s.value
	if s.condition != nil {
		c := r.Eval(s.condition)
		if c.IsError() {
			return nil, c
		}
		if c.IsNil() || !c.IsTrue() {
			expr = s.alternative
		}
	}
	v := r.Eval(expr)
	if v.IsError() {
		return nil, v
	}
	return v, nil
}

// assign sets key on the container that node evaluates to, refusing a value that contains the
// container: printing or comparing a namespace that holds itself recurses without end.
func assign(r *exec.Renderer, node nodes.Node, key, value *exec.Value) error {
	target := r.Eval(node)
	if target.IsError() {
		return fmt.Errorf("set %s.%s: %w", node, key.String(), target)
	}
	b, err := budgetOf(r.Environment.Context)
	if err != nil {
		return err
	}
	if tv := reflect.ValueOf(target.Interface()); tv.Kind() == reflect.Map {
		cyclic, err := reaches(value.Interface(), tv.Pointer(), 0, b)
		if err != nil {
			return err
		}
		if cyclic {
			return fmt.Errorf("set %s.%s: the value contains %s itself (a cycle)", node, key.String(), node)
		}
	}
	if err := target.Set(key, value.Interface()); err != nil {
		return fmt.Errorf("set %s.%s: %w", node, key.String(), err)
	}
	return nil
}

// reaches reports whether v holds the map whose pointer is m, at any depth. Each container it
// looks into costs a step.
func reaches(v any, m uintptr, depth int, b *renderBudget) (bool, error) {
	if depth > 1000 {
		return false, b.fail(fmt.Errorf("a value nests more than 1000 deep"))
	}
	if x, ok := v.(*exec.Value); ok {
		if x == nil {
			return false, nil
		}
		v = x.Interface()
	}
	var children []any
	switch x := v.(type) {
	case exec.Dict:
		children = pairValues(x.Pairs)
	case *exec.Dict:
		children = pairValues(x.Pairs)
	default:
		rv := reflect.ValueOf(v)
		switch rv.Kind() {
		case reflect.Map:
			if rv.Pointer() == m {
				return true, nil
			}
			for it := rv.MapRange(); it.Next(); {
				children = append(children, it.Value().Interface())
			}
		case reflect.Slice, reflect.Array:
			for i := 0; i < rv.Len(); i++ {
				children = append(children, rv.Index(i).Interface())
			}
		default:
			return false, nil
		}
	}
	if err := b.step(1); err != nil {
		return false, err
	}
	for _, c := range children {
		if found, err := reaches(c, m, depth+1, b); found || err != nil {
			return found, err
		}
	}
	return false, nil
}

func pairValues(pairs []*exec.Pair) []any {
	out := make([]any, len(pairs))
	for i, p := range pairs {
		out[i] = p.Value
	}
	return out
}

// withBlock is {% with a = x, b = y %}body{% endwith %}.
type withBlock struct {
	at    *tokens.Token
	pairs []withPair
	body  *nodes.Wrapper
}

type withPair struct {
	name  string
	value nodes.Expression
}

func (w *withBlock) Position() *tokens.Token { return w.at }
func (w *withBlock) String() string          { return "{% with %}" }

func withParser(p *parser.Parser, args *parser.Parser) (nodes.ControlStructure, error) {
	w := &withBlock{at: p.Current()}
	for !args.End() {
		name := args.Match(tokens.Name)
		if name == nil {
			return nil, args.Error("expected a name", args.Current())
		}
		if args.Match(tokens.Assign) == nil {
			return nil, args.Error("expected '='", args.Current())
		}
		value, err := args.ParseExpression()
		if err != nil {
			return nil, err
		}
		w.pairs = append(w.pairs, withPair{name.Val, value})
		if args.Match(tokens.Comma) == nil {
			break
		}
	}
	if !args.End() {
		return nil, args.Error("malformed with tag", args.Current())
	}
	body, end, err := p.WrapUntil("endwith")
	if err != nil {
		return nil, err
	}
	if !end.End() {
		return nil, end.Error("endwith takes no arguments", nil)
	}
	w.body = body
	return w, nil
}

func (w *withBlock) Execute(r *exec.Renderer, _ *nodes.ControlStructureBlock) error {
	sub := r.Inherit()
	for _, p := range w.pairs {
		v := r.Eval(p.value)
		if v.IsError() {
			return fmt.Errorf("with %s: %w", p.name, v)
		}
		sub.Environment.Context.Set(p.name, v)
	}
	return sub.ExecuteWrapper(w.body)
}

// filterBlock is {% filter f(args) | g %}body{% endfilter %}: the rendered body through the
// filters.
type filterBlock struct {
	at      *tokens.Token
	filters []*nodes.FilterCall
	body    *nodes.Wrapper
}

func (f *filterBlock) Position() *tokens.Token { return f.at }
func (f *filterBlock) String() string          { return "{% filter %}" }

func filterParser(p *parser.Parser, args *parser.Parser) (nodes.ControlStructure, error) {
	f := &filterBlock{at: p.Current()}
	for !args.End() {
		fc, err := args.ParseFilter()
		if err != nil {
			return nil, err
		}
		f.filters = append(f.filters, fc)
		if args.Match(tokens.Pipe) == nil {
			break
		}
	}
	if !args.End() || len(f.filters) == 0 {
		return nil, args.Error("malformed filter tag", args.Current())
	}
	body, _, err := p.WrapUntil("endfilter")
	if err != nil {
		return nil, err
	}
	f.body = body
	return f, nil
}

func (f *filterBlock) Execute(r *exec.Renderer, _ *nodes.ControlStructureBlock) error {
	var out strings.Builder
	sub := r.Inherit()
	sub.Output = &out
	if err := sub.ExecuteWrapper(f.body); err != nil {
		return err
	}
	v := exec.AsValue(out.String())
	for _, fc := range f.filters {
		if v = r.Evaluator().ExecuteFilter(fc, v); v.IsError() {
			return fmt.Errorf("line %d: filter %s: %w", fc.Token.Line, fc.Name, v)
		}
	}
	_, err := io.WriteString(r.Output, v.String())
	return err
}

// rawBlock is {% raw %}text{% endraw %}: the text, not interpreted.
type rawBlock struct {
	at   *tokens.Token
	text string
}

func (b *rawBlock) Position() *tokens.Token { return b.at }
func (b *rawBlock) String() string          { return "{% raw %}" }

func rawParser(p *parser.Parser, args *parser.Parser) (nodes.ControlStructure, error) {
	if !args.End() {
		return nil, args.Error("raw takes no arguments", args.Current())
	}
	b := &rawBlock{at: p.Current()}
	body, _, err := p.WrapUntil("endraw")
	if err != nil {
		return nil, err
	}
	for _, n := range body.Nodes {
		d, ok := n.(*nodes.Data)
		if !ok {
			return nil, p.Error("raw can only contain text", n.Position())
		}
		b.text += d.Data.Val
	}
	return b, nil
}

func (b *rawBlock) Execute(r *exec.Renderer, _ *nodes.ControlStructureBlock) error {
	_, err := io.WriteString(r.Output, b.text)
	return err
}
