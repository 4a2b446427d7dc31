package main

import (
	rundir "github.com/mtgrpo/mtgrpo/cmd/internal/run"
	"github.com/mtgrpo/mtgrpo/rollout"
)

// sampleOf converts a rollout trajectory into the run directory's readable sample.
func sampleOf(step int, tr *rollout.Trajectory) rundir.Sample {
	s := rundir.Sample{Step: step, Index: tr.Index, Group: tr.Group, Task: tr.Task.ID, Answer: tr.Task.GroundTruth, Reward: tr.Reward, End: tr.End}
	if tr.Err != nil {
		s.Error = tr.Err.Error()
	}
	for _, t := range tr.Turns {
		s.Turns = append(s.Turns, rundir.SampleTurn{Kind: t.Kind, Context: t.Messages, Output: t.Text, Finish: string(t.Finish),
			ToolCalls: t.Step.Assistant.ToolCalls, Feedback: t.Step.Messages, Reward: t.Reward})
	}
	return s
}
