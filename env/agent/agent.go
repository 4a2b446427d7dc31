// Package agent is the agent environment: for each episode the trainer runs the user's agent
// program (any executable written against the OpenAI chat completions API), pointed at the
// trainer's endpoint (package rollout/serve) by OPENAI_BASE_URL and an OPENAI_API_KEY that
// identifies the episode. The program gets its task on stdin or in a file, talks to the endpoint
// as to any OpenAI-compatible server, and reports its reward on the endpoint or on its last line
// of output, or leaves the reward to the task's environment. It is pure Go: the endpoint and the
// episodes' bookkeeping live in rollout/serve; programs run under env/sandbox's limits.
//
// Or, with service: true, no program is started: agent services that run on their own (one
// process playing many episodes, on this machine or another) call in for episodes, each with its
// base URL and key, and finish them on the endpoint (rollout/serve's service routes).
//
// A run's env section:
//
//	env:
//	  name: calc_mult            # the tasks (generator or data rows) and their rubric
//	  agent:
//	    command: [node, agents/calc.mjs]
//	    reward: task             # or program
//	    max_calls: 8
//	    time: 2m
package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/mtgrpo/mtgrpo/env"
	"github.com/mtgrpo/mtgrpo/env/sandbox"
	"github.com/mtgrpo/mtgrpo/internal/setting"
)

// TaskInput says how a program receives its task.
type TaskInput string

// RewardSource says where an episode's reward comes from.
type RewardSource string

const (
	// Stdin: the task is one JSON object on the program's standard input.
	Stdin TaskInput = "stdin"
	// File: MTGRPO_TASK_FILE names a file holding the task JSON; stdin is empty.
	File TaskInput = "file"

	// FromProgram: the program reports the reward, on the reward route
	// (POST $OPENAI_BASE_URL/mtgrpo/reward) or as its last line of output, {"reward": r}.
	FromProgram RewardSource = "program"
	// FromTask: the task's environment scores the episode: the model's messages of the
	// conversation the program ended with are stepped through a fresh episode of it, and its
	// rubric scores that (the built-in environment's reward for the same outputs).
	FromTask RewardSource = "task"
)

// Config is the env.agent section: the program (or the service) and its limits.
type Config struct {
	// Command is the program and its arguments, run once per episode.
	Command []string `yaml:"command"`
	// Service, instead of Command, has agent services call in for episodes: each episode waits
	// for a service to take it (POST /v1/mtgrpo/episodes/next), which plays it with the
	// episode's key and finishes it (POST /v1/mtgrpo/finish), all within Time.
	Service bool `yaml:"service"`
	// ServiceKey is the key a service sends to take episodes (Authorization: Bearer KEY;
	// required unless Listen is a loopback address).
	ServiceKey string `yaml:"service_key"`
	// Dir is its working directory ("": the trainer's).
	Dir string `yaml:"dir"`
	// Env are extra environment variables of the program (beside the trainer's own, less any
	// OPENAI_* variable, which the episode's replace).
	Env map[string]string `yaml:"env"`
	// TaskInput is stdin (default) or file.
	TaskInput TaskInput `yaml:"task_input"`
	// Reward is program (default) or task.
	Reward RewardSource `yaml:"reward"`
	// Time bounds an episode's program, or a service's episode from the moment it is offered
	// (default 10m); MaxCalls its chat calls and MaxTokens the tokens its calls sample (0: no
	// limit).
	Time      time.Duration `yaml:"time"`
	MaxCalls  int           `yaml:"max_calls"`
	MaxTokens int           `yaml:"max_tokens"`
	// MemoryMB, Processes and OutputBytes bound each program (sandbox.ProgramLimits; 0: its
	// defaults, 2048 MB, 256 processes, 64 KiB of each output kept).
	MemoryMB    int64 `yaml:"memory_mb"`
	Processes   int   `yaml:"processes"`
	OutputBytes int   `yaml:"output_bytes"`
	// MaxConcurrent bounds the programs running at once (0: every episode of a step at once).
	MaxConcurrent int `yaml:"max_concurrent"`
	// CacheSlots is how many finished calls' KV caches are kept for the next call of their
	// conversation (0: as many as the engine has slots; each costs one slot of KV memory).
	CacheSlots int `yaml:"cache_slots"`
	// Listen is the endpoint's address (default 127.0.0.1:0, a free port; a service needs a
	// port it knows).
	Listen string `yaml:"listen"`
	// Model is the model id the endpoint serves (default "mtgrpo").
	Model string `yaml:"model"`
	// Helper is the sandbox helper binary (default: mtgrpo-sandbox beside the binary).
	Helper string `yaml:"helper"`
}

