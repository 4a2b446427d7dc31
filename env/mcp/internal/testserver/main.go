// Command testserver is the MCP server the env/mcp tests run, over stdio or streamable HTTP,
// built with the same SDK as the client. Its tools misbehave on request: hang never answers,
// crash kills the process mid-call, big answers with as many bytes as asked, fail answers with
// an error result.
//
//	testserver                      # stdio
//	testserver -http 127.0.0.1:0    # HTTP; prints "url http://127.0.0.1:PORT/mcp" when ready
//	testserver -no-tools            # lists no tools
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type addArgs struct {
	A int `json:"a" jsonschema:"the first number"`
	B int `json:"b" jsonschema:"the second number"`
}

type textArgs struct {
	Text string `json:"text" jsonschema:"the text"`
}

type sizeArgs struct {
	Bytes int `json:"bytes" jsonschema:"how many bytes to answer with"`
}

type noArgs struct{}

var calls atomic.Int64

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func newServer(tools bool) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "mtgrpo-testserver", Version: "1"}, nil)
	if !tools {
		return s
	}
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "Add two integers."},
		func(_ context.Context, _ *mcp.CallToolRequest, a addArgs) (*mcp.CallToolResult, any, error) {
			calls.Add(1)
			return text(fmt.Sprint(a.A + a.B)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Answer with the text."},
		func(_ context.Context, _ *mcp.CallToolRequest, a textArgs) (*mcp.CallToolResult, any, error) {
			calls.Add(1)
			return text(a.Text), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "whoami", Description: "Answer with the server's process id and call count."},
		func(_ context.Context, _ *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
			return text(fmt.Sprintf("pid %d calls %d", os.Getpid(), calls.Add(1))), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "hang", Description: "Never answer."},
		func(_ context.Context, _ *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
			select {} // ignores cancellation, as a stuck server does
		})
	mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "Exit the server process mid-call."},
		func(_ context.Context, _ *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
			os.Exit(3)
			return nil, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "big", Description: "Answer with that many bytes."},
		func(_ context.Context, _ *mcp.CallToolRequest, a sizeArgs) (*mcp.CallToolResult, any, error) {
			return text(strings.Repeat("x", a.Bytes)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Answer with an error result."},
		func(_ context.Context, _ *mcp.CallToolRequest, a textArgs) (*mcp.CallToolResult, any, error) {
			r := text("failed: " + a.Text)
			r.IsError = true
			return r, nil, nil
		})
	return s
}

func main() {
	addr := flag.String("http", "", "serve streamable HTTP on this address instead of stdio")
	noTools := flag.Bool("no-tools", false, "list no tools")
	flag.Parse()
	s := newServer(!*noTools)
	if *addr == "" {
		if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			log.Fatal(err)
		}
		return
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("url http://%s/mcp\n", ln.Addr())
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	log.Fatal(http.Serve(ln, h))
}
