// Command mtgrpo trains Qwen and Llama models with multi-turn reinforcement learning.
package main

import (
	"fmt"
	"os"
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
	default:
		return fmt.Errorf("unknown command %q (see mtgrpo help)", args[0])
	}
}

func usage() {
	fmt.Println(`usage: mtgrpo <command> [flags]

commands:
  help      this text`)
}
