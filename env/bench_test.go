package env

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
)

// benchPolicy is a competent scripted policy per environment: it uses the tool where there is
// one, so the benchmark exercises parsing, tools, feedback and scoring.
func benchPolicy(name string, task Task) policy {
	truth := task.GroundTruth
	switch name {
	case "calc_mult":
		return func(turn int, h []Message) string {
			if turn == 0 {
				return fmt.Sprintf(`<tool_call>{"name": "calculator", "arguments": {"expression": "%s"}}</tool_call>`, task.Extra["question"].(string)[8:17])
			}
			return "#### " + lastContent(h)
		}
	case "wiki_qa":
		return func(turn int, h []Message) string {
			if turn == 0 {
				return fmt.Sprintf(`<tool_call>{"name": "search", "arguments": {"query": %q}}</tool_call>`, task.Prompt[0].Content)
			}
			return "<answer>" + truth + "</answer>"
		}
	case "gsm8k_python":
		return func(turn int, h []Message) string {
			if turn == 0 {
				return fmt.Sprintf(`<tool_call>{"name": "python", "arguments": {"code": "print(%s)"}}</tool_call>`, truth)
			}
			return "#### " + lastContent(h)
		}
	case "frozenlake":
		return say("<answer>Right || Down</answer>")
	case "guess_number":
		return binarySearch()
	case "countdown":
		return say("<answer>" + task.Extra["solution"].(string) + "</answer>")
	}
	return say("Step by step.\n#### " + truth)
}

// BenchmarkEpisodes runs whole episodes (Reset, Steps, Score) of each environment on many
// goroutines (16 per core) and reports environment steps per second.
//
//	go test -run XXX -bench Episodes -benchtime 2s ./env/
func BenchmarkEpisodes(b *testing.B) {
	for _, name := range []string{"gsm8k", "countdown", "calc_mult", "wiki_qa", "frozenlake", "guess_number", "gsm8k_python"} {
		b.Run(name, func(b *testing.B) {
			e, err := Open(name, Config{Python: quickPython})
			if err != nil {
				b.Skipf("%s: %v", name, err)
			}
			rows, _ := e.Generate(64, 1)
			tasks := TasksFromRows(rows)
			var steps, next atomic.Int64
			b.SetParallelism(16)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				ctx := context.Background()
				for pb.Next() {
					task := tasks[next.Add(1)%int64(len(tasks))]
					n, err := benchEpisode(ctx, e.New(), task, benchPolicy(name, task))
					if err != nil {
						b.Error(err)
						return
					}
					steps.Add(int64(n))
				}
			})
			b.ReportMetric(float64(steps.Load())/b.Elapsed().Seconds(), "steps/s")
		})
	}
}

func benchEpisode(ctx context.Context, e Env, task Task, p policy) (int, error) {
	start, err := e.Reset(ctx, task)
	if err != nil {
		return 0, err
	}
	traj := &Trajectory{Task: task, Start: start}
	h := start.Messages
	for turn := 0; ; turn++ {
		text := p(turn, h)
		res, err := e.Step(ctx, text)
		if err != nil {
			return 0, err
		}
		traj.Turns = append(traj.Turns, Turn{Assistant: text, Result: res, ContextTokens: 100 * len(h)})
		h = append(append(h, res.Assistant), res.Messages...)
		if res.Done {
			break
		}
	}
	if _, err := e.Rubric().Score(traj); err != nil {
		return 0, err
	}
	return len(traj.Turns), e.Close()
}
