// Package external opens an environment with the parts that live outside the binary, from the
// sections of a run's config: MCP servers whose tools join the environment's (`mcp:`), an
// OpenEnv server as the environment (`env: openenv` with `openenv:`), and a reward function run
// as a command or reached over HTTP (`reward_computation:` of type command or http). It is the
// one entry point the CLI needs:
//
//	var ext external.Config              // filled from YAML
//	environment, closer, err := external.Open(ctx, cfg.Env, envConfig, ext)
//	defer closer.Close()                 // stops the MCP servers
//	driverCfg.MaxOpenEpisodes = environment.MaxConcurrent
//
// The rules that decide single- against multi-turn running are env.IsMultiTurn's:
// environment.MultiTurn tells the trainer which path to take.
package external

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/mtgrpo/mtgrpo/env"
	"github.com/mtgrpo/mtgrpo/env/extreward"
	"github.com/mtgrpo/mtgrpo/env/mcp"
	"github.com/mtgrpo/mtgrpo/env/openenv"
)

// OpenEnvName is the environment name that selects an OpenEnv server.
const OpenEnvName = "openenv"

// Config holds the external sections of a run's config; nil sections are absent.
type Config struct {
	MCP     *mcp.Config       `yaml:"mcp" json:"mcp"`
	OpenEnv *openenv.Config   `yaml:"openenv" json:"openenv"`
	Reward  *extreward.Config `yaml:"reward_computation" json:"reward_computation"`
}

// Validate checks the sections that are present, and that openenv is there exactly when the
// environment is openenv.
func (c Config) Validate(envName string) error {
	var errs []error
	if envName == OpenEnvName && c.OpenEnv == nil {
		errs = append(errs, errors.New("env openenv needs an openenv: section with the server URLs"))
	}
	if envName != OpenEnvName && c.OpenEnv != nil {
		errs = append(errs, fmt.Errorf("an openenv: section is given but env is %q (set env: openenv)", envName))
	}
	if envName == OpenEnvName && c.MCP != nil {
		errs = append(errs, errors.New("mcp: tools cannot be added to an OpenEnv environment (its server defines the actions)"))
	}
	if c.MCP != nil {
		errs = append(errs, c.MCP.Validate())
	}
	if c.OpenEnv != nil {
		errs = append(errs, c.OpenEnv.Validate())
	}
	if c.Reward != nil {
		errs = append(errs, c.Reward.Validate())
	}
	return errors.Join(errs...)
}

type closers []io.Closer

func (cs closers) Close() error {
	var errs []error
	for _, c := range cs {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// Open opens the named environment with the external parts of ext: it connects to the MCP
// servers (their tools go into cfg.ExtraTools), opens an OpenEnv server for name "openenv", and
// puts the external reward on the result. The closer stops what was started (always non-nil).
func Open(ctx context.Context, name string, cfg env.Config, ext Config) (*env.Environment, io.Closer, error) {
	var cs closers
	if err := ext.Validate(name); err != nil {
		return nil, cs, err
	}
	var e *env.Environment
	var err error
	if name == OpenEnvName {
		if err := openenv.Probe(ctx, *ext.OpenEnv); err != nil {
			return nil, cs, err
		}
		e, err = openenv.Open(*ext.OpenEnv)
	} else {
		if ext.MCP != nil {
			c, err := mcp.Connect(ctx, *ext.MCP)
			if err != nil {
				return nil, cs, err
			}
			cs = append(cs, c)
			cfg.ExtraTools = append(cfg.ExtraTools, c.Tools()...)
		}
		e, err = env.Open(name, cfg)
	}
	if err != nil {
		cs.Close()
		return nil, closers{}, err
	}
	if ext.Reward != nil {
		r, err := extreward.New(*ext.Reward)
		if err != nil {
			cs.Close()
			return nil, closers{}, err
		}
		e = r.Apply(e)
	}
	return e, cs, nil
}
