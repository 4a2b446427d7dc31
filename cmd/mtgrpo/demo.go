package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/mtgrpo/mtgrpo/env"
	"github.com/mtgrpo/mtgrpo/model"
	"github.com/mtgrpo/mtgrpo/rollout"
	"github.com/mtgrpo/mtgrpo/tokenizer"
	"github.com/mtgrpo/mtgrpo/torch"
)

// demo is `mtgrpo demo`: the embedded default job on CPU. It writes the tiny default model (Qwen3
// layout, the project's byte-level tokenizer, fixed seed) and runs GRPO groups of multi-turn episodes
// of a built-in task through the rollout engine, then reports rewards and where the time went.
//
// The GRPO trainer is not part of this build yet: the demo runs the rollout and reward half of a
// training step and says so in its output.
func demo(args []string) error {
	fs := pflag.NewFlagSet("demo", pflag.ContinueOnError)
	task := fs.String("task", "calc_mult", "built-in environment ("+strings.Join(env.Names(), ", ")+")")
	tasks := fs.Int("tasks", 4, "tasks per batch")
	group := fs.Int("group", 4, "samples per task (the GRPO group)")
	maxNew := fs.Int("max-new-tokens", 48, "tokens per turn at most")
	keep := fs.Int("keep-last", 2, "condensed context: keep the task and the last N steps")
	seed := fs.Uint64("seed", 0, "seed for the model, the tasks and sampling")
	out := fs.String("out", "runs/demo", "output directory (the model is written to OUT/model)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *tasks < 1 || *group < 1 || *maxNew < 1 {
		return fmt.Errorf("demo: --tasks, --group and --max-new-tokens must be >= 1")
	}
	dir := filepath.Join(*out, "model")
	if err := initModel([]string{"--arch", "qwen3", "--preset", "tiny", "--seed", fmt.Sprint(*seed), "--out", dir}); err != nil {
		return err
	}
	tok, err := tokenizer.Load(dir)
	if err != nil {
		return err
	}
	environment, err := env.Open(*task, env.Config{})
	if err != nil {
		return err
	}
	rows, err := environment.Generate(*tasks, int64(*seed))
	if err != nil {
		return err
	}
	var eps []rollout.Episode
	for i, row := range rows {
		for j := 0; j < *group; j++ {
			eps = append(eps, rollout.Episode{Env: environment.New(), Task: env.TaskFromRow(row, i), Group: i})
		}
	}
	fmt.Printf("mtgrpo demo: %s, %d tasks x %d samples, condensed context = task + last %d steps\n",
		*task, *tasks, *group, *keep)
	fmt.Println("note: the GRPO trainer is not in this build yet; this runs the rollout and reward half of a training step.")
	return torch.Run(func() error {
		m, err := model.Load(dir, model.Options{Device: "cpu"})
		if err != nil {
			return err
		}
		defer m.Close()
		b, err := rollout.NewModelBackend(m, len(eps), 2048, tok.EOSIDs()...)
		if err != nil {
			return err
		}
		defer b.Close()
		e, err := rollout.NewEngine(b, tok, rollout.Config{Seed: *seed})
		if err != nil {
			return err
		}
		d, err := rollout.NewDriver(e, tok, rollout.DriverConfig{
			Sampling:  rollout.Sampling{Temperature: 1, MaxNewTokens: *maxNew},
			Condenser: rollout.LastN{N: *keep},
			Seed:      *seed,
		})
		if err != nil {
			return err
		}
		t0 := time.Now()
		trajs, prof, err := d.Run(context.Background(), eps)
		if err != nil {
			return err
		}
		report(trajs, time.Since(t0))
		fmt.Print(prof.Report())
		return nil
	})
}

// report prints one line per group and the batch means.
func report(trajs []*rollout.Trajectory, wall time.Duration) {
	metrics := map[string]float64{}
	ends := map[string]int{}
	var reward, turns, outTokens float64
	groups := map[int][]float64{}
	for _, tr := range trajs {
		if tr.Err != nil {
			fmt.Fprintf(os.Stderr, "episode %d: %v\n", tr.Index, tr.Err)
		}
		ends[tr.End]++
		reward += tr.Reward
		turns += float64(tr.ActionTurns)
		outTokens += float64(tr.OutputTokens)
		groups[tr.Group] = append(groups[tr.Group], tr.Reward)
		for k, v := range tr.Score.Metrics {
			metrics[k] += v
		}
	}
	n := float64(len(trajs))
	for g := 0; g < len(groups); g++ {
		fmt.Printf("group %d rewards %v\n", g, groups[g])
	}
	fmt.Printf("episodes %d  mean reward %.4f  mean turns %.2f  output tokens %.0f  ends %v  wall %v\n",
		len(trajs), reward/n, turns/n, outTokens, ends, wall.Round(time.Millisecond))
	keys := make([]string, 0, len(metrics))
	for k := range metrics {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Printf("  %-32s %.4f\n", k, metrics[k]/n)
	}
}
