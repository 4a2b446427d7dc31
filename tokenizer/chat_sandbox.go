package tokenizer

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/nikolalohinski/gonja/v2/config"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/loaders"
	"github.com/nikolalohinski/gonja/v2/nodes"
	"github.com/nikolalohinski/gonja/v2/parser"
	"github.com/nikolalohinski/gonja/v2/tokens"
)

// A chat template comes with a model directory: it is code from whoever published the model.
// transformers renders it in Jinja's ImmutableSandboxedEnvironment; here gonja renders it with
// the same restrictions and with limits Python gets from its runtime (a RecursionError, a
// MemoryError) that a Go process does not: running out of stack or memory kills it. So:
//
//   - No loader. {% include %}, {% import %}, {% from %} and {% extends %} fail when they run,
//     as in transformers (the environment has no loader); {% block %} renders its body in place
//     and self has no blocks.
//   - Immutable: the methods that change a list or a dict (append, reverse, pop, setdefault,
//     update, clear) fail, as the immutable sandbox refuses them; namespace attributes can be
//     set, but not to a value that contains the namespace (a cycle would recurse forever when
//     printed). Recursive for loops are refused.
//   - Limits per render (templateLimits): range() yields at most 100,000 items (Jinja's sandbox
//     MAX_RANGE); macro calls nest at most 256 deep; everything a template builds or prints
//     (strings and lists from *, +, ~, filters and methods, output) counts against a byte
//     budget, checked before an operation allocates where its size is known in advance ('x' *
//     n, center, join, replace, format, ...); and loop iterations, range items, macro, filter
//     and method calls against a step budget, so no template runs unbounded.
//     Work that is linear in a value (in, ==, tests like eq, filters and methods other than
//     length and the like) costs a step per item, or per KiB of a string.
//   - Parsing: the source is at most 1 MiB, nests brackets, blocks and prefix operators at most
//     128 deep (the parser recurses on each) and holds at most 512 tokens in one tag: gonja's
//     error messages quote the whole failing sub-expression at every level, so a chain of 10,000
//     .x accessors took hours to fail. Text on which gonja's lexer loops is refused (lexable).
//
// Every error names the template (its file) and, where gonja knows it, the line.
//
// How the limits are hooked into gonja (chat_sandbox_ast.go): after parsing, the tree is
// walked once; every *, + and ~ becomes a call to a guarded function, the operands of in and ==
// pass through one that charges their work, every {{ }} becomes a node that charges its printed
// size, every block body starts with a node that charges a step and the bytes of its literal
// text, and macros are wrapped to count their depth. The per-render budget travels in the
// render's variables under a name no template can spell (budgetKey), where the guards and the
// filters (chat_sandbox_ops.go) find it; methods do not see the variables, so the first node of
// the template installs methods bound to the render's budget (chat_sandbox_methods.go).

// templateLimits bound one render. The defaults are far above what real templates use: a
// 2,000-message conversation with tool calls (0.5 MB) takes Qwen3's template 24,016 steps and
// 1.3 MB, Llama 3.1's 15,009 steps and 1.3 MB (TestSandboxBudgetOfLongConversations).
type templateLimits struct {
	maxRange   int // items one range() yields
	maxDepth   int // nested macro calls
	maxSteps   int // block executions, range and list items built, macro, filter and method calls
	maxBytes   int // bytes built or printed, on top of 4× the input's own
	maxSource  int // bytes of template source
	maxNesting int // bracket and block nesting in the source
	maxTag     int // tokens in one {{ }} or {% %}
}

var defaultLimits = templateLimits{
	maxRange:   100_000,
	maxDepth:   256,
	maxSteps:   1_000_000,
	maxBytes:   256 << 20,
	maxSource:  1 << 20,
	maxNesting: 128,
	maxTag:     512,
}

// budgetKey is the render variable that holds the render's budget: not an identifier, so no
// template can read or replace it.
const budgetKey = "mtgrpo budget"

// renderBudget is what one render may still spend. It is used by one goroutine.
type renderBudget struct {
	lim          templateLimits
	steps, bytes int
	depth        int
	err          error // the first limit hit, reported even if the template swallows it
}

func newBudget(lim templateLimits, inputBytes int) *renderBudget {
	return &renderBudget{lim: lim, steps: lim.maxSteps, bytes: lim.maxBytes + 4*inputBytes}
}

// fail records the first limit hit and returns it.
func (b *renderBudget) fail(err error) error {
	if b.err == nil {
		b.err = err
	}
	return err
}

// step spends n steps.
func (b *renderBudget) step(n int) error {
	if b.err != nil {
		return b.err
	}
	if b.steps -= n; b.steps < 0 {
		return b.fail(fmt.Errorf("the template ran more than %d steps (loop iterations, range items, calls)", b.lim.maxSteps))
	}
	return nil
}