// DefaultTime bounds an episode's program when Config.Time is 0.
const DefaultTime = 10 * time.Minute

// ParseTaskInput reads a task input's name ("" is stdin).
func ParseTaskInput(s string) (TaskInput, error) {
	return setting.Parse("task input", s, []TaskInput{Stdin, File}, map[string]TaskInput{"": Stdin})
}

// UnmarshalText reads a task input's name as ParseTaskInput does (YAML, flags).
func (t *TaskInput) UnmarshalText(b []byte) error { return setting.Decode(t, b, ParseTaskInput) }

// ParseRewardSource reads a reward source's name ("" is program).
func ParseRewardSource(s string) (RewardSource, error) {
	return setting.Parse("reward source", s, []RewardSource{FromProgram, FromTask}, map[string]RewardSource{"": FromProgram})
}

// UnmarshalText reads a reward source's name as ParseRewardSource does (YAML, flags).
func (r *RewardSource) UnmarshalText(b []byte) error { return setting.Decode(r, b, ParseRewardSource) }

// Validate names every bad key (env.agent.KEY, setting.KeyError), all at once.
func (c Config) Validate() error {
	var errs []error
	switch {
	case c.Service && len(c.Command) > 0:
		errs = append(errs, setting.Errorf("env.agent.command", "give a command (a program per episode) or service: true (services call in), not both"))
	case c.Service:
		errs = append(errs, c.validateService()...)
	case len(c.Command) == 0 || c.Command[0] == "":
		errs = append(errs, setting.Errorf("env.agent.command", "no program: give the program and its arguments, e.g. [node, agent.mjs], or service: true"))
	case c.ServiceKey != "":
		errs = append(errs, setting.Errorf("env.agent.service_key", "has no effect without service: true"))
	}
	if c.TaskInput != "" {
		errs = append(errs, setting.OneOf("env.agent.task_input", c.TaskInput, []TaskInput{Stdin, File}))
	}
	if c.Reward != "" {
		errs = append(errs, setting.OneOf("env.agent.reward", c.Reward, []RewardSource{FromProgram, FromTask}))
	}
	for _, r := range []setting.Checker{
		setting.AtLeast("env.agent.max_calls", c.MaxCalls, 0), setting.AtLeast("env.agent.max_tokens", c.MaxTokens, 0),
		setting.AtLeast("env.agent.memory_mb", c.MemoryMB, 0), setting.AtLeast("env.agent.processes", c.Processes, 0),
		setting.AtLeast("env.agent.output_bytes", c.OutputBytes, 0), setting.AtLeast("env.agent.max_concurrent", c.MaxConcurrent, 0),
		setting.AtLeast("env.agent.cache_slots", c.CacheSlots, 0), setting.AtLeast("env.agent.time", c.Time, 0),
	} {
		errs = append(errs, r.Check())
	}
	for k := range c.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.HasPrefix(k, "OPENAI_") || k == TaskFileVar {
			errs = append(errs, setting.Errorf("env.agent.env", "%q: not a variable the program may be given (OPENAI_* and %s are the episode's)", k, TaskFileVar))
		}
	}
	return errors.Join(errs...)
}

