package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/mtgrpo/mtgrpo/cmd/internal/config"
	"github.com/mtgrpo/mtgrpo/cmd/internal/job"
	"github.com/mtgrpo/mtgrpo/configs"
	"github.com/mtgrpo/mtgrpo/internal/staged"
)

var demoCommand = command{
	name: "demo",
	args: "[KEY=VALUE ...]",
	summary: "The embedded default job on CPU: a random tiny model (Qwen3 layout, byte-level tokenizer) learns the\n" +
		"calc_mult tool task: SFT warm-up on generated demonstrations, then multi-turn GRPO with condensed contexts,\n" +
		"evaluation on held-out tasks, a report page and an exported model, and a summary of reward and accuracy\n" +
		"before and after. It is `mtgrpo train` with configs/demo.yaml (embedded); every train flag works here.\n" +
		"The demo owns its run directory: a previous demo run there is replaced.",
	examples: []string{
		"mtgrpo demo",
		"mtgrpo demo --short                 # the CI variant: the same pipeline in a few minutes",
		"mtgrpo demo --set sft.steps=100 --lr 1e-4 --run-dir runs/demo2",
	},
}

// demoMarker marks a run directory the demo wrote, which the next demo may replace.
const demoMarker = ".mtgrpo-demo"

// demo is `mtgrpo demo`.
func demo(args []string) error {
	fs := demoCommand.flags()
	rf := newRunFlags(fs, commonKeys)
	short := fs.Bool("short", os.Getenv("MTGRPO_DEMO_SHORT") == "1", "the short variant for CI (default: $MTGRPO_DEMO_SHORT=1)")
	resume := fs.String("resume", "", "continue an interrupted demo from its newest checkpoint")
	fs.Lookup("resume").NoOptDefVal = "latest"
	printOnly := fs.Bool("print-config", false, "print the resolved configuration as YAML and exit")
	threadSpec := threadsFlag(fs)
	if err := rf.parse(demoCommand, args); err != nil {
		return err
	}
	src, err := rf.sources("demo")
	if err != nil {
		return err
	}
	src.Docs, err = demoDocs(*short)
	if err != nil {
		return err
	}
	cfg, ck, err := resolveRun(src, *resume)
	if err != nil {
		return err
	}
	if *printOnly {
		warnConfig("demo", cfg) // a run logs them with its configuration
		return printConfig(cfg)
	}
	m, err := preflight("demo", cfg, 1)
	if err != nil {
		return err
	}
	if *resume == "" {
		if err := claimDemoDir(cfg.RunDir); err != nil {
			return fmt.Errorf("demo: %w", err)
		}
	}
	return runTraining(job.Options{Config: cfg, Checkpoint: ck, Resume: *resume != "", ModelDir: m.policy, CriticDir: m.critic}, *threadSpec)
}

// demoDocs are the embedded configuration and, for --short, its overlay.
func demoDocs(short bool) ([]config.Doc, error) {
	names := []string{configs.Demo}
	if short {
		names = append(names, configs.DemoShort)
	}
	var docs []config.Doc
	for _, n := range names {
		b, err := configs.FS.ReadFile(n)
		if err != nil {
			return nil, err
		}
		docs = append(docs, config.Doc{Name: "configs/" + n + " (embedded)", Data: b})
	}
	return docs, nil
}

// claimDemoDir clears a run directory left by an earlier demo and marks it as the demo's. A
// directory holding anything else is refused: the demo deletes only what it wrote.
func claimDemoDir(dir string) error {
	if err := outsideCheckpoints(dir); err != nil {
		return err
	}
	ents, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return err
	case len(ents) == 0:
	default:
		if _, err := os.Stat(filepath.Join(dir, demoMarker)); err != nil {
			return fmt.Errorf("%s holds files the demo did not write; choose another --run-dir or remove it", dir)
		}
		if err := staged.Remove(dir); err != nil { // a crash midway leaves a temporary, not half a run
			return err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("cannot create run directory: %w", err)
	}
	return os.WriteFile(filepath.Join(dir, demoMarker), nil, 0o644)
}
