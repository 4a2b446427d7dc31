package main

import (
	"fmt"
	"os"

	"github.com/mtgrpo/mtgrpo/cmd/internal/job"
	"github.com/mtgrpo/mtgrpo/cmd/internal/progress"
	"github.com/mtgrpo/mtgrpo/model"
)

var exportCommand = command{
	name: "export",
	args: "CHECKPOINT|RUN",
	summary: "Write a checkpoint's policy as a model directory that transformers loads (config.json,\n" +
		"generation_config.json, safetensors weights, tokenizer files with the chat template). The source is a\n" +
		"checkpoint directory or a run directory (its newest checkpoint); it is verified against its manifest first.\n" +
		"--out must be new or empty unless --force.",
	examples: []string{
		"mtgrpo export runs/demo --out models/demo-trained",
		"mtgrpo export runs/x/checkpoints/step-00000040 --out models/x-40 --dtype bfloat16",
	},
}

// exportCmd is `mtgrpo export`.
func exportCmd(args []string) error {
	fs := exportCommand.flags()
	out := fs.String("out", "", "output directory (required)")
	dtype := fs.String("dtype", "", "saved dtype: float32, bfloat16, float16 (default: the checkpoint's)")
	force := fs.Bool("force", false, "write into a non-empty --out, replacing the files export writes")
	threadSpec := threadsFlag(fs)
	if err := exportCommand.parse(fs, args); err != nil {
		return err
	}
	switch {
	case fs.NArg() != 1:
		return usagef("export: want one checkpoint or run directory, got %d arguments", fs.NArg())
	case *out == "":
		return usagef("export: --out is required")
	}
	switch *dtype {
	case "", "float32", "bfloat16", "float16":
	default:
		return usagef("export: --dtype %q: want float32, bfloat16 or float16", *dtype)
	}
	ck, err := evalCheckpoint(fs.Arg(0))
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	st, err := newStaging(*out, *force)
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	defer st.discard()
	bars := progress.New(os.Stderr)
	defer bars.Wait()
	err = withTorch(*threadSpec, func() error {
		m, err := model.Load(job.ModelOf(ck.Dir), model.Options{Device: "cpu", DType: "auto", Progress: &progress.Load{Bars: bars}})
		if err != nil {
			return err
		}
		defer m.Close()
		return m.Export(st.dir, model.ExportOptions{DType: *dtype, Progress: &progress.Load{Bars: bars}})
	})
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if err := st.commit(); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	fmt.Printf("mtgrpo export: checkpoint %s (step %d) -> %s\n", ck.Dir, ck.Step, *out)
	return nil
}
