// Package report turns a run directory into plots and one self-contained HTML page: the RL
// phase's charts (reward, accuracy, KL when it is on, entropy, policy loss, gradient norm,
// lengths, turns, tool calls, turn rewards, throughput, the per-phase time split as stacked
// areas) on one x-axis from the end of the warm-up, the SFT warm-up's charts (loss, gradient norm,
// evaluations) on its own, the final values of every metric, the resolved config, and a browsable
// sample of trajectories. Evaluations are drawn as markers, training steps as lines; each chart
// holds one quantity on a y-axis fitted to it (rates on [0, 1]). Plots are drawn with gonum/plot:
// inline SVG in the page (no external files, scripts or fonts are fetched), PNG files for
// `mtgrpo plot`.
//
// It reads only what package run writes (metrics.jsonl, config.yaml, samples/*.jsonl), so it works
// on a finished run, a running one, or one copied from another machine. Run directories are shared
// and unpacked from others' archives: it reads only regular files inside the run directory
// (run.OpenFile: a link that leads out is refused, a FIFO is not waited on) and writes report.html
// and plots/*.png only inside it, each through a temporary file renamed into place
// (staged.WriteFileIn), so that a link in their place is replaced, never written through.
package report