// validateService checks a service's section: a port the service can be told, a key where
// others can reach it, and none of the keys that bound a program.
func (c Config) validateService() []error {
	var errs []error
	host, port, err := net.SplitHostPort(c.Listen)
	switch {
	case c.Listen == "":
		errs = append(errs, setting.Errorf("env.agent.listen", "a service must know where to call: give the address, e.g. 127.0.0.1:8400"))
	case err != nil:
		errs = append(errs, setting.Errorf("env.agent.listen", "%q: %v", c.Listen, err))
	case port == "0":
		errs = append(errs, setting.Errorf("env.agent.listen", "%q: a service must know the port: give one", c.Listen))
	case c.ServiceKey == "" && !loopback(host):
		errs = append(errs, setting.Errorf("env.agent.service_key", "required when listen (%s) is reachable from other machines", c.Listen))
	}
	for key, set := range map[string]bool{"dir": c.Dir != "", "env": len(c.Env) > 0, "task_input": c.TaskInput != "",
		"memory_mb": c.MemoryMB != 0, "processes": c.Processes != 0, "output_bytes": c.OutputBytes != 0, "helper": c.Helper != ""} {
		if set {
			errs = append(errs, setting.Errorf("env.agent."+key, "bounds a program, and service: true starts none"))
		}
	}
	return errs
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// RewardFrom is the reward source (program when unset).
func (c Config) RewardFrom() RewardSource {
	if c.Reward == "" {
		return FromProgram
	}
	return c.Reward
}

// Limits are the per-program limits.
func (c Config) Limits() sandbox.ProgramLimits {
	t := c.Time
	if t == 0 {
		t = DefaultTime
	}
	return sandbox.ProgramLimits{Wall: t, MemoryBytes: c.MemoryMB << 20, Processes: c.Processes, OutputBytes: c.OutputBytes}
}

// TaskFileVar names the task file under task_input: file.
const TaskFileVar = "MTGRPO_TASK_FILE"

// Input is what a program gets as its task: the dataset row (env.Task), and the environment's
// opening messages and tools, for a program that plays the built-in environment's part.
type Input struct {
	Task     env.Task       `json:"task"`
	Messages []env.Message  `json:"messages"`
	Tools    []env.ToolSpec `json:"tools"`
	Episode  int            `json:"episode"`
	Group    int            `json:"group"`
}

// Episode is what a service gets for an episode: the program's Input, the endpoint's base URL
// and the episode's key for its calls, and the seconds left of the episode's time.
type Episode struct {
	Input
	BaseURL  string  `json:"base_url"`
	APIKey   string  `json:"api_key"`
	TimeLeft float64 `json:"time_left_s"`
}

// Outcome is what a program's run left: its result, and the reward of its last output line when
// it wrote one.
type Outcome struct {
	Result sandbox.Result
	// LineReward is the reward of the last non-empty stdout line when that line is a JSON object
	// with a "reward" (nil otherwise); LineError says why such a line was not accepted.
	LineReward *float64
	LineError  error
}

// Run runs the program of one episode: baseURL and key reach the endpoint.
func Run(ctx context.Context, p *sandbox.Programs, c Config, in Input, baseURL, key string) (Outcome, error) {
	task, err := json.Marshal(in)
	if err != nil {
		return Outcome{}, fmt.Errorf("agent: task %s: %w", in.Task.ID, err)
	}
	prog := sandbox.Program{Path: c.Command[0], Args: c.Command[1:], Dir: c.Dir, Limits: c.Limits(),
		Env: environ(c.Env, "OPENAI_BASE_URL="+baseURL, "OPENAI_API_KEY="+key)}
	if c.TaskInput == File {
		f, err := os.CreateTemp("", "mtgrpo-task-*.json")
		if err != nil {
			return Outcome{}, fmt.Errorf("agent: task file: %w", err)
		}
		defer os.Remove(f.Name())
		_, err = f.Write(task)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return Outcome{}, fmt.Errorf("agent: task file: %w", err)
		}
		prog.Env = append(prog.Env, TaskFileVar+"="+f.Name())
	} else {
		prog.Stdin = task
	}
	res, err := p.Run(ctx, prog)
	out := Outcome{Result: res}
	out.LineReward, out.LineError = lastLineReward(res.Stdout)
	return out, err
}

// environ is the trainer's environment less OPENAI_* and the task file, plus extra and the
// episode's variables.
func environ(extra map[string]string, episode ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OPENAI_") && !strings.HasPrefix(kv, TaskFileVar+"=") {
			out = append(out, kv)
		}
	}
	for k, v := range extra {
		out = append(out, k+"="+v)
	}
	return append(out, episode...)
}

// lastLineReward reads {"reward": r} from the last non-empty line of stdout.
func lastLineReward(stdout string) (*float64, error) {
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	if !strings.HasPrefix(last, "{") {
		return nil, nil
	}
	var v struct {
		Reward *float64 `json:"reward"`
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(last)))
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("the last output line is not a JSON object with a number \"reward\": %v: %s", err, shorten(last))
	}
	if v.Reward == nil {
		return nil, nil
	}
	if err := env.CheckOutside("reward", *v.Reward); err != nil {
		return nil, err
	}
	return v.Reward, nil
}

func shorten(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}
