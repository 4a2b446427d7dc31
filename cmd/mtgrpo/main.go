// Command mtgrpo trains Qwen and Llama models with multi-turn reinforcement learning.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/mtgrpo/mtgrpo/cmd/internal/inputs"
	"github.com/mtgrpo/mtgrpo/cmd/internal/job"
	"github.com/mtgrpo/mtgrpo/cmd/internal/threads"
	"github.com/mtgrpo/mtgrpo/torch"
)

// Exit statuses: 1 when the work failed, 2 when the command line (or the configuration it names)
// was wrong, 128 + the signal's number when a signal stopped training after a step.
const (
	exitFailure = 1
	exitUsage   = 2
)

func main() {
	os.Exit(exitCode(run(os.Args[1:])))
}

// exitCode prints err and maps it to the process's exit status.
func exitCode(err error) int {
	var stopped *job.StoppedError
	switch {
	case err == nil, errors.Is(err, errHelp):
		return 0
	case errors.As(err, new(usageError)):
		fmt.Fprintln(os.Stderr, "mtgrpo:", err)
		return exitUsage
	case errors.As(err, &stopped):
		fmt.Fprintln(os.Stderr, "mtgrpo:", err)
		return stopped.ExitCode()
	default:
		fmt.Fprintln(os.Stderr, "mtgrpo:", err)
		return exitFailure
	}
}

// commands maps each command name to its implementation, in the order usage lists them.
var commands = []struct {
	name, summary string
	run           func([]string) error
}{
	{"train", "train a policy: SFT warm-up, GRPO / multi-turn GRPO / MT-GRPO / PPO, eval, checkpoints, export", train},
	{"eval", "evaluate a model or checkpoint on a validation set: accuracy (strict, lenient), pass@k", evalCmd},
	{"export", "write a checkpoint's policy as a model directory transformers loads", exportCmd},
	{"demo", "the embedded default job on CPU: a tiny model learns a tool task (train with configs/demo.yaml)", demo},
	{"init", "write a randomly initialised model directory (--arch --preset --seed --out)", initModel},
	{"serve", "serve a model or checkpoint on an OpenAI-compatible chat endpoint, for trying an agent by hand", serveCmd},
	{"generate", "sample continuations of prompts (--model --prompt [--n --temperature ...])", generate},
	{"data", "gen: write generated tasks as verl-style parquet/JSONL; check FILE: validate a dataset", dataCmd},
	{"report", "write RUN/report.html: charts, metrics, config and trajectories of a run", reportCmd},
	{"plot", "write the report's charts as PNG files into RUN/plots/", plotCmd},
	{"plan", "what each training rank holds in device memory, by category, and whether the run fits", planCmd},
	{"bench", "measure decode and training-step speed of the tiny model per thread setting", bench},
	{"version", "libtorch version, CUDA availability and the CPU threads in effect", version},
}

func run(args []string) error {
	if len(args) == 0 {
		usage()
		return nil
	}
	switch args[0] {
	case "help", "-h", "--help":
		if len(args) > 1 {
			return run([]string{args[1], "--help"})
		}
		usage()
		return nil
	}
	for _, c := range commands {
		if c.name == args[0] {
			defer inputs.Release() // what one command read is its own (a failed one releases it here)
			return c.run(args[1:])
		}
	}
	return usagef("unknown command %q (see mtgrpo help)", args[0])
}

func usage() {
	fmt.Println("usage: mtgrpo <command> [flags]\n\ncommands:")
	for _, c := range commands {
		fmt.Printf("  %-9s %s\n", c.name, c.summary)
	}
	fmt.Printf("  %-9s %s\n", "help", "this text; `mtgrpo help CMD` or `mtgrpo CMD --help` for a command's flags and examples")
	fmt.Printf("\nEvery command that runs tensor work takes --threads (or $%s).\n", threads.EnvVar)
}

var versionCommand = command{
	name:     "version",
	summary:  "Print the libtorch behind the shim, whether CUDA works, and the CPU threads in effect.",
	examples: []string{"mtgrpo version", "MTGRPO_THREADS=1 mtgrpo version"},
}

// version reports the libtorch behind the shim and the thread setting; it fails when the shim
// library was built from a different shim.h than this binary.
func version(args []string) error {
	fs := versionCommand.flags()
	threadSpec := threadsFlag(fs)
	if err := versionCommand.parse(fs, args); err != nil {
		return err
	}
	info, err := torch.Version()
	if err != nil {
		return err
	}
	fmt.Println("mtgrpo:", info)
	s, err := threads.Resolve(*threadSpec)
	if err != nil {
		return usageError{err}
	}
	return torch.Run(func() error {
		e, err := threads.Apply(s)
		if err != nil {
			return err
		}
		fmt.Println("mtgrpo:", e)
		return nil
	})
}
