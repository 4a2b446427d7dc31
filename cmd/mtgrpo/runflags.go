package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/mtgrpo/mtgrpo/cmd/internal/config"
)

// runFlags are the configuration flags train, eval and demo share. Each flag that is given sets
// its configuration key after the YAML files and the environment variables; --set and
// positional key=value arguments set any key, in the order given.
type runFlags struct {
	fs      *pflag.FlagSet
	files   []string
	preset  string
	sets    []string
	aliases []flagKey
	// dotted are --section.key VALUE flags (align-anything's style), for any key.
	dotted []config.Override
	// hydraPath and hydraName are verl's --config-path DIR --config-name NAME.
	hydraPath, hydraName string
}

// flagKey is a flag that sets one configuration key.
type flagKey struct {
	flag, key, usage string
}

// commonKeys are the flags for the keys people change most; every other key takes --set.
var commonKeys = []flagKey{
	{"model", "model", "model directory (Hugging Face layout) or Hub id ORG/NAME[@REVISION] ($MODEL)"},
	{"run-dir", "run_dir", "run directory ($RUN_DIR)"},
	{"env", "env.name", "environment ($ENV_NAME)"},
	{"data", "data.train", "training tasks: parquet or JSONL in verl's layout ($DATA; default: generated)"},
	{"val-data", "data.val", "validation tasks: parquet or JSONL ($VAL_DATA; default: generated)"},
	{"steps", "train.steps", "RL steps ($STEPS; 0: --epochs passes over the training tasks)"},
	{"epochs", "train.epochs", "passes over the training tasks when --steps is 0 ($EPOCHS)"},
	{"batch-size", "rollout.tasks", "tasks per step ($BATCH_SIZE)"},
	{"group", "rollout.group", "trajectories per task (the GRPO group)"},
	{"lr", "optim.lr", "peak learning rate ($LR)"},
	{"seed", "seed", "seed of everything random ($SEED)"},
	{"device", "device", "cpu, cuda or cuda:N ($GPUS=N picks cuda:N)"},
	{"dtype", "dtype", "compute dtype: float32, bfloat16 (default: float32 on cpu, the checkpoint's elsewhere)"},
}

func newRunFlags(fs *pflag.FlagSet, keys []flagKey) *runFlags {
	r := &runFlags{fs: fs, aliases: keys}
	fs.StringArrayVar(&r.files, "config", nil, "YAML configuration file (repeatable: later files override earlier ones; default: $CONFIG)")
	fs.StringVar(&r.preset, "preset", "", "preset: "+strings.Join(config.PresetNames(), ", ")+" (default: $PRESET, a file's preset key, or general)")
	for _, k := range keys {
		fs.String(k.flag, "", k.usage)
	}
	fs.StringArrayVar(&r.sets, "set", nil, "KEY=VALUE for any configuration key, native or seed layout (repeatable), e.g. --set rollout.temperature=0.7")
	return r
}

// parse parses the command line: --section.key VALUE flags and Hydra's --config-path and
// --config-name (-cp, -cn) are taken out first, the rest goes to the flag set.
func (r *runFlags) parse(c command, args []string) error {
	rest, err := r.takeForeign(args)
	if err != nil {
		return usageError{fmt.Errorf("%s: %w", c.name, err)}
	}
	return c.parse(r.fs, rest)
}

// takeForeign takes the flags that are configuration keys out of args: --section.key VALUE for
// any key, and the foreign flags without a section (TRL's --learning_rate 1e-6, align-anything's
// --actor_model_name_or_path DIR) that are not mtgrpo's own. A flag followed by another flag or a
// key=value setting is a switch (--bf16).
func (r *runFlags) takeForeign(args []string) ([]string, error) {
	var rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(rest, args[i:]...), nil
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		hydra := map[string]*string{"config-path": &r.hydraPath, "cp": &r.hydraPath, "config-name": &r.hydraName, "cn": &r.hydraName}
		dst, isHydra := hydra[name]
		dotted := strings.HasPrefix(a, "--") && strings.Contains(name, ".")
		if flat, ok := config.FlatFlagKey(name); ok && strings.HasPrefix(a, "--") && r.fs.Lookup(name) == nil {
			name, dotted = flat, true // align-anything's flag without its section
		}
		if !strings.HasPrefix(a, "-") || !isHydra && !dotted {
			rest = append(rest, a)
			continue
		}
		if !hasValue {
			if i+1 >= len(args) || strings.HasPrefix(args[i+1], "--") || !isHydra && strings.Contains(args[i+1], "=") {
				if isHydra {
					return nil, fmt.Errorf("%s: want a value", a)
				}
				value = "true" // a switch given alone
			} else {
				i++
				value = args[i]
				for config.ManyValued(name) && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") && !strings.Contains(args[i+1], "=") {
					i++
					value += " " + args[i] // nargs="+": --lora_target_modules q_proj v_proj
				}
			}
		}
		if isHydra {
			*dst = value
			continue
		}
		r.dotted = append(r.dotted, config.Override{Key: name, Value: value, Where: "--" + name})
	}
	return rest, nil
}

// hydraFile is the file --config-path DIR --config-name NAME names ("" without --config-name).
func (r *runFlags) hydraFile() string {
	if r.hydraName == "" {
		return ""
	}
	name := r.hydraName
	if filepath.Ext(name) == "" {
		name += ".yaml"
	}
	return filepath.Join(r.hydraPath, name)
}

// sources are the configuration layers the command line gives: the flags that were set, then
// --set and positional key=value arguments.
func (r *runFlags) sources(cmd string) (config.Sources, error) {
	s := config.Sources{Preset: r.preset}
	if r.files != nil {
		s.Files = r.files
	}
	if f := r.hydraFile(); f != "" {
		s.Files = append([]string{f}, r.files...)
	} else if r.hydraPath != "" {
		return s, usagef("%s: --config-path %s without --config-name: name the configuration in it", cmd, r.hydraPath)
	}
	for _, k := range r.aliases {
		if f := r.fs.Lookup(k.flag); f.Changed {
			s.Overrides = append(s.Overrides, config.Override{Key: k.key, Value: f.Value.String(), Where: "--" + k.flag})
		}
	}
	for _, a := range r.sets {
		o, err := config.ParseSet(a, "--set")
		if err != nil {
			return s, usageError{fmt.Errorf("%s: %w", cmd, err)}
		}
		s.Overrides = append(s.Overrides, o)
	}
	s.Overrides = append(s.Overrides, r.dotted...)
	for _, a := range r.fs.Args() {
		o, err := config.ParseSet(a, "argument")
		if err != nil {
			return s, usagef("%s: unexpected argument %q: want KEY=VALUE (a checkpoint to resume from is given as --resume=PATH)", cmd, a)
		}
		s.Overrides = append(s.Overrides, o)
	}
	return s, nil
}

// configError makes a configuration error a usage error: what was asked is wrong.
func configError(cmd string, err error) error {
	var ce *config.Error
	if errors.As(err, &ce) {
		return usageError{fmt.Errorf("%s: %w", cmd, err)}
	}
	return fmt.Errorf("%s: %w", cmd, err)
}

// warnConfig prints the keys accepted without effect (rank 0 only, as the log).
func warnConfig(cmd string, c *config.Config) {
	if r := os.Getenv("RANK"); r != "" && r != "0" {
		return
	}
	for _, w := range c.Warnings() {
		fmt.Fprintf(os.Stderr, "mtgrpo %s: warning: %s\n", cmd, w)
	}
}

// printConfig writes the resolved configuration as YAML.
func printConfig(c *config.Config) error {
	_, err := os.Stdout.Write(c.YAML())
	return err
}
