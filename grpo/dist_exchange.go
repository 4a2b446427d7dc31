package grpo

import (
	"bytes"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"math"

	"github.com/mtgrpo/mtgrpo/env"
	"github.com/mtgrpo/mtgrpo/rollout"
	"github.com/mtgrpo/mtgrpo/torch"
)

// What data-parallel ranks exchange: the trajectories each played (so that every rank holds the
// whole batch) and the per-token values of the scoring passes each ran. Host data, encoded here
// and carried by torch.ProcessGroup.AllGatherBytes.

// wireTrajectory is a trajectory as sent to the other ranks. The task stays home: every rank drew
// the same tasks, so the receiver takes its own (checked by ID); the error travels as text.
type wireTrajectory struct {
	T      rollout.Trajectory
	TaskID string
	Err    string
}

// gatherTrajectories gives every rank of g the trajectories of every rank, in rank order: with
// each rank playing a contiguous share of the tasks, that is the whole batch in single-process
// order. tasks are the round's tasks (the same on every rank) and firstGroup the group number of
// tasks[0]; a trajectory of group g is a trajectory of tasks[g−firstGroup]. A nil g (a single
// process) gives mine back.
func gatherTrajectories(g *torch.ProcessGroup, mine []*rollout.Trajectory, tasks []env.Task, firstGroup int) ([]*rollout.Trajectory, error) {
	if g == nil || g.Size() == 1 {
		return mine, nil
	}
	wire := make([]wireTrajectory, len(mine))
	for i, tr := range mine {
		wire[i] = wireTrajectory{T: *tr, TaskID: tr.Task.ID}
		wire[i].T.Task, wire[i].T.Err = env.Task{}, nil
		if tr.Err != nil {
			wire[i].Err = tr.Err.Error()
		}
	}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(wire); err != nil {
		return nil, fmt.Errorf("rank %d: encoding its trajectories: %w", g.Rank(), err)
	}
	var parts [][]byte
	if err := torch.Collective(g, "exchanging trajectories", func() { parts = g.AllGatherBytes(buf.Bytes()) }); err != nil {
		return nil, err
	}
	var out []*rollout.Trajectory
	for r, part := range parts {
		var got []wireTrajectory
		if err := gob.NewDecoder(bytes.NewReader(part)).Decode(&got); err != nil {
			return nil, fmt.Errorf("decoding rank %d's trajectories: %w", r, err)
		}
		for i := range got {
			w := &got[i]
			k := w.T.Group - firstGroup
			if k < 0 || k >= len(tasks) || tasks[k].ID != w.TaskID {
				return nil, fmt.Errorf("rank %d played task %q as group %d, which is not this rank's (%d tasks from group %d): "+
					"every rank's TaskSource must give the same tasks (same data, seed and position)", r, w.TaskID, w.T.Group, len(tasks), firstGroup)
			}
			tr := w.T
			tr.Task = tasks[k]
			if w.Err != "" {
				tr.Err = errors.New(w.Err)
			}
			out = append(out, &tr)
		}
	}
	return out, nil
}

// scoreShared runs a scoring pass (compute, on a share of samples) on each training rank's share
// and gives every rank every sample's values (get reads a computed sample's values, set stores
// received ones). A single process computes everything.
func (d *Dist) scoreShared(samples []*sample, compute func([]*sample) error, get func(*sample) []float32,
	set func(*sample, []float32)) error {
	if d == nil {
		return compute(samples)
	}
	index := make(map[*sample]int, len(samples))
	for i, s := range samples {
		index[s] = i
	}
	mine := d.share(samples)
	if err := compute(mine); err != nil {
		return err
	}
	// Each computed sample: its index in samples, its length, its values (little-endian).
	var buf []byte
	for _, s := range mine {
		v := get(s)
		buf = binary.LittleEndian.AppendUint32(buf, uint32(index[s]))
		buf = binary.LittleEndian.AppendUint32(buf, uint32(len(v)))
		for _, x := range v {
			buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(x))
		}
	}
	var parts [][]byte
	if err := torch.Collective(d.train, "exchanging scores", func() { parts = d.train.AllGatherBytes(buf) }); err != nil {
		return fmt.Errorf("grpo: %w", err)
	}
	for r, p := range parts {
		for len(p) > 0 {
			if len(p) < 8 {
				return fmt.Errorf("grpo: rank %d's scores are cut short", r)
			}
			i, n := int(binary.LittleEndian.Uint32(p)), int(binary.LittleEndian.Uint32(p[4:]))
			p = p[8:]
			if i >= len(samples) || n != len(samples[i].IDs) || len(p) < 4*n {
				return fmt.Errorf("grpo: rank %d sent %d scores for sample %d of %d", r, n, i, len(samples))
			}
			v := make([]float32, n)
			for k := range v {
				v[k] = math.Float32frombits(binary.LittleEndian.Uint32(p[4*k:]))
			}
			p = p[4*n:]
			set(samples[i], v)
		}
	}
	return nil
}
