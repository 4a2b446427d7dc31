package job

import (
	rundir "github.com/mtgrpo/mtgrpo/cmd/internal/run"
	"github.com/mtgrpo/mtgrpo/rollout"
)

// pick chooses n trajectories spread evenly over the batch (so several groups are shown, not
// the first group's copies of one task).
func pick(trajs []*rollout.Trajectory, n int) []*rollout.Trajectory {
	if n >= len(trajs) {
		return trajs
	}
	out := make([]*rollout.Trajectory, n)
	for i := range out {
		out[i] = trajs[i*len(trajs)/n]
	}
	return out
}

// samplesOf converts trajectories into the run directory's readable samples.
func samplesOf(step int, trajs []*rollout.Trajectory) []rundir.Sample {
	out := make([]rundir.Sample, len(trajs))
	for i, tr := range trajs {
		out[i] = SampleOf(step, tr)
	}
	return out
}

// SampleOf converts a trajectory into a readable sample: each turn's condensed context, output,
// tool calls, feedback and reward.
func SampleOf(step int, tr *rollout.Trajectory) rundir.Sample {
	s := rundir.Sample{Step: step, Index: tr.Index, Group: tr.Group, Task: tr.Task.ID, Answer: tr.Task.GroundTruth,
		Reward: tr.Reward, End: string(tr.End)}
	if tr.Err != nil {
		s.Error = tr.Err.Error()
	}
	for _, t := range tr.Turns {
		s.Turns = append(s.Turns, rundir.SampleTurn{Kind: string(t.Kind), Context: t.Messages, Output: t.Text, Finish: string(t.Finish),
			ToolCalls: t.Step.Assistant.ToolCalls, Feedback: t.Step.Messages, Reward: t.Reward})
	}
	return s
}
