package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/mtgrpo/mtgrpo/cmd/internal/progress"
	"github.com/mtgrpo/mtgrpo/cmd/internal/setup"
	"github.com/mtgrpo/mtgrpo/env"
	"github.com/mtgrpo/mtgrpo/rollout"
)

var demoCommand = command{
	name:     "demo",
	summary:  "The embedded default job on CPU: a tiny model (Qwen3 layout, byte-level tokenizer) plays GRPO\ngroups of multi-turn episodes of a built-in task; rewards and the time split are printed.",
	examples: []string{"mtgrpo demo", "mtgrpo demo --task countdown --tasks 8 --group 8 --out runs/demo-countdown"},
}

// demo is `mtgrpo demo`: the embedded default job on CPU. It writes the tiny default model (Qwen3
// layout, the project's byte-level tokenizer, fixed seed) and runs GRPO groups of multi-turn episodes
// of a built-in task through the rollout engine, then reports rewards and where the time went.
//
// The GRPO trainer is not part of this build yet: the demo runs the rollout and reward half of a
// training step and says so in its output.
func demo(args []string) error {
	fs := demoCommand.flags()
	task := fs.String("task", "calc_mult", "built-in environment ("+strings.Join(env.Names(), ", ")+")")
	tasks := fs.Int("tasks", 4, "tasks per batch")
	group := fs.Int("group", 4, "samples per task (the GRPO group)")
	maxNew := fs.Int("max-new-tokens", 48, "tokens per turn at most")
	keep := fs.Int("keep-last", 2, "condensed context: keep the task and the last N steps")
	seed := fs.Uint64("seed", 0, "seed for the model, the tasks and sampling")
	out := fs.String("out", "runs/demo", "output directory (the model is written to OUT/model)")
	threadSpec := threadsFlag(fs)
	if err := demoCommand.parse(fs, args); err != nil {
		return err
	}
	if err := atLeast("demo", intFlag{"tasks", *tasks, 1}, intFlag{"group", *group, 1},
		intFlag{"max-new-tokens", *maxNew, 1}, intFlag{"keep-last", *keep, 0}); err != nil {
		return err
	}
	if !slices.Contains(env.Names(), *task) {
		return usagef("demo: --task %q: unknown environment (%s)", *task, strings.Join(env.Names(), ", "))
	}
	dir := filepath.Join(*out, "model")
	// The demo owns OUT/model: a second run writes over the first one's model.
	initArgs := []string{"--arch", "qwen3", "--preset", "tiny", "--seed", fmt.Sprint(*seed), "--out", dir, "--force"}
	if *threadSpec != "" {
		initArgs = append(initArgs, "--threads", *threadSpec)
	}
	if err := initModel(initArgs); err != nil {
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
	bars := progress.New(os.Stderr)
	defer bars.Wait()
	return withTorch(*threadSpec, func() error {
		p, err := setup.Open(setup.Options{Dir: dir, Device: "cpu", Slots: len(eps), MaxLen: 2048, Seed: *seed})
		if err != nil {
			return err
		}
		defer p.Close()
		bar := bars.Bar("rollout", int64(len(eps)), progress.Count)
		d, err := rollout.NewDriver(progress.Generations(p.Engine, bar), p.Tok, rollout.DriverConfig{
			Sampling:  rollout.Sampling{Temperature: 1, MaxNewTokens: *maxNew},
			Condenser: rollout.LastN{N: *keep},
			Seed:      *seed,
		})
		if err != nil {
			bar.Done()
			return err
		}
		t0 := time.Now()
		trajs, prof, err := d.Run(context.Background(), eps)
		bar.Done()
		if err != nil {
			return err
		}
		printBatch(trajs, time.Since(t0))
		if len(trajs) > 0 {
			fmt.Print("\nthe first episode:\n", sampleOf(0, trajs[0]).Text())
		}
		fmt.Print(prof.Report())
		return nil
	})
}

// printBatch prints one line per group and the batch means.
func printBatch(trajs []*rollout.Trajectory, wall time.Duration) {
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
