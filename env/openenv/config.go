package openenv

import (
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/mtgrpo/mtgrpo/env"
)

// Transport is how episodes reach the server.
type Transport string

const (
	// WebSocket opens one session (GET /ws) per episode: the environment lives as long as the
	// connection. Current OpenEnv servers hold state only this way.
	WebSocket Transport = "websocket"
	// HTTP posts /reset and /step to a server that keeps one environment per process (OpenEnv's
	// first releases, and servers written in that form): each URL serves one episode at a time.
	HTTP Transport = "http"
)

// RewardRule says how the trajectory reward comes from the step rewards.
type RewardRule string

const (
	// Final takes the reward of the last step (the one that ended the episode).
	Final RewardRule = "final"
	// Sum adds every step's reward.
	Sum RewardRule = "sum"
)

// Config turns running OpenEnv servers into an mtgrpo environment (`env: openenv`).
type Config struct {
	// URLs are the servers' base URLs (http://host:port). Episodes are spread over them.
	URLs []string `yaml:"urls" json:"urls"`
	// Transport is websocket (default) or http.
	Transport Transport `yaml:"transport" json:"transport"`
	// MaxSessions is how many WebSocket sessions one server accepts at once: its
	// max_concurrent_envs (OpenEnv's default is 1). The http transport runs one episode per URL.
	MaxSessions int `yaml:"max_sessions" json:"max_sessions"`
	// ActionField is the action's field that carries the model's message: the action sent is
	// {ActionField: text} plus ActionExtra. Default "message" (echo, textarena).
	ActionField string         `yaml:"action_field" json:"action_field"`
	ActionExtra map[string]any `yaml:"action_extra" json:"action_extra"`
	// ObservationField is the observation's field shown to the model. Empty: the observation's
	// only string field when it has exactly one, else the observation as JSON.
	ObservationField string `yaml:"observation_field" json:"observation_field"`
	// ObservationRole is the role of the observation messages after a step: user (default) or
	// tool.
	ObservationRole string `yaml:"observation_role" json:"observation_role"`
	// ResetData is sent with every reset beside seed and episode_id (custom reset parameters).
	ResetData map[string]any `yaml:"reset_data" json:"reset_data"`
	// System, if set, is the system message of every episode.
	System string `yaml:"system" json:"system"`
	// Reward is final (default) or sum.
	Reward RewardRule `yaml:"reward" json:"reward"`
	// MaxTurns ends an episode the server has not ended after that many steps (Truncated).
	// Default 16.
	MaxTurns int `yaml:"max_turns" json:"max_turns"`
	// RequestTimeout bounds one request: connecting, a reset, a step. Default 60s.
	RequestTimeout time.Duration `yaml:"request_timeout" json:"request_timeout"`
	// Retries is how often a failed reset (connection error, 5xx, server at capacity) is tried
	// again, with a doubling pause. Steps are never retried: the server's state after a failed
	// step is unknown. Default 3; -1 for none.
	Retries int `yaml:"retries" json:"retries"`
	// SlotWait bounds how long a reset waits for a free session when all are taken. Default
	// 2 minutes.
	SlotWait time.Duration `yaml:"slot_wait" json:"slot_wait"`
	// MaxMessageBytes caps one message from the server. Default 16 MiB.
	MaxMessageBytes int64 `yaml:"max_message_bytes" json:"max_message_bytes"`
}

// Defaults of Config's zero fields.
const (
	DefaultActionField     = "message"
	DefaultMaxTurns        = 16
	DefaultRequestTimeout  = time.Minute
	DefaultRetries         = 3
	DefaultSlotWait        = 2 * time.Minute
	DefaultMaxMessageBytes = 16 << 20
)

func (c Config) withDefaults() Config {
	if c.Transport == "" {
		c.Transport = WebSocket
	}
	if c.MaxSessions == 0 {
		c.MaxSessions = 1
	}
	if c.ActionField == "" {
		c.ActionField = DefaultActionField
	}
	if c.ObservationRole == "" {
		c.ObservationRole = env.RoleUser
	}
	if c.Reward == "" {
		c.Reward = Final
	}
	if c.MaxTurns == 0 {
		c.MaxTurns = DefaultMaxTurns
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	switch c.Retries {
	case 0:
		c.Retries = DefaultRetries
	case -1:
		c.Retries = 0
	}
	if c.SlotWait == 0 {
		c.SlotWait = DefaultSlotWait
	}
	if c.MaxMessageBytes == 0 {
		c.MaxMessageBytes = DefaultMaxMessageBytes
	}
	return c
}

// Validate names every bad field (openenv.urls[0]: ...), all at once.
func (c Config) Validate() error {
	var errs []error
	bad := func(field, format string, a ...any) {
		errs = append(errs, fmt.Errorf("openenv.%s: %s", field, fmt.Sprintf(format, a...)))
	}
	if len(c.URLs) == 0 {
		bad("urls", "no server URL")
	}
	for i, u := range c.URLs {
		p, err := url.Parse(u)
		if err != nil || (p.Scheme != "http" && p.Scheme != "https" && p.Scheme != "ws" && p.Scheme != "wss") || p.Host == "" {
			bad(fmt.Sprintf("urls[%d]", i), "%q is not an http(s) or ws(s) URL", u)
		}
	}
	switch c.Transport {
	case "", WebSocket, HTTP:
	default:
		bad("transport", "%q (want websocket or http)", c.Transport)
	}
	if c.MaxSessions < 0 || (c.Transport == HTTP && c.MaxSessions > 1) {
		bad("max_sessions", "%d (want >= 1 for websocket; the http transport runs one episode per URL)", c.MaxSessions)
	}
	if _, clash := c.ActionExtra[c.ActionField]; clash && c.ActionField != "" {
		bad("action_extra", "sets %q, the action field itself", c.ActionField)
	}
	switch c.ObservationRole {
	case "", env.RoleUser, env.RoleTool:
	default:
		bad("observation_role", "%q (want user or tool)", c.ObservationRole)
	}
	switch c.Reward {
	case "", Final, Sum:
	default:
		bad("reward", "%q (want final or sum)", c.Reward)
	}
	if c.MaxTurns < 0 || c.RequestTimeout < 0 || c.SlotWait < 0 || c.MaxMessageBytes < 0 {
		bad("max_turns", "limits must be >= 0 (max_turns %d, request_timeout %v, slot_wait %v, max_message_bytes %d)",
			c.MaxTurns, c.RequestTimeout, c.SlotWait, c.MaxMessageBytes)
	}
	if c.Retries < -1 {
		bad("retries", "%d (want >= 0, or -1 for none)", c.Retries)
	}
	return errors.Join(errs...)
}
