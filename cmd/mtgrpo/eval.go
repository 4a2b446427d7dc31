package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/mtgrpo/mtgrpo/cmd/internal/config"
	"github.com/mtgrpo/mtgrpo/cmd/internal/job"
	"github.com/mtgrpo/mtgrpo/cmd/internal/progress"
	rundir "github.com/mtgrpo/mtgrpo/cmd/internal/run"
	"github.com/mtgrpo/mtgrpo/grpo"
	"github.com/mtgrpo/mtgrpo/internal/bounded"
	"github.com/mtgrpo/mtgrpo/rollout"
)

var evalCommand = command{
	name: "eval",
	args: "[KEY=VALUE ...]",
	summary: "Evaluate a model or a checkpoint on a validation set: mean reward, strict and lenient accuracy,\n" +
		"turns, lengths and pass@k (with --samples k > 1). Metrics go to stdout; with --out (or for a\n" +
		"checkpoint of a run: RUN/eval/step-N) also eval.json and the trajectories as readable text.",
	examples: []string{
		"mtgrpo eval --checkpoint runs/demo                       # the run's newest checkpoint, its own settings",
		"mtgrpo eval --model runs/demo/model --env calc_mult --tasks 100",
		"mtgrpo eval --adapter runs/lora/adapter --env calc_mult          # a LoRA adapter on its base model",
		"mtgrpo eval --model Qwen/Qwen2.5-0.5B-Instruct --preset math --val-data test.parquet --samples 8 --greedy=false --temperature 0.7",
	},
}

var evalKeys = append(pickKeys("model", "env", "val-data", "seed", "device", "dtype"),
	flagKey{"tasks", "data.val_size", "generated validation tasks, when there is no --val-data"},
	flagKey{"samples", "eval.samples", "samples per task: 1 for accuracy; n > 1 adds pass@n"},
	flagKey{"greedy", "eval.greedy", "greedy decoding (true) or sampling at --temperature (false)"},
	flagKey{"temperature", "eval.temperature", "sampling temperature when not greedy"})

// pickKeys selects common flags by name.
func pickKeys(names ...string) []flagKey {
	var out []flagKey
	for _, n := range names {
		for _, k := range commonKeys {
			if k.flag == n {
				out = append(out, k)
			}
		}
	}
	return out
}

// evalCmd is `mtgrpo eval`.
func evalCmd(args []string) error {
	fs := evalCommand.flags()
	rf := newRunFlags(fs, evalKeys)
	ckFlag := fs.String("checkpoint", "", "a checkpoint directory, or a run directory (its newest checkpoint); its configuration is the base")
	adapterFlag := fs.String("adapter", "", adapterUsage)
	out := fs.String("out", "", "write eval.json and the trajectories (samples.txt, samples.jsonl) here")
	printOnly := fs.Bool("print-config", false, "print the resolved configuration as YAML and exit")
	threadSpec := threadsFlag(fs)
	if err := rf.parse(evalCommand, args); err != nil {
		return err
	}
	src, err := rf.sources("eval")
	if err != nil {
		return err
	}
	modelDir, adapter, step := "", *adapterFlag, -1
	if *ckFlag != "" && adapter != "" {
		return usagef("eval: give --checkpoint or --adapter, not both (a LoRA checkpoint holds its adapters)")
	}
	if *ckFlag != "" {
		ck, err := evalCheckpoint(*ckFlag)
		if err != nil {
			return fmt.Errorf("eval: %w", err)
		}
		if src.Base, err = job.SavedConfig(ck.Dir); err != nil {
			return fmt.Errorf("eval: %w", err)
		}
		if modelDir, adapter, err = job.PolicyOf(ck.Dir); err != nil {
			return fmt.Errorf("eval: %w", err)
		}
		step = ck.Step
		if *out == "" && ck.Run != "" {
			*out = filepath.Join(ck.Run, "eval", fmt.Sprintf("step-%08d", ck.Step))
		}
	} else if !fs.Lookup("model").Changed && os.Getenv("MODEL") == "" && adapter == "" {
		return usagef("eval: give --model DIR or --checkpoint PATH (or --adapter DIR)")
	}
	if adapter != "" && *ckFlag == "" {
		if pre, err := config.ResolveUnchecked(src); err == nil && pre.Model == "" { // the adapter's base
			name, err := withAdapter("eval", "", adapter)
			if err != nil {
				return err
			}
			src.Overrides = append(src.Overrides, config.Override{Key: "model", Value: name, Where: "--adapter (base_model_name_or_path)"})
		}
	}
	cfg, err := config.Resolve(src)
	if err != nil {
		return configError("eval", err)
	}
	warnConfig("eval", cfg)
	if modelDir == "" || fs.Lookup("model").Changed {
		modelDir = cfg.Model
	}
	if modelDir, err = withAdapter("eval", modelDir, adapter); err != nil {
		return err
	}
	if *printOnly {
		return printConfig(cfg)
	}
	if err := checkDevice("eval", cfg.Device, 1); err != nil {
		return err
	}
	if modelDir, err = resolveModel("eval", "model", modelDir); err != nil {
		return err
	}
	if err := checkDataFiles("eval", cfg, false); err != nil {
		return err
	}
	if *out != "" {
		if err := outsideCheckpoints(*out); err != nil {
			return usagef("eval: --out %v", err)
		}
	}
	return runEval(cfg, modelDir, adapter, *threadSpec, *out, max(step, 0))
}

