package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mtgrpo/mtgrpo/cmd/internal/config"
	"github.com/mtgrpo/mtgrpo/env"
	"github.com/mtgrpo/mtgrpo/env/data"
)

var (
	dataGenCommand = command{
		name:    "data gen",
		summary: "Write generated task rows in verl's layout (parquet or JSONL by the file's extension).",
		examples: []string{"mtgrpo data gen --task countdown --n 1000 --out data/countdown.parquet",
			"mtgrpo data gen --task gsm8k --set env.max_number=20 --n 2048 --out data/gsm8k-small.jsonl"},
	}
	dataCheckCommand = command{
		name:     "data check",
		args:     "FILE",
		summary:  "Validate a dataset file (parquet or JSONL): every row must be a valid task.",
		examples: []string{"mtgrpo data check data/countdown.parquet", "mtgrpo data check --skip-invalid data/mixed.jsonl"},
	}
)

// dataCmd is `mtgrpo data gen|check`.
func dataCmd(args []string) error {
	if len(args) == 0 {
		return usagef("data: want a subcommand: gen or check")
	}
	switch args[0] {
	case "gen":
		return dataGen(args[1:])
	case "check":
		return dataCheck(args[1:])
	case "-h", "--help", "help":
		dataGenCommand.flags().Usage()
		fmt.Println()
		dataCheckCommand.flags().Usage()
		return nil
	default:
		return usagef("data: unknown subcommand %q (gen, check)", args[0])
	}
}

func dataGen(args []string) error {
	fs := dataGenCommand.flags()
	task := fs.String("task", "", "task generator ("+strings.Join(env.GeneratorNames(), ", ")+"; the MT-GRPO scripts' names "+
		"such as gsm8k_code name theirs; required)")
	n := fs.Int("n", 1000, fmt.Sprintf("rows to write (1 to %d), written as they are made", env.MaxGenerate))
	seed := fs.Int64("seed", 0, "generator seed")
	out := fs.String("out", "", "output file: .parquet or .jsonl (required)")
	sets := fs.StringArray("set", nil, "env.KEY=VALUE shaping the rows as in a run (repeatable): "+shapingKeys())
	if err := dataGenCommand.parse(fs, args); err != nil {
		return err
	}
	if *task == "" || *out == "" {
		return usagef("data gen: --task and --out are required")
	}
	if name, ok := config.MTGRPOTasks[*task]; ok && !slices.Contains(env.GeneratorNames(), *task) {
		*task = name // the MT-GRPO scripts' task name of the environment's generator
	}
	if !slices.Contains(env.GeneratorNames(), *task) {
		return usagef("data gen: --task %q: unknown generator (%s)", *task, strings.Join(env.GeneratorNames(), ", "))
	}
	if err := atLeast("data gen", intFlag{"n", *n, 1}); err != nil {
		return err
	}
	if *n > env.MaxGenerate {
		return usagef("data gen: --n %d: at most %d rows (write larger sets as several files with different --seed)", *n, env.MaxGenerate)
	}
	var overrides []config.Override
	for _, a := range *sets {
		o, err := config.ParseSet(a, "--set")
		if err != nil {
			return usagef("data gen: %v", err)
		}
		overrides = append(overrides, o)
	}
	cfg, err := config.GeneratorEnv(*task, overrides)
	if err != nil {
		return usagef("data gen: %v", err)
	}
	if err := data.CanWrite(*out); err != nil {
		return usagef("data gen: --out %v", err)
	}
	rows, err := env.GenerateSeq(*task, cfg, *n, *seed)
	if err != nil {
		return fmt.Errorf("data gen: %w", err)
	}
	if err := data.WriteSeq(*out, rows); err != nil { // rows made as they are written; the old file kept on failure
		return fmt.Errorf("data gen: %w (%s is left as it was)", err, *out)
	}
	fmt.Printf("mtgrpo data gen: %d %s rows (seed %d) -> %s\n", *n, *task, *seed, *out)
	return nil
}

// shapingKeys names the keys data gen --set takes and the tasks each shapes.
func shapingKeys() string {
	keys, shapes := env.ShapingKeys()
	var out []string
	for _, k := range keys {
		out = append(out, fmt.Sprintf("env.%s (%s)", k, strings.Join(shapes[k], ", ")))
	}
	return strings.Join(out, ", ")
}

func dataCheck(args []string) error {
	fs := dataCheckCommand.flags()
	skip := fs.Bool("skip-invalid", false, "count malformed rows instead of stopping at the first")
	if err := dataCheckCommand.parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("data check: want one file, got %d arguments", fs.NArg())
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
