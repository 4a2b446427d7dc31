package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/mtgrpo/mtgrpo/cmd/internal/job"
	"github.com/mtgrpo/mtgrpo/cmd/internal/threads"
	"github.com/mtgrpo/mtgrpo/torch"
)

// usageError is a mistake in the command line (unknown flag, bad value, missing argument): main
// exits with status 2 for it, as flag parsers conventionally do, and 1 for failures of the work.
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

func usagef(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

// errHelp reports that --help was asked for and printed: not a failure.
var errHelp = pflag.ErrHelp

// command describes a subcommand for its --help text.
type command struct {
	name     string // "data gen"
	args     string // positional arguments, e.g. "RUN"
	summary  string
	examples []string
}

// flags makes the flag set of a command; its --help prints the summary, every flag with its default
// and the examples.
func (c command) flags() *pflag.FlagSet {
	fs := pflag.NewFlagSet(c.name, pflag.ContinueOnError)
	fs.SortFlags = false
	fs.Usage = func() {
		w := os.Stdout
		fmt.Fprintf(w, "usage: mtgrpo %s [flags] %s\n\n%s\n\nflags:\n%s", c.name, c.args, c.summary, fs.FlagUsages())
		if len(c.examples) > 0 {
			fmt.Fprintf(w, "\nexamples:\n  %s\n", strings.Join(c.examples, "\n  "))
		}
	}
	return fs
}

// parse parses args; a bad flag is a usageError naming the command.
func (c command) parse(fs *pflag.FlagSet, args []string) error {
	fs.SetOutput(os.Stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return errHelp
		}
		return usageError{fmt.Errorf("%s: %w (see mtgrpo %s --help)", c.name, err, c.name)}
	}
	return nil
}

// threadsFlag adds --threads to a command that runs tensor work.
func threadsFlag(fs *pflag.FlagSet) *string {
	return fs.String("threads", "", "CPU threads: N cores, or INTRA,BLAS pool sizes (default: $"+threads.EnvVar+", else half the cores, 1 BLAS thread)")
}

// withTorch resolves the thread setting and runs fn on the torch thread once it is applied.
// reserves is what fn takes in address space after the check (threads.Apply), which refuses,
// with exit status 2, a command that an address-space limit (ulimit -v) cannot hold.
func withTorch(threadSpec string, fn func() error, reserves ...threads.Reserve) (err error) {
	defer job.ExplainTorch(&err)
	s, err := threads.Resolve(threadSpec)
	if err != nil {
		return usageError{err}
	}
	return torch.Run(func() error {
		if _, err := threads.Apply(s, reserves...); err != nil {
			if errors.Is(err, threads.ErrAddressSpace) {
				return usageError{err}
			}
			return err
		}
		return fn()
	})
}

// intFlag is one integer flag's value with the least it may be.
type intFlag struct {
	name       string
	value, min int
}

// atLeast checks integer flags against their minimum; the error names the first bad flag.
func atLeast(cmd string, flags ...intFlag) error {
	for _, f := range flags {
		if f.value < f.min {
			return usagef("%s: --%s %d: must be at least %d", cmd, f.name, f.value, f.min)
		}
	}
	return nil
}

// inRange checks a float flag against [lo, hi]; the error names the flag.
func inRange(cmd, name string, v, lo, hi float64) error {
	if v < lo || v > hi || v != v {
		return usagef("%s: --%s %g: must be in [%g, %g]", cmd, name, v, lo, hi)
	}
	return nil
}
