package job

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/mtgrpo/mtgrpo/cmd/internal/config"
	"github.com/mtgrpo/mtgrpo/cmd/internal/inputs"
	"github.com/mtgrpo/mtgrpo/env"
	"github.com/mtgrpo/mtgrpo/env/data"
)

// Seeds of the generated sets: the training and validation tasks come from different streams of
// the environment's generator, and validation tasks equal to a training task are dropped.
const (
	trainSeedSalt = 0
	valSeedSalt   = 0x76616c // "val"
)

// loadTasks reads the dataset files, in order and their rows concatenated (with the answers of
// ground_truth_file applied), or generates n tasks of the environment when there are none. val
// says they are the validation set (its size is bounded). note, when not empty, reports skipped
// rows for the log.
func loadTasks(files config.Files, val bool, n int, seed int64, c *config.Config, e *env.Environment) (ts []env.Task, note string, err error) {
	if len(files) == 0 {
		if e.Generate == nil {
			return nil, "", fmt.Errorf("environment %s generates no tasks: give data.train and data.val files", e.Name)
		}
		rows, err := e.Generate(n, seed)
		if err != nil {
			return nil, "", fmt.Errorf("generating %d %s tasks: %w", n, e.Name, err)
		}
		return env.TasksFromRows(rows), "", nil
	}
	var rows []data.Row
	var notes []string
	for _, path := range files {
		rs, st, err := inputs.Rows(path, data.Options{SkipInvalid: c.Data.SkipInvalid})
		if err != nil {
			return nil, "", err
		}
		if err := c.CheckRows(path, rs); err != nil {
			return nil, "", err
		}
		if st.Skipped > 0 {
			notes = append(notes, fmt.Sprintf("%s: %d malformed rows skipped (the first: %v)", path, st.Skipped, &st.Errors[0]))
		}
		rows = append(rows, rs...)
	}
	if val {
		if err := c.CheckEvalSize(len(rows), fmt.Sprintf("the %d rows of data.val %s", len(rows), files)); err != nil {
			return nil, "", err
		}
	}
	if c.Data.GroundTruthFile != "" {
		if err := data.ApplyGroundTruth(rows, c.Data.GroundTruthFile); err != nil {
			return nil, "", err
		}
	}
	return env.TasksFromRows(rows), strings.Join(notes, "; "), nil
}

// datasets are the run's training and validation tasks.
type datasets struct {
	train, val []env.Task
	notes      []string
}

func loadDatasets(c *config.Config, e *env.Environment) (*datasets, error) {
	d := &datasets{}
	var err error
	seed := int64(c.Seed)
	if d.train, err = d.load(c.Data.Train, false, c.Data.TrainSize, seed^trainSeedSalt, c, e); err != nil {
		return nil, fmt.Errorf("training data: %w", err)
	}
	if d.val, err = d.load(c.Data.Val, true, c.Data.ValSize, seed^valSeedSalt, c, e); err != nil {
		return nil, fmt.Errorf("validation data: %w", err)
	}
	inputs.Release() // the tasks are built: the rows read need not be kept
	if len(c.Data.Val) == 0 {
		d.val = heldOut(d.val, d.train)
		if len(d.val) == 0 {
			return nil, fmt.Errorf("validation data: every generated task is also a training task")
		}
	}
	return d, nil
}

func (d *datasets) load(files config.Files, val bool, n int, seed int64, c *config.Config, e *env.Environment) ([]env.Task, error) {
	ts, note, err := loadTasks(files, val, n, seed, c, e)
	if note != "" {
		d.notes = append(d.notes, note)
	}
	return ts, err
}

// heldOut drops the tasks of val whose prompt is also a training task's.
func heldOut(val, train []env.Task) []env.Task {
	seen := map[string]bool{}
	for _, t := range train {
		seen[promptKey(t)] = true
	}
	var out []env.Task
	for _, t := range val {
		if !seen[promptKey(t)] {
			out = append(out, t)
		}
	}
	return out
}

// promptKey identifies a task by its prompt or, when it has none (the environment makes the
// episode from extra_info, e.g. an OpenEnv server's reset seed), by extra_info's seed, else by all
// of extra_info.
func promptKey(t env.Task) string {
	if len(t.Prompt) == 0 {
		if s, ok := t.Extra["seed"]; ok {
			return fmt.Sprintf("seed\x00%v", s)
		}
		b, _ := json.Marshal(t.Extra) // map keys are sorted: equal maps give equal keys
		return "extra\x00" + string(b)
	}
	s := ""
	for _, m := range t.Prompt {
		s += m.Role + "\x00" + m.Content + "\x00"
	}
	return s
}

// taskSource serves the training tasks in passes (epochs), each pass in its own seeded order
// when shuffling. Its whole state is Pos, the number of tasks served: a checkpoint saves it and a
// resumed run continues with the very next task.
type taskSource struct {
	tasks   []env.Task
	shuffle bool
	seed    uint64
	Pos     int
	order   []int // the current epoch's order
	epoch   int
}

func newTaskSource(tasks []env.Task, shuffle bool, seed uint64, pos int) *taskSource {
	return &taskSource{tasks: tasks, shuffle: shuffle, seed: seed, Pos: pos, epoch: -1}
}

// Next returns the next n tasks, crossing into the next epoch when one ends.
func (s *taskSource) Next(n int) ([]env.Task, error) {
	if len(s.tasks) == 0 {
		return nil, fmt.Errorf("no training tasks")
	}
	out := make([]env.Task, 0, n)
	for range n {
		epoch, i := s.Pos/len(s.tasks), s.Pos%len(s.tasks)
		if epoch != s.epoch {
			s.order, s.epoch = s.orderOf(epoch), epoch
		}
		out = append(out, s.tasks[s.order[i]])
		s.Pos++
	}
	return out, nil
}

// orderOf is epoch's permutation: the identity without shuffling.
func (s *taskSource) orderOf(epoch int) []int {
	if !s.shuffle {
		order := make([]int, len(s.tasks))
		for i := range order {
			order[i] = i
		}
		return order
	}
	return rand.New(rand.NewPCG(s.seed, uint64(epoch)+0x73687566)).Perm(len(s.tasks))
}
