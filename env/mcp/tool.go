package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mtgrpo/mtgrpo/env"
)

// Tool is one tool of an MCP server as an env.Tool: its name, description and input schema are
// what the server listed, and Call runs tools/call on the server under the configured timeout
// and result cap. Safe for concurrent use (calls share the server's session).
type Tool struct {
	srv    *server
	name   string
	desc   string
	params json.RawMessage
}

var _ env.Tool = (*Tool)(nil)

// Name implements env.Tool.
func (t *Tool) Name() string { return t.name }

// Description implements env.Tool.
func (t *Tool) Description() string { return t.desc }

// Parameters implements env.Tool: the server's input schema.
func (t *Tool) Parameters() json.RawMessage { return t.params }

// Server names the server the tool comes from.
func (t *Tool) Server() string { return t.srv.cfg.name() }

// Call implements env.Tool. A result the server flags as an error (isError), a timeout, a dead
// server and a protocol error all come back as errors, which the environment shows the model as
// "Error: ..." tool messages.
func (t *Tool) Call(ctx context.Context, args json.RawMessage) (string, error) {
	lim := t.srv.limits
	ctx, cancel := context.WithTimeout(ctx, lim.CallTimeout)
	defer cancel()
	res, err := t.srv.call(ctx, t.name, args)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return "", fmt.Errorf("tool %s (MCP server %s) did not answer within %v", t.name, t.Server(), lim.CallTimeout)
		}
		return "", fmt.Errorf("tool %s (MCP server %s): %v", t.name, t.Server(), err)
	}
	text := capText(resultText(res), lim.MaxResultBytes)
	if res.IsError {
		return "", errors.New(text)
	}
	return text, nil
}

// resultText joins a result's content for the model: text as it is, other kinds as a short
// placeholder (the models we train read text), and the structured content as JSON when there
// is no content at all.
func resultText(r *sdk.CallToolResult) string {
	var parts []string
	for _, c := range r.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			parts = append(parts, c.Text)
		case *sdk.ImageContent:
			parts = append(parts, fmt.Sprintf("[image %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *sdk.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *sdk.EmbeddedResource:
			if c.Resource != nil && c.Resource.Text != "" {
				parts = append(parts, c.Resource.Text)
			} else if c.Resource != nil {
				parts = append(parts, fmt.Sprintf("[resource %s]", c.Resource.URI))
			}
		case *sdk.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource %s]", c.URI))
		}
	}
	if len(parts) == 0 && r.StructuredContent != nil {
		if b, err := json.Marshal(r.StructuredContent); err == nil {
			return string(b)
		}
	}
	return strings.Join(parts, "\n")
}

// capText cuts s to at most limit bytes (on a UTF-8 boundary) and says how much was cut.
// limit < 0 means no cap.
func capText(s string, limit int) string {
	if limit < 0 || len(s) <= limit {
		return s
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s\n[truncated: the result has %d bytes, the first %d are shown]", s[:cut], len(s), cut)
}
