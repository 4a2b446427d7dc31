package run

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/mtgrpo/mtgrpo/env"
	"github.com/mtgrpo/mtgrpo/env/data"
)

// Sample is one trajectory as people read it: each turn's context messages, the model's output,
// its tool calls, what the environment answered, and the rewards.
type Sample struct {
	Step   int          `json:"step"`
	Index  int          `json:"index"`
	Group  int          `json:"group"`
	Task   string       `json:"task"`
	Answer string       `json:"answer,omitempty"` // the task's ground truth
	Reward float64      `json:"reward"`
	End    string       `json:"end"`
	Error  string       `json:"error,omitempty"`
	Turns  []SampleTurn `json:"turns"`
}

// SampleTurn is one turn of a Sample.
type SampleTurn struct {
	Kind      string         `json:"kind"`
	Context   []env.Message  `json:"context"` // what the condenser gave the model
	Output    string         `json:"output"`
	Finish    string         `json:"finish"`
	ToolCalls []env.ToolCall `json:"tool_calls,omitempty"`
	Feedback  []env.Message  `json:"feedback,omitempty"` // tool results and environment messages
	Reward    float64        `json:"reward"`
}

// Samples writes a step's samples as samples/step-NNNNNNNN.txt (readable) and .jsonl (one Sample
// per line, for the report page and other tools).
func (r *Run) Samples(step int, samples []Sample) error {
	dir := r.path(SamplesDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	var text, lines strings.Builder
	for _, s := range samples {
		text.WriteString(s.Text())
		b, err := json.Marshal(s)
		if err != nil {
			return fmt.Errorf("run: sample %d of step %d: %w", s.Index, step, err)
		}
		lines.Write(b)
		lines.WriteByte('\n')
	}
	base := filepath.Join(dir, stepName(step))
	if err := writeFileAtomic(base+".txt", []byte(text.String())); err != nil {
		return err
	}
	return writeFileAtomic(base+".jsonl", []byte(lines.String()))
}

// Text renders a sample for people: a header line, then each turn's context, output, tool calls
// and feedback, indented under labels.
func (s Sample) Text() string {
	w := &strings.Builder{}
	fmt.Fprintf(w, "=== step %d, episode %d (group %d), task %s: reward %.4g, ended %s\n", s.Step, s.Index, s.Group, s.Task, s.Reward, s.End)
	if s.Answer != "" {
		fmt.Fprintf(w, "answer: %s\n", s.Answer)
	}
	if s.Error != "" {
		fmt.Fprintf(w, "error: %s\n", s.Error)
	}
	for i, t := range s.Turns {
		fmt.Fprintf(w, "--- turn %d (%s, %s), turn reward %.4g\n", i+1, t.Kind, t.Finish, t.Reward)
		for _, m := range t.Context {
			fmt.Fprintf(w, "[%s]\n%s\n", m.Role, indent(m.Content))
		}
		fmt.Fprintf(w, "[output]\n%s\n", indent(t.Output))
		for _, c := range t.ToolCalls {
			fmt.Fprintf(w, "[tool call] %s %s\n", c.Function.Name, c.Function.Arguments)
		}
		for _, m := range t.Feedback {
			fmt.Fprintf(w, "[%s]\n%s\n", m.Role, indent(m.Content))
		}
	}
	w.WriteString("\n")
	return w.String()
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ")
}

// ReadSamples reads every samples/step-*.jsonl of a run, by step; only regular files inside dir
// are read (OpenFile).
func ReadSamples(dir string) ([]Sample, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	defer root.Close()
	d, err := OpenDirIn(root, SamplesDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	ents, err := d.ReadDir(-1)
	d.Close()
	if err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	var names []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), stepPrefix) && strings.HasSuffix(e.Name(), ".jsonl") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	var out []Sample
	for _, name := range names {
		f, err := OpenFileIn(root, SamplesDir+"/"+name)
		if err != nil {
			return nil, err
		}
		s, err := parseSamples(f.Name(), f)
		f.Close()
		if err != nil {
			return nil, err
		}
		out = append(out, s...)
	}
	return out, nil
}

// parseSamples reads one samples file, a JSON object a line.
func parseSamples(path string, r io.Reader) ([]Sample, error) {
	var out []Sample
	lines := data.NewLineReader(r, 64<<20, data.DefaultMaxBytes)
	for {
		b, n, err := lines.Next()
		if err == io.EOF {
			return out, nil
		}
		if err == nil {
			var s Sample
			if err = json.Unmarshal(b, &s); err == nil {
				out = append(out, s)
				continue
			}
		}
		return nil, fmt.Errorf("run: %s line %d: %w", path, n, err)
	}
}
