package env

import (
	"fmt"

	"github.com/mtgrpo/mtgrpo/env/data"
)

// TaskFromRow turns a dataset row into a Task. i is the row's position, used as the ID when
// extra_info has no "index".
func TaskFromRow(r data.Row, i int) Task {
	t := Task{ID: fmt.Sprint(i), DataSource: r.DataSource, Ability: r.Ability, GroundTruth: r.RewardModel.GroundTruth, Extra: r.ExtraInfo, Seed: int64(i)}
	if idx, ok := r.ExtraInfo["index"]; ok {
		t.ID = fmt.Sprint(idx)
	}
	for _, m := range r.Prompt {
		t.Prompt = append(t.Prompt, Message{Role: m.Role, Content: m.Content})
	}
	return t
}

// TasksFromRows converts a dataset.
func TasksFromRows(rows []data.Row) []Task {
	ts := make([]Task, len(rows))
	for i, r := range rows {
		ts[i] = TaskFromRow(r, i)
	}
	return ts
}
