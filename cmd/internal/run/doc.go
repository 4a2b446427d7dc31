// Package run is a training or evaluation run's directory and everything written into it:
//
//	RUN/config.yaml                   the resolved configuration (what was asked, all defaults filled in)
//	RUN/metrics.jsonl                 one JSON object per step: {"step": n, "critic/score/mean": ..., ...}
//	RUN/events.out.tfevents.*         the same scalars for TensorBoard (`tensorboard --logdir runs/`)
//	RUN/train.log                     the log as text; its "step:" lines follow training (tail -f | grep step:)
//	RUN/samples/step-00000012.txt     a few trajectories per step as readable text (and .jsonl for tools)
//	RUN/checkpoints/step-00000012/    checkpoints, written atomically, the last K kept
//
// Metric names follow verl and TRL (critic/score/mean, actor/pg_loss, actor/entropy,
// response_length/mean, num_turns/mean, timing_s/gen, perf/throughput) so dashboards and habits
// carry over. The trainer fills a Metrics map per step; this package never computes one.
//
// One process writes a run directory at a time (a lock file enforces it). Nothing here deletes data
// a run wrote except checkpoints beyond the kept ones and, on resume, the metrics of steps after
// the checkpoint resumed from (they are replayed).
package run
