package tokenizer

import (
	"fmt"

	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/nodes"
	"github.com/nikolalohinski/gonja/v2/parser"
	"github.com/nikolalohinski/gonja/v2/tokens"
)

// transformers adds a {% generation %}...{% endgeneration %} block (AssistantTracker) that
// marks assistant text for return_assistant_tokens_mask. mtgrpo masks per turn instead, so
// here the block only renders its body, as it does in transformers' text output.

type generationBlock struct {
	body *nodes.Wrapper
}

func (g *generationBlock) Position() *tokens.Token { return g.body.Position() }

func (g *generationBlock) String() string {
	t := g.Position()
	return fmt.Sprintf("GenerationControlStructure(Line=%d Col=%d)", t.Line, t.Col)
}

func (g *generationBlock) Execute(r *exec.Renderer, _ *nodes.ControlStructureBlock) error {
	return r.Inherit().ExecuteWrapper(g.body)
}

func generationParser(p *parser.Parser, args *parser.Parser) (nodes.ControlStructure, error) {
	body, _, err := p.WrapUntil("endgeneration")
	if err != nil {
		return nil, err
	}
	if !args.Stream().End() {
		return nil, args.Error("generation takes no arguments", nil)
	}
	return &generationBlock{body: body}, nil
}