// check refuses an operation that would build n bytes, before it allocates them.
func (b *renderBudget) check(n int, what string) error {
	if b.err != nil {
		return b.err
	}
	if n < 0 || n > b.bytes {
		return b.fail(fmt.Errorf("%s would build %s, more than the %s the render has left (a render may build %d MiB beyond its input)",
			what, sizeOf64(n), sizeOf64(b.bytes), b.lim.maxBytes>>20))
	}
	return nil
}

// charge spends n bytes that an operation built.
func (b *renderBudget) charge(n int, what string) error {
	if err := b.check(n, what); err != nil {
		return err
	}
	b.bytes -= n
	return nil
}

// enter counts one more nested macro call; leave undoes it.
func (b *renderBudget) enter(name string) error {
	if err := b.step(1); err != nil {
		return err
	}
	if b.depth++; b.depth > b.lim.maxDepth {
		return b.fail(fmt.Errorf("macro %s: calls nest more than %d deep (unbounded recursion?)", name, b.lim.maxDepth))
	}
	return nil
}

func (b *renderBudget) leave() { b.depth-- }

func sizeOf64(n int) string {
	if n < 0 {
		return "more than 2^63 bytes"
	}
	return fmt.Sprintf("%d bytes", n)
}

// budgetOf finds the render's budget in a renderer's or evaluator's context.
func budgetOf(ctx *exec.Context) (*renderBudget, error) {
	v, ok := ctx.Get(budgetKey)
	b, isBudget := v.(*renderBudget)
	if !ok || !isBudget {
		return nil, errors.New("chat template rendered without its sandbox budget")
	}
	return b, nil
}

// checkSource refuses, before gonja parses it, a template that is too large, nests brackets,
// blocks or prefix operators too deep (the parser recurses on each), has a tag of too many tokens,
// or would make gonja's lexer loop (see lexable).
func checkSource(src string, lim templateLimits) error {
	if len(src) > lim.maxSource {
		return fmt.Errorf("the template is %d bytes; at most %d are accepted", len(src), lim.maxSource)
	}
	var st sourceState
	// Positions are in the lexer's normalised input; the lexer runs on a goroutine so that the
	// tokens after a lexing error (gonja lexes on past some of them) are seen too.
	norm := normalizedSource(src)
	lx := tokens.NewLexer(lexable(norm), templateConfig())
	go lx.Run()
	var err error
	for tok := range lx.Tokens { // drained to the end, so the lexer's goroutine always returns
		if err == nil {
			err = st.next(norm, tok, lim)
		}
	}
	return err
}

// sourceState follows nesting and tag length across the tokens of a template.
type sourceState struct {
	brackets, blocks, unary, tag int
	prev                         *tokens.Token
}

func (st *sourceState) next(norm string, tok *tokens.Token, lim templateLimits) error {
	if tok.Type == tokens.Whitespace { // the parser skips these too
		return nil
	}
	prev := st.prev
	if prev == nil {
		prev = &tokens.Token{Type: tokens.Data}
	}
	st.prev = tok
	if err := lexerLoops(norm, prev, tok); err != nil {
		return err
	}
	tagName := tok.Type == tokens.Name && prev.Type == tokens.BlockBegin
	if st.tag++; tok.Type == tokens.Data || tok.Type == tokens.BlockBegin || tok.Type == tokens.VariableBegin {
		st.tag = 0
	}
	if st.tag > lim.maxTag {
		return fmt.Errorf("line %d: a tag of more than %d tokens", tok.Line, lim.maxTag)
	}
	switch tok.Type {
	case tokens.LeftParenthesis, tokens.LeftBracket, tokens.LeftBrace:
		st.brackets++
	case tokens.RightParenthesis, tokens.RightBracket, tokens.RightBrace:
		st.brackets--
	case tokens.Name:
		switch {
		case tagName && blockOpeners[tok.Val]:
			st.blocks++
		case tagName && strings.HasPrefix(tok.Val, "end"):
			st.blocks--
		}
	}
	// Runs of prefix operators (- - - x, not not x) recurse in the parser like brackets.
	if tok.Type == tokens.Subtraction || tok.Type == tokens.Addition || tok.Type == tokens.Not {
		st.unary++
	} else {
		st.unary = 0
	}
	if max(st.brackets, st.blocks, st.unary) > lim.maxNesting {
		return fmt.Errorf("line %d: brackets, blocks or prefix operators nest more than %d deep", tok.Line, lim.maxNesting)
	}
	return nil
}

// normalizedSource is the input gonja's lexer works on: newlines as \n, the final one dropped
// (transformers' keep_trailing_newline=False).
func normalizedSource(src string) string {
	src = strings.ReplaceAll(src, "\r\n", "\n")
	src = strings.ReplaceAll(src, "\r", "\n")
	return strings.TrimSuffix(src, "\n")
}

