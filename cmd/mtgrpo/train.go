package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/mtgrpo/mtgrpo/cmd/internal/config"
	"github.com/mtgrpo/mtgrpo/cmd/internal/job"
	"github.com/mtgrpo/mtgrpo/cmd/internal/launch"
	"github.com/mtgrpo/mtgrpo/cmd/internal/progress"
)

var trainCommand = command{
	name: "train",
	args: "[KEY=VALUE ...]",
	summary: "Train a policy with multi-turn RL: an optional SFT warm-up on the environment's demonstrations, then\n" +
		"GRPO / multi-turn GRPO / MT-GRPO / PPO steps, with evaluation, checkpoints, an exported model and a report.\n" +
		"The configuration resolves in order: defaults, --preset, --config files, environment variables\n" +
		"(MODEL, RUN_DIR, DATA, BATCH_SIZE, EPOCHS, LR, SEED, GPUS, ...), then flags and KEY=VALUE settings.\n" +
		"SIGINT or SIGTERM stops after the current step with a checkpoint (a second one aborts at once).",
	examples: []string{
		"mtgrpo train --model models/qwen --config configs/multiturn_grpo_trainer.yaml --run-dir runs/x",
		"mtgrpo train --model Qwen/Qwen2.5-0.5B-Instruct --preset math --data train.parquet --val-data test.parquet --lr 1e-6",
		"mtgrpo train --config configs/mt_grpo.yaml algorithm.adv_estimator=mt_grpo rollout.temperature=0.7",
		"mtgrpo train --model models/qwen data.train_files=\"['train.parquet']\" actor_rollout_ref.rollout.n=8   # verl's keys",
		"mtgrpo train --model models/qwen --config-path conf --config-name ppo_multiturn   # verl's Hydra files",
		"mtgrpo train --resume --run-dir runs/x             # continue from the newest checkpoint",
		"mtgrpo train --resume=runs/x/checkpoints/step-00000040 train.steps=80",
		"mtgrpo train --config configs/ppo_multi_turn.yaml --model models/qwen --print-config",
		"mtgrpo train --nproc 2 --config configs/multiturn_grpo_trainer.yaml   # 2 data-parallel processes",
		"torchrun --no-python --nproc-per-node 8 mtgrpo train --device cuda --config ...",
	},
}

// train is `mtgrpo train`.
func train(args []string) error {
	fs := trainCommand.flags()
	rf := newRunFlags(fs, commonKeys)
	resume := fs.String("resume", "", "continue the run in --run-dir from its newest checkpoint (--resume), or from the\ncheckpoint directory given (--resume=PATH); without a checkpoint the run starts over")
	fs.Lookup("resume").NoOptDefVal = "latest"
	printOnly := fs.Bool("print-config", false, "print the resolved configuration as YAML and exit")
	nproc := fs.Int("nproc", defaultNproc(), "data-parallel processes on this host, as torchrun --nproc-per-node N starts\n(default: $N_GPUS, or the length of the $GPUS list, or 1; docs/distributed.md)")
	threadSpec := threadsFlag(fs)
	if err := rf.parse(trainCommand, args); err != nil {
		return err
	}
	if err := atLeast("train", intFlag{"nproc", *nproc, 1}); err != nil {
		return err
	}
	if os.Getenv("WORLD_SIZE") == "" && launch.IsSageMaker(launch.Environ(os.Environ())) {
		return sageMakerTrain(args, os.Stdout, os.Stderr)
	}
	src, err := rf.sources("train")
	if err != nil {
		return err
	}
	cfg, ck, err := resolveRun(src, *resume)
	if err != nil {
		return err
	}
	if *printOnly {
		warnConfig("train", cfg) // a run logs them with its configuration
		return printConfig(cfg)
	}
	if err := outsideCheckpoints(cfg.RunDir); err != nil {
		return usagef("train: run_dir %v", err)
	}
	if *nproc > 1 && os.Getenv("WORLD_SIZE") == "" {
		// The launcher checks once, for all its ranks, and downloads a Hub model before they start.
		if err := cfg.CheckWorld(*nproc, nprocSource(fs.Lookup("nproc").Changed, *nproc)); err != nil {
			return configError("train", err)
		}
		m, err := preflight("train", cfg, *nproc)
		if err != nil {
			return err
		}
		if err := checkMemory("train", cfg, m.policy, *nproc); err != nil {
			return err
		}
		return spawnRanks(*nproc, append([]string{"train"}, withoutFlag(args, "nproc")...), os.Stdout, os.Stderr)
	}
	l, err := launched(cfg)
	if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	from := "one process"
	if l.Distributed() {
		from = fmt.Sprintf("$WORLD_SIZE=%d from %s", l.Dist.WorldSize, l.Source)
	}
	if err := cfg.CheckWorld(max(1, l.Dist.WorldSize), from); err != nil {
		return configError("train", err)
	}
	m, err := preflight("train", cfg, 1)
	if err != nil {
		return err
	}
	if err := checkMemory("train", cfg, m.policy, max(1, l.Dist.WorldSize)); err != nil {
		return err
	}
	if err := job.CheckResume(ck, cfg, m.policy, m.critic); err != nil {
		return usagef("train: --resume: %v", err)
	}
	return runTraining(job.Options{Config: cfg, Checkpoint: ck, Resume: *resume != "", ModelDir: m.policy, CriticDir: m.critic}, *threadSpec)
}

