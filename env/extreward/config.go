package extreward

import (
	"errors"
	"fmt"
	"net/url"
	"time"
)

// Type is how the reward function is reached.
type Type string

const (
	// Command runs a program per trajectory: the record on stdin, the answer on stdout.
	Command Type = "command"
	// HTTP posts the record (or a batch of them) to a URL and reads the answer from the body.
	HTTP Type = "http"
)

// Combine says what becomes of the environment's own reward functions.
type Combine string

const (
	// Replace (the default) makes the external function the trajectory reward: the
	// environment's own functions are still reported (reward/<name>) but weigh 0 and gate
	// nothing. Its turn functions stay.
	Replace Combine = "replace"
	// Add sums the external reward, weighted, with the environment's own.
	Add Combine = "add"
)

// Config is the `reward_computation:` section of a run's config for an external function.
type Config struct {
	Type Type `yaml:"type" json:"type"`
	// Name reports the reward as reward/<name> (default "external").
	Name string `yaml:"name" json:"name"`
	// Command is the program and its arguments (type command), e.g. [python3, reward.py]; Dir
	// its working directory and Env what it adds to the inherited environment.
	Command []string          `yaml:"command" json:"command"`
	Dir     string            `yaml:"dir" json:"dir"`
	Env     map[string]string `yaml:"env" json:"env"`
	// URL receives the POSTs (type http).
	URL string `yaml:"url" json:"url"`
	// Timeout bounds one call: one program run, or one POST of a batch. Default 30s.
	Timeout time.Duration `yaml:"timeout" json:"timeout"`
	// Concurrency bounds the calls running at once. Default 8.
	Concurrency int `yaml:"concurrency" json:"concurrency"`
	// BatchSize (type http) is the most trajectories per POST: 1 posts one record and reads
	// one answer, more post a JSON array of records and read an array of answers in the same
	// order. Scores requested within BatchWait of each other share a POST. Default 1.
	BatchSize int           `yaml:"batch_size" json:"batch_size"`
	BatchWait time.Duration `yaml:"batch_wait" json:"batch_wait"`
	// Retries (type http) is how often a POST that failed without an answer (connection error,
	// 5xx, timeout) is tried again. Default 2; -1 for none.
	Retries int `yaml:"retries" json:"retries"`
	// Weight multiplies the reward in the rubric's sum (nil: 1).
	Weight *float64 `yaml:"weight" json:"weight"`
	// Gate makes the reward a pass/fail condition under the context-length rules (at least 1
	// passes).
	Gate    bool    `yaml:"gate" json:"gate"`
	Combine Combine `yaml:"combine" json:"combine"`
}

// Defaults of Config's zero fields.
const (
	DefaultTimeout     = 30 * time.Second
	DefaultConcurrency = 8
	DefaultBatchWait   = 20 * time.Millisecond
	DefaultRetries     = 2
	DefaultName        = "external"
)

func (c Config) withDefaults() Config {
	if c.Name == "" {
		c.Name = DefaultName
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Concurrency == 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.BatchSize == 0 {
		c.BatchSize = 1
	}
	if c.BatchWait == 0 {
		c.BatchWait = DefaultBatchWait
	}
	switch c.Retries {
	case 0:
		c.Retries = DefaultRetries
	case -1:
		c.Retries = 0
	}
	if c.Combine == "" {
		c.Combine = Replace
	}
	return c
}

func (c Config) weight() float64 {
	if c.Weight == nil {
		return 1
	}
	return *c.Weight
}

// Validate names every bad field (reward_computation.url: ...), all at once.
func (c Config) Validate() error {
	var errs []error
	bad := func(field, format string, a ...any) {
		errs = append(errs, fmt.Errorf("reward_computation.%s: %s", field, fmt.Sprintf(format, a...)))
	}
	switch c.Type {
	case Command:
		if len(c.Command) == 0 || c.Command[0] == "" {
			bad("command", "type command needs the program to run, e.g. [python3, reward.py]")
		}
		if c.URL != "" {
			bad("url", "applies to type http, not command")
		}
		if c.BatchSize > 1 {
			bad("batch_size", "a command scores one trajectory per run; batch_size applies to type http")
		}
	case HTTP:
		if u, err := url.Parse(c.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("url", "type http needs an http(s) URL, got %q", c.URL)
		}
		if len(c.Command) > 0 || c.Dir != "" || len(c.Env) > 0 {
			bad("command", "command, dir and env apply to type command, not http")
		}
	default:
		bad("type", "%q is not an external reward type (want command or http)", c.Type)
	}
	if c.Timeout < 0 || c.BatchWait < 0 {
		bad("timeout", "durations must be >= 0 (timeout %v, batch_wait %v)", c.Timeout, c.BatchWait)
	}
	if c.Concurrency < 0 {
		bad("concurrency", "%d < 0", c.Concurrency)
	}
	if c.BatchSize < 0 {
		bad("batch_size", "%d < 0", c.BatchSize)
	}
	if c.Retries < -1 {
		bad("retries", "%d (want >= 0, or -1 for none)", c.Retries)
	}
	switch c.Combine {
	case "", Replace, Add:
	default:
		bad("combine", "%q (want replace or add)", c.Combine)
	}
	return errors.Join(errs...)
}
