package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/mtgrpo/mtgrpo/cmd/internal/job"
	"github.com/mtgrpo/mtgrpo/cmd/internal/progress"
	"github.com/mtgrpo/mtgrpo/cmd/internal/setup"
	"github.com/mtgrpo/mtgrpo/model"
)

var exportCommand = command{
	name: "export",
	args: "CHECKPOINT|RUN|ADAPTER",
	summary: "Write a checkpoint's policy as a model directory that transformers loads (config.json,\n" +
		"generation_config.json, safetensors weights, tokenizer files with the chat template). The source is a\n" +
		"checkpoint directory or a run directory (its newest checkpoint); it is verified against its manifest first.\n" +
		"A LoRA run's checkpoint gives its adapters in PEFT's layout (adapter_config.json, adapter_model.safetensors),\n" +
		"or with --merge the base model with the adapters folded in; an adapter directory (PEFT's or a run's\n" +
		"adapter/) is merged into its base (or --model). --out must be new or empty unless --force.",
	examples: []string{
		"mtgrpo export runs/demo --out models/demo-trained",
		"mtgrpo export runs/x/checkpoints/step-00000040 --out models/x-40 --dtype bfloat16",
		"mtgrpo export runs/lora --out adapters/lora                  # PEFT adapter directory",
		"mtgrpo export runs/lora --merge --out models/lora-merged --dtype bfloat16",
		"mtgrpo export runs/lora/adapter --merge --model Qwen/Qwen2.5-0.5B --out models/merged",
	},
}

// exportCmd is `mtgrpo export`.
func exportCmd(args []string) error {
	fs := exportCommand.flags()
	out := fs.String("out", "", "output directory (required)")
	dtype := fs.String("dtype", "", "saved dtype: float32, bfloat16, float16 (default: the checkpoint's)")
	force := fs.Bool("force", false, "write into a non-empty --out, replacing the files export writes")
	merge := fs.Bool("merge", false, "LoRA: write the base model with the adapters merged in (W + scale·B·A) instead of the adapters")
	baseFlag := fs.String("model", "", "LoRA: the base model the adapters apply to (default: the adapters' base_model_name_or_path)")
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
	src, err := exportSource(fs.Arg(0), *baseFlag, *merge)
	if err != nil {
		return err
	}
	if src.adapter != "" && !*merge && *dtype != "" {
		return usagef("export: --dtype %s: a LoRA run's adapters are written as trained (float32); --merge writes a model in a dtype", *dtype)
	}
	st, err := newStaging(*out, *force)
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	defer st.discard()
	bars := progress.New(os.Stderr)
	defer bars.Wait()
	err = withTorch(*threadSpec, func() error {
		if src.adapter != "" && !*merge { // the adapters as they are
			return copyAdapter(src.adapter, st.dir)
		}
		m, err := model.Load(src.model, model.Options{Device: "cpu", DType: "auto", Progress: &progress.Load{Bars: bars}})
		if err != nil {
			return err
		}
		defer m.Close()
		if src.adapter != "" {
			if err := setup.Adapt(m, setup.Options{Dir: src.model, Adapter: src.adapter}); err != nil {
				return err
			}
			if err := m.MergeAdapters(); err != nil {
				return err
			}
		}
		return m.Export(st.dir, model.ExportOptions{DType: *dtype, Progress: &progress.Load{Bars: bars}})
	})
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if err := st.commit(); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	fmt.Printf("mtgrpo export: %s -> %s\n", src.what, *out)
	return nil
}

// exportFrom is what export reads: a model directory, and the LoRA adapters to merge into it or
// to copy ("" for none).
type exportFrom struct {
	model, adapter, what string
}

// exportSource finds the source of `mtgrpo export ARG`: a checkpoint (of a run) or an adapter
// directory, with base as the adapters' base model when given.
func exportSource(arg, base string, merge bool) (exportFrom, error) {
	if _, err := os.Stat(filepath.Join(arg, model.AdapterConfigFile)); err == nil {
		if !merge {
			return exportFrom{}, usagef("export: %s is an adapter directory: --merge writes it merged into its base model", arg)
		}
		dir, err := mergeBase(arg, base)
		return exportFrom{model: dir, adapter: arg, what: "adapter " + arg + " merged into " + dir}, err
	}
	ck, err := evalCheckpoint(arg)
	if err != nil {
		return exportFrom{}, fmt.Errorf("export: %w", err)
	}
	what := fmt.Sprintf("checkpoint %s (step %d)", ck.Dir, ck.Step)
	dir, adapter, err := job.PolicyOf(ck.Dir)
	switch {
	case err != nil:
		return exportFrom{}, fmt.Errorf("export: %w", err)
	case adapter == "" && (merge || base != ""):
		return exportFrom{}, usagef("export: checkpoint %s holds a whole model: --merge and --model are for a LoRA run's adapters", ck.Dir)
	case adapter == "" || !merge:
		return exportFrom{model: dir, adapter: adapter, what: what}, nil
	}
	if dir, err = mergeBase(adapter, base); err != nil {
		return exportFrom{}, err
	}
	return exportFrom{model: dir, adapter: adapter, what: what + " merged into " + dir}, nil
}

// mergeBase resolves the base model an adapter directory is merged into: base, else the
// adapters' own.
func mergeBase(adapter, base string) (string, error) {
	name, err := withAdapter("export", base, adapter)
	if err != nil {
		return "", err
	}
	return resolveModel("export", "the base model", name)
}

// copyAdapter writes an adapter directory's two files into dst.
func copyAdapter(src, dst string) error {
	for _, name := range []string{model.AdapterConfigFile, model.AdapterWeightsFile} {
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dst, name), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}