// runEval evaluates modelDir (with adapter's LoRA adapters, "" for none), prints the metrics and,
// with out, writes them and the trajectories.
func runEval(cfg *config.Config, modelDir, adapter, threadSpec, out string, step int) error {
	bars := progress.New(os.Stderr)
	defer bars.Wait()
	var m grpo.Metrics
	var trajs []*rollout.Trajectory
	err := withTorch(threadSpec, func() error {
		var err error
		m, trajs, err = job.Eval(context.Background(), job.EvalOptions{Config: cfg, Model: modelDir, Adapter: adapter, Bars: bars})
		return err
	})
	if err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	printMetrics(m)
	if n, why := rollout.Failures(trajs); n > 0 {
		fmt.Fprintf(os.Stderr, "mtgrpo eval: %d of %d episodes failed (scored 0): %s\n", n, len(trajs), why)
	}
	if out != "" {
		if err := writeEval(out, m, trajs, step); err != nil {
			return fmt.Errorf("eval: %w", err)
		}
		fmt.Printf("mtgrpo eval: %d trajectories -> %s\n", len(trajs), out)
	}
	return nil
}

// evalTarget is the checkpoint eval reads: Run is its run directory ("" for a lone checkpoint).
type evalTarget struct {
	Dir, Run string
	Step     int
}

func evalCheckpoint(path string) (evalTarget, error) {
	if _, err := os.Stat(filepath.Join(path, rundir.ManifestName)); err == nil {
		dir, runDir, _, err := job.FindCheckpoint(path, "")
		if err != nil {
			return evalTarget{}, err
		}
		st, _ := readStep(dir)
		if _, err := os.Stat(filepath.Join(runDir, rundir.MetricsFile)); err != nil {
			runDir = ""
		}
		return evalTarget{Dir: dir, Run: runDir, Step: st}, nil
	}
	dir, _, ok, err := job.FindCheckpoint("latest", path)
	if err != nil {
		return evalTarget{}, err
	}
	if !ok {
		return evalTarget{}, fmt.Errorf("--checkpoint %s: no checkpoint there (want a checkpoint directory or a run directory that has one)", path)
	}
	st, _ := readStep(dir)
	return evalTarget{Dir: dir, Run: path, Step: st}, nil
}

// readStep reads a checkpoint's step from its manifest.
func readStep(dir string) (int, error) {
	b, err := bounded.ReadFile(filepath.Join(dir, rundir.ManifestName), bounded.Small)
	if err != nil {
		return 0, err
	}
	var m rundir.Manifest
	err = json.Unmarshal(b, &m)
	return m.Step, err
}

// printMetrics prints the val/ metrics sorted, one per line, at 5 significant digits as the log does.
func printMetrics(m grpo.Metrics) {
	names := m.Names() // sorted
	w := 0
	for _, n := range names {
		w = max(w, len(n))
	}
	for _, n := range names {
		fmt.Printf("%-*s %.5g\n", w, n, m[n])
	}
}

// writeEval writes eval.json and every trajectory as samples.txt / samples.jsonl.
func writeEval(dir string, m grpo.Metrics, trajs []*rollout.Trajectory, step int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "eval.json"), b, 0o644); err != nil {
		return err
	}
	var text, lines strings.Builder
	for _, tr := range trajs {
		s := job.SampleOf(step, tr)
		text.WriteString(s.Text())
		l, err := json.Marshal(s)
		if err != nil {
			return err
		}
		lines.Write(l)
		lines.WriteByte('\n')
	}
	if err := os.WriteFile(filepath.Join(dir, "samples.txt"), []byte(text.String()), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "samples.jsonl"), []byte(lines.String()), 0o644)
}