// resolveRun resolves the configuration of a new or resumed run. A resumed run starts from its
// checkpoint's configuration, with what is given now applied on top; its run directory is
// where the checkpoint is.
func resolveRun(src config.Sources, resume string) (*config.Config, string, error) {
	if resume == "" {
		c, err := config.Resolve(src)
		if err != nil {
			return nil, "", configError("train", err)
		}
		return c, "", nil
	}
	pre, err := config.ResolveUnchecked(src)
	if err != nil {
		return nil, "", configError("train", err)
	}
	ck, runDir, ok, err := job.FindCheckpoint(resume, pre.RunDir)
	if err != nil {
		return nil, "", fmt.Errorf("train: %w", err)
	}
	if ok {
		if src.Base, err = job.SavedConfig(ck); err != nil {
			return nil, "", fmt.Errorf("train: %w", err)
		}
		src.Overrides = append([]config.Override{{Key: "run_dir", Value: runDir, Where: "--resume"}}, src.Overrides...)
	} else {
		fmt.Fprintf(os.Stderr, "mtgrpo train: %s has no checkpoint yet: starting from the beginning\n", runDir)
	}
	c, err := config.Resolve(src)
	if err != nil {
		return nil, "", configError("train", err)
	}
	return c, ck, nil
}

// runTraining runs the job on the torch thread with signals turned into a graceful stop.
func runTraining(o job.Options, threadSpec string) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := make(chan os.Signal, 1)
	done := make(chan struct{})
	defer close(done)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		select {
		case s := <-sigs:
			fmt.Fprintf(os.Stderr, "\nmtgrpo: %v: stopping after this step with a checkpoint (again to abort now)\n", s)
			stop <- s
		case <-done:
			return
		}
		select {
		case <-sigs:
			fmt.Fprintln(os.Stderr, "mtgrpo: aborting: the step in progress is lost, the last checkpoint stays")
			cancel()
		case <-done:
		}
	}()
	l, err := launched(o.Config)
	if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	if err := checkRank("train", l); err != nil {
		return err
	}
	o.Console, o.Out, o.Stop = os.Stderr, os.Stdout, stop
	if l.Main() {
		bars := progress.New(os.Stderr)
		defer bars.Wait()
		o.Bars = bars
	} else {
		o.Out = io.Discard // rank 0 prints the configuration and the summary
	}
	err = withTorch(threadSpec, func() error {
		d, leave, err := joinRun(l, o.Config)
		if err != nil {
			return err
		}
		o.Dist = d
		if err := job.Train(ctx, o); err != nil {
			return err // the others stop at their next collective, or by the watchdog
		}
		leave()
		return nil
	})
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("train: aborted: %w", err)
	}
	if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	return nil
}
