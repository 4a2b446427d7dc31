// Package report turns a run directory into plots and one self-contained HTML page: reward,
// accuracy, KL, entropy, lengths, turns, tool calls and throughput over steps, the per-phase time
// split as stacked areas, the final values of every metric, the resolved config, and a browsable
// sample of trajectories. Plots are drawn with gonum/plot: inline SVG in the page (no external
// files, scripts or fonts are fetched), PNG files for `mtgrpo plot`.
//
// It reads only what package run writes (metrics.jsonl, config.yaml, samples/*.jsonl), so it works
// on a finished run, a running one, or one copied from another machine.
package report
