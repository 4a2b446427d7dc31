// Command mtgrpo trains Qwen and Llama models with multi-turn reinforcement learning.
package main

import (
	"fmt"
	"os"

	"github.com/mtgrpo/mtgrpo/torch"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "mtgrpo:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		usage()
		return nil
	}
	switch args[0] {
	case "help", "-h", "--help":
		usage()
		return nil
	case "version":
		return version()
	case "init":
		return initModel(args[1:])
	case "generate":
		return generate(args[1:])
	case "demo":
		return demo(args[1:])
	case "data":
		return dataCmd(args[1:])
	default:
		return fmt.Errorf("unknown command %q (see mtgrpo help)", args[0])
	}
}

func usage() {
	fmt.Println(`usage: mtgrpo <command> [flags]

commands:
  version   libtorch version and CUDA availability
  demo      the embedded default job on CPU: a tiny model on a built-in task (rollout + rewards)
  init      write a randomly initialised model directory (--arch --preset --seed --out)
  data      gen: write generated tasks as verl-style parquet/JSONL (--task --n --seed --out);
            check FILE: validate a dataset
  generate  sample continuations of prompts (--model --prompt [--n --temperature ...])
  help      this text

Each command takes --help.`)
}

// version reports the libtorch behind the shim; it fails when the shim library was built from a
// different shim.h than this binary.
func version() error {
	info, err := torch.Version()
	if err != nil {
		return err
	}
	fmt.Println("mtgrpo:", info)
	return nil
}
