package mcp

import (
	"errors"
	"fmt"
	"net/url"
	"time"
)

// Config lists the MCP servers whose tools an environment offers, with the limits every call
// runs under. It is the `mcp:` section of a run's YAML config.
type Config struct {
	// Servers are started (stdio) or connected to (HTTP) once, when the run starts.
	Servers []ServerConfig `yaml:"servers" json:"servers"`
	// CallTimeout bounds one tool call; a call past it answers the model with a timeout error.
	// Default 30s.
	CallTimeout time.Duration `yaml:"call_timeout" json:"call_timeout"`
	// ConnectTimeout bounds starting or reaching a server and listing its tools. Default 20s.
	ConnectTimeout time.Duration `yaml:"connect_timeout" json:"connect_timeout"`
	// MaxResultBytes caps the text of one tool result shown to the model; longer results are cut
	// at a UTF-8 boundary and say so. Default 16384.
	MaxResultBytes int `yaml:"max_result_bytes" json:"max_result_bytes"`
	// MaxRestarts bounds how often one server is restarted (stdio) or reconnected (HTTP) after
	// it died, over the whole run; past it its tools answer with an error. Default 5.
	MaxRestarts int `yaml:"max_restarts" json:"max_restarts"`
}

// ServerConfig is one MCP server: a command speaking MCP on stdin/stdout, or a streamable HTTP
// endpoint. Exactly one of Command and URL is set.
type ServerConfig struct {
	// Name names the server in logs and errors (default: the command or the URL).
	Name string `yaml:"name" json:"name"`
	// Command and Args start a stdio server; Env adds to the environment it inherits; Dir is its
	// working directory.
	Command string            `yaml:"command" json:"command"`
	Args    []string          `yaml:"args" json:"args"`
	Env     map[string]string `yaml:"env" json:"env"`
	Dir     string            `yaml:"dir" json:"dir"`
	// URL is a streamable HTTP endpoint (http://host:port/mcp).
	URL string `yaml:"url" json:"url"`
	// Tools, if set, keeps only these of the server's tools.
	Tools []string `yaml:"tools" json:"tools"`
}

// Defaults of Config's zero fields.
const (
	DefaultCallTimeout    = 30 * time.Second
	DefaultConnectTimeout = 20 * time.Second
	DefaultMaxResultBytes = 16 << 10
	DefaultMaxRestarts    = 5
)

// withDefaults fills the zero limits.
func (c Config) withDefaults() Config {
	if c.CallTimeout == 0 {
		c.CallTimeout = DefaultCallTimeout
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = DefaultConnectTimeout
	}
	if c.MaxResultBytes == 0 {
		c.MaxResultBytes = DefaultMaxResultBytes
	}
	if c.MaxRestarts == 0 {
		c.MaxRestarts = DefaultMaxRestarts
	}
	return c
}

// Validate names every bad field (mcp.servers[1].url: ...), all at once.
func (c Config) Validate() error {
	var errs []error
	bad := func(field, format string, a ...any) {
		errs = append(errs, fmt.Errorf("mcp.%s: %s", field, fmt.Sprintf(format, a...)))
	}
	if len(c.Servers) == 0 {
		bad("servers", "no server listed")
	}
	if c.CallTimeout < 0 || c.ConnectTimeout < 0 {
		bad("call_timeout", "timeouts must be >= 0 (call %v, connect %v)", c.CallTimeout, c.ConnectTimeout)
	}
	if c.MaxResultBytes < 0 {
		bad("max_result_bytes", "%d < 0", c.MaxResultBytes)
	}
	if c.MaxRestarts < 0 {
		bad("max_restarts", "%d < 0", c.MaxRestarts)
	}
	names := map[string]int{}
	for i, s := range c.Servers {
		f := fmt.Sprintf("servers[%d]", i)
		switch {
		case s.Command == "" && s.URL == "":
			bad(f, "needs a command (stdio) or a url (streamable HTTP)")
		case s.Command != "" && s.URL != "":
			bad(f, "has both a command and a url; give one")
		case s.URL != "":
			if u, err := url.Parse(s.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				bad(f+".url", "%q is not an http(s) URL", s.URL)
			}
		}
		if s.URL != "" && (len(s.Args) > 0 || len(s.Env) > 0 || s.Dir != "") {
			bad(f, "args, env and dir apply to a command, not to a url")
		}
		if j, dup := names[s.name()]; dup {
			bad(f+".name", "%q is also the name of servers[%d]", s.name(), j)
		}
		names[s.name()] = i
	}
	return errors.Join(errs...)
}

func (s ServerConfig) name() string {
	switch {
	case s.Name != "":
		return s.Name
	case s.URL != "":
		return s.URL
	}
	return s.Command
}
