package main

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/mtgrpo/mtgrpo/env"
	"github.com/mtgrpo/mtgrpo/env/data"
)

// dataCmd is `mtgrpo data gen|check`: write generated task rows in verl's layout (parquet or JSONL
// by the file's extension), or validate a dataset file.
func dataCmd(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("data: want a subcommand: gen or check")
	}
	switch args[0] {
	case "gen":
		return dataGen(args[1:])
	case "check":
		return dataCheck(args[1:])
	default:
		return fmt.Errorf("data: unknown subcommand %q (gen, check)", args[0])
	}
}

func dataGen(args []string) error {
	fs := pflag.NewFlagSet("data gen", pflag.ContinueOnError)
	task := fs.String("task", "", "task generator ("+strings.Join(env.GeneratorNames(), ", ")+"; required)")
	n := fs.Int("n", 1000, "rows to write")
	seed := fs.Int64("seed", 0, "generator seed")
	out := fs.String("out", "", "output file: .parquet or .jsonl (required)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *task == "" || *out == "" {
		return fmt.Errorf("data gen: --task and --out are required")
	}
	rows, err := env.Generate(*task, *n, *seed)
	if err != nil {
		return fmt.Errorf("data gen: %w", err)
	}
	if err := data.Write(*out, rows); err != nil {
		return fmt.Errorf("data gen: %w", err)
	}
	fmt.Printf("mtgrpo data gen: %d %s rows (seed %d) -> %s\n", len(rows), *task, *seed, *out)
	return nil
}

func dataCheck(args []string) error {
	fs := pflag.NewFlagSet("data check", pflag.ContinueOnError)
	skip := fs.Bool("skip-invalid", false, "count malformed rows instead of stopping at the first")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("data check: want one file")
	}
	rows, st, err := data.Read(fs.Arg(0), data.Options{SkipInvalid: *skip})
	if err != nil {
		return fmt.Errorf("data check: %w", err)
	}
	fmt.Printf("mtgrpo data check: %s: %d rows ok, %d skipped\n", fs.Arg(0), len(rows), st.Skipped)
	for _, e := range st.Errors {
		fmt.Printf("  skipped: %v\n", e)
	}
	return nil
}