// lexable returns src with every multi-byte character replaced by as many ASCII bytes of the
// same class: letters by 'a', digits by '0', anything else by '`'. gonja's lexer gives back the
// width of the last character it read rather than of the one it means to give back: after a
// number and "." it peeks at the next character, and when that one is wider than the dot it backs
// up into the number and lexes it again, forever, emitting empty tokens until memory runs out
// ("{{ 0.é }}"). The copy lexes to the same tokens at the same offsets without that hazard.
func lexable(src string) string {
	var b []byte
	for i := 0; i < len(src); {
		r, w := utf8.DecodeRuneInString(src[i:])
		if w < 2 { // ASCII, or an invalid byte (read with width 1, so backed up correctly)
			i++
			continue
		}
		if b == nil {
			b = []byte(src)
		}
		c := byte('`')
		switch {
		case unicode.IsLetter(r):
			c = 'a'
		case unicode.IsDigit(r):
			c = '0'
		}
		for k := 0; k < w; k++ {
			b[i+k] = c
		}
		i += w
	}
	if b == nil {
		return src
	}
	return string(b)
}

// lexerLoops reports where src has a number directly followed by "." and a multi-byte character
// that is not a digit: the input on which gonja's lexer never ends (see lexable). Such text is not
// valid Jinja anyway.
func lexerLoops(src string, prev, tok *tokens.Token) error {
	if tok.Type != tokens.Dot || prev.Type != tokens.Integer && prev.Type != tokens.Float || tok.Pos != prev.Pos+len(prev.Val) {
		return nil
	}
	r, w := utf8.DecodeRuneInString(src[min(tok.Pos+1, len(src)):])
	if w < 2 || unicode.IsDigit(r) {
		return nil
	}
	return fmt.Errorf("line %d: a number followed by '.' and %q (gonja's lexer cannot read it)", tok.Line, r)
}

// blockOpeners are the tags that open a block closed by an end tag (set opens one only in its
// {% set x %}...{% endset %} form; counting it always overestimates, which only matters past
// the limit).
var blockOpeners = map[string]bool{"for": true, "if": true, "macro": true, "call": true, "filter": true,
	"with": true, "block": true, "raw": true, "generation": true, "autoescape": true, "trans": true}

// noLoader is the loader of every chat template: it serves the template itself and nothing
// else, so {% include %} and friends can never read a file.
type noLoader struct{ src string }

func (l noLoader) Read(name string) (io.Reader, error) {
	if name != rootName {
		return nil, errNoLoader
	}
	return stringReader(l.src), nil
}

func (l noLoader) Resolve(name string) (string, error) {
	if name != rootName {
		return "", errNoLoader
	}
	return name, nil
}

func (l noLoader) Inherit(string) (loaders.Loader, error) { return nil, errNoLoader }

var errNoLoader = errors.New("chat templates cannot load other templates or files (no loader, as in transformers' sandbox)")

// rootName is the name the template itself is parsed under.
const rootName = "chat_template"

// refused is a control structure that fails when it runs: {% include %}, {% import %},
// {% from %} and {% extends %}, which need a loader. transformers fails on them at render time
// too, so a template that has one on a branch it never takes still renders.
type refused struct {
	at  *tokens.Token
	tag string
}

func (r *refused) Position() *tokens.Token { return r.at }
func (r *refused) String() string          { return "{% " + r.tag + " %}" }
func (r *refused) Execute(*exec.Renderer, *nodes.ControlStructureBlock) error {
	return fmt.Errorf("line %d: {%% %s %%}: %w", r.at.Line, r.tag, errNoLoader)
}

func refusedParser(tag string) parser.ControlStructureParser {
	return func(p *parser.Parser, args *parser.Parser) (nodes.ControlStructure, error) {
		for !args.End() { // the arguments are never evaluated
			args.Consume()
		}
		return &refused{at: p.Current(), tag: tag}, nil
	}
}

// inPlaceBlock is {% block name %}...{% endblock %} without inheritance: its body, rendered
// where it stands. It is not registered as a block, so self has none to call recursively.
type inPlaceBlock struct{ body *nodes.Wrapper }

func (b *inPlaceBlock) Position() *tokens.Token { return b.body.Position() }
func (b *inPlaceBlock) String() string          { return "{% block %}" }
func (b *inPlaceBlock) Execute(r *exec.Renderer, _ *nodes.ControlStructureBlock) error {
	return r.ExecuteWrapper(b.body)
}

func inPlaceBlockParser(p *parser.Parser, args *parser.Parser) (nodes.ControlStructure, error) {
	if args.Match(tokens.Name) == nil {
		return nil, args.Error("block needs a name", nil)
	}
	body, _, err := p.WrapUntil("endblock")
	if err != nil {
		return nil, err
	}
	return &inPlaceBlock{body: body}, nil
}

// templateConfig is transformers' jinja setup: trim_blocks and lstrip_blocks on.
func templateConfig() *config.Config {
	c := config.New()
	c.TrimBlocks = true
	c.LeftStripBlocks = true
	c.KeepTrailingNewline = false
	return c
}
