package exchange

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

// wireTrajectory is a trajectory as sent to the other ranks: without its task (the receiver has
// it, checked by ID) and with its error as text.
type wireTrajectory struct {
	T      rollout.Trajectory
	TaskID string
	Err    string
}

// Trajectories gives every rank of g the trajectories of every rank, in rank order: with each
// rank playing a contiguous share of the tasks, that is the whole batch in single-process order.
// tasks are the round's tasks (the same on every rank) and firstGroup the group number of
// tasks[0]; a trajectory of group k is a trajectory of tasks[k−firstGroup]. A nil g (a single
// process) gives mine back.
func Trajectories(g *torch.ProcessGroup, mine []*rollout.Trajectory, tasks []env.Task, firstGroup int) ([]*rollout.Trajectory, error) {
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

// Scores gives every rank of g the values every rank computed for its share of a batch of n
// samples: this rank computed values[k] for sample index[k]. length(i) is the number of values
// sample i has; set receives each sample's values (this rank's own included), by index.
func Scores(g *torch.ProcessGroup, n int, index []int, values [][]float32, length func(i int) int, set func(i int, v []float32)) error {
	var buf []byte
	for k, v := range values {
		buf = binary.LittleEndian.AppendUint32(buf, uint32(index[k]))
		buf = binary.LittleEndian.AppendUint32(buf, uint32(len(v)))
		for _, x := range v {
			buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(x))
		}
	}
	var parts [][]byte
	if err := torch.Collective(g, "exchanging scores", func() { parts = g.AllGatherBytes(buf) }); err != nil {
		return err
	}
	for r, p := range parts {
		for len(p) > 0 {
			if len(p) < 8 {
				return fmt.Errorf("rank %d's scores are cut short", r)
			}
			i, m := int(binary.LittleEndian.Uint32(p)), int(binary.LittleEndian.Uint32(p[4:]))
			p = p[8:]
			if i >= n || m != length(i) || len(p) < 4*m {
				return fmt.Errorf("rank %d sent %d scores for sample %d of %d", r, m, i, n)
			}
			v := make([]float32, m)
			for k := range v {
				v[k] = math.Float32frombits(binary.LittleEndian.Uint32(p[4*k:]))
			}
			p = p[4*m:]
			set(i, v)
		}
	}
	return nil
}
