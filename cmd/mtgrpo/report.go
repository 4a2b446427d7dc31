package main

import (
	"fmt"

	"github.com/mtgrpo/mtgrpo/cmd/internal/report"
)

var (
	reportCommand = command{
		name: "report",
		args: "RUN",
		summary: "Write RUN/report.html: one self-contained page with the RL phase's charts (reward, accuracy, KL, entropy,\n" +
			"losses, lengths, turns, tool calls, throughput, time per phase), the SFT warm-up's on their own axis,\n" +
			"every metric's first/last/min/max, the config and a browsable sample of trajectories. Works on a\n" +
			"finished or a running run.",
		examples: []string{"mtgrpo report runs/demo", "mtgrpo report runs/gsm8k && xdg-open runs/gsm8k/report.html"},
	}
	plotCommand = command{
		name:     "plot",
		args:     "RUN",
		summary:  "Write the report's charts as PNG files into RUN/plots/.",
		examples: []string{"mtgrpo plot runs/demo"},
	}
)

// reportCmd is `mtgrpo report RUN`.
func reportCmd(args []string) error {
	r, err := loadRunArg(reportCommand, args)
	if err != nil {
		return err
	}
	path, err := report.WritePage(r)
	if err != nil {
		return err
	}
	fmt.Printf("mtgrpo report: %d steps, %d trajectories -> %s\n", len(r.Records), len(r.Samples), path)
	return nil
}

// plotCmd is `mtgrpo plot RUN`.
func plotCmd(args []string) error {
	r, err := loadRunArg(plotCommand, args)
	if err != nil {
		return err
	}
	paths, err := report.WritePNGs(r)
	if err != nil {
		return err
	}
	for _, p := range paths {
		fmt.Println(p)
	}
	return nil
}

// loadRunArg parses a command that takes one run directory and loads it.
func loadRunArg(c command, args []string) (*report.Run, error) {
	fs := c.flags()
	if err := c.parse(fs, args); err != nil {
		return nil, err
	}
	if fs.NArg() != 1 {
		return nil, usagef("%s: want one run directory, got %d arguments", c.name, fs.NArg())
	}
	return report.Load(fs.Arg(0))
}
