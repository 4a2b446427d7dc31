// Package mcp offers the tools of Model Context Protocol servers to mtgrpo's environments,
// through the official Go SDK (github.com/modelcontextprotocol/go-sdk).
//
//	c, err := mcp.Connect(ctx, mcp.Config{Servers: []mcp.ServerConfig{
//		{Name: "calc", Command: "python3", Args: []string{"calc_server.py"}}, // stdio
//		{Name: "search", URL: "http://127.0.0.1:8931/mcp"},                   // streamable HTTP
//	}})
//	defer c.Close()
//	environment, err := env.Open("data", env.Config{ExtraTools: c.Tools()})
//
// Connect starts each stdio server (or opens a session with each HTTP one) once per run and
// lists its tools; it fails, naming the server, when one cannot be reached, lists no tools, or
// lists a tool name another server lists too. Each tool becomes an env.Tool: the chat template
// lists it with the server's name, description and input schema, the environment parses the
// model's calls as for built-in tools, and the result comes back as a "tool" message.
//
// Every call runs under Config.CallTimeout, and its text is cut to Config.MaxResultBytes (the
// transport itself refuses frames over 16 MiB). A result the server flags isError, a timeout and
// a dead server become "Error: ..." tool messages, counted as failed calls: the episode goes
// on. A server whose session broke (a stdio process that exited, an HTTP endpoint that reset)
// is restarted or reconnected on the next call, and a call that it died under is tried once
// more on the new session; after Config.MaxRestarts restarts its tools only answer with an
// error. Tool calls are not retried otherwise: a tool may have effects.
//
// Content other than text (images, audio, resources) is shown as a one-line placeholder, and
// structured content as JSON when the result has no content. Input schemas reach the template
// as the SDK decodes them, so their keys are in sorted order.
//
// The tests run the package's own server (internal/testserver) over stdio and HTTP, including
// tools that hang, crash the server and answer 10 MB. docs/mcp.md has the YAML form.
package mcp
