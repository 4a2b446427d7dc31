package env

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
)

// contextView is what a condenser keeps of the history for the next turn: full keeps it all,
// lastN the task (system prompt and prompt) and the last n steps (an assistant message and what
// answered it), like package rollout's Full and LastN.
type contextView struct {
	name string
	keep func(h []Message) []Message
}

func lastN(n int) contextView {
	return contextView{fmt.Sprintf("last_%d", n), func(h []Message) []Message {
		var starts []int // where each step (an assistant message) starts
		for i, m := range h {
			if m.Role == RoleAssistant {
				starts = append(starts, i)
			}
		}
		if len(starts) <= n {
			return h
		}
		return append(append([]Message(nil), h[:starts[0]]...), h[starts[len(starts)-n]:]...)
	}}
}

var (
	fullView  = contextView{"full", func(h []Message) []Message { return h }}
	condensed = []contextView{fullView, lastN(1), lastN(2)}
)

// play runs one episode of task with demonstrator d seeing the history through view.
func play(t *testing.T, e *Environment, d Demonstrator, task Task, view contextView) (*Trajectory, Score) {
	t.Helper()
	return episode(t, e.New(), task, func(_ int, h []Message) string {
		text, err := d(task, view.keep(h))
		if err != nil {
			t.Fatalf("%s task %s (%s): %v", e.Name, task.ID, view.name, err)
		}
		return text
	})
}

// demoCases are the environments with demonstrators, the contexts to play them under and the
// share of tasks their perfect demonstrator wins (1: every task).
var demoCases = []struct {
	name  string
	cfg   Config
	views []contextView
}{
	{"gsm8k", Config{}, []contextView{fullView}},
	{"countdown", Config{}, []contextView{fullView}},
	{"gsm8k_python", Config{Python: quickPython}, []contextView{fullView}}, // two turns: every view is the full one
	{"wiki_qa", Config{}, condensed},
	{"wiki_qa", Config{Facts: FactsCorpus{Countries: 1000}}, condensed},
	{"calc_mult", Config{Mult: MultTask{Factors: 3, Digits: 2}}, condensed},
	{"frozenlake", Config{}, condensed},
	{"guess_number", Config{}, condensed},
}

func openDemo(t *testing.T, name string, cfg Config) *Environment {
	t.Helper()
	e, err := Open(name, cfg)
	if err != nil && name == "gsm8k_python" {
		t.Skipf("no python3: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// demoTasks are 17 generated tasks of each of three seeds.
func demoTasks(t *testing.T, e *Environment) []Task {
	var tasks []Task
	for _, seed := range []int64{1, 2, 3} {
		rows, err := e.Generate(17, seed)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range rows {
			task := TaskFromRow(r, i)
			task.ID = fmt.Sprintf("%d/%d", seed, i)
			tasks = append(tasks, task)
		}
	}
	return tasks
}

// The perfect demonstrator of every environment with a generator, played through the
// environment on 51 tasks (three seeds) under each context it can meet, earns the full reward
// on every task; so does the imperfect one, whose demonstrations SFT keeps too.
func TestDemonstratorsWinEveryTask(t *testing.T) {
	for _, c := range demoCases {
		t.Run(c.name, func(t *testing.T) {
			for _, share := range []float64{0, 0.5} {
				cfg := c.cfg
				cfg.DirectDemos = share
				e := openDemo(t, c.name, cfg)
				for _, view := range c.views {
					for _, task := range demoTasks(t, e) {
						if _, s := play(t, e, e.Demonstrate, task, view); s.Reward != 1 {
							t.Fatalf("direct_demos %v, %s, task %s: reward %v (%v)", share, view.name, task.ID, s.Reward, s.Metrics)
						}
					}
				}
			}
		})
	}
}

// On slippery ice (each move goes the chosen way or one of the two perpendicular ones, 1/3
// each) the demonstrator replans every turn from wherever the player slid, sending the 2 moves
// most likely to reach the goal; within the game's 5 turns it wins 0.40 of these 300 lakes
// (0.45 of 600 others). The rate is the game's, not the demonstrator's: SFT keeps the won episodes only.
func TestDemonstratorSlipperyLake(t *testing.T) {
	e := openDemo(t, "frozenlake", Config{Lake: LakeTasks{Slippery: true}})
	rows, _ := e.Generate(300, 4)
	won := 0
	for i, r := range rows {
		task := TaskFromRow(r, i)
		traj, s := play(t, e, e.Demonstrate, task, lastN(1))
		for _, tu := range traj.Turns {
			if info := tu.Result.Info; info.InvalidActions != 0 || info.ValidActions == 0 || info.ValidActions > 2 {
				t.Fatalf("task %d: turn %q took %+v", i, tu.Assistant, info)
			}
		}
		won += int(s.Reward)
	}
	if rate := float64(won) / 300; rate < 0.35 || rate > 0.5 {
		t.Errorf("slippery lakes won %d of 300 (%.2f), want about 0.4", won, rate)
	}
}

// The imperfect share (direct_demos): the tasks whose first message differs from the perfect
// demonstrator's are the chosen share, within a few points over 1000 tasks (a standard deviation
// is 1.4 points at 0.3), the same tasks every time, and what they play is the environment's
// imperfect move.
func TestDemonstratorImperfectShare(t *testing.T) {
	imperfect := map[string]func(first string) bool{
		"gsm8k":        func(s string) bool { return strings.HasPrefix(s, "#### ") },
		"countdown":    func(s string) bool { return strings.HasPrefix(s, "<answer>") },
		"gsm8k_python": func(s string) bool { return strings.HasPrefix(s, "#### ") },
		"wiki_qa":      func(s string) bool { return strings.HasPrefix(s, "<answer>") },
		"calc_mult":    func(s string) bool { return strings.HasPrefix(s, "#### ") },
		"frozenlake":   func(s string) bool { return strings.Count(s, "||") == 0 },
		"guess_number": func(s string) bool { return s == "Range 1-100. <answer>37</answer>" },
	}
	const share, n = 0.3, 1000
	for _, c := range demoCases {
		t.Run(c.name, func(t *testing.T) {
			cfg := c.cfg
			cfg.DirectDemos = share
			e := openDemo(t, c.name, cfg)
			rows, _ := e.Generate(n, 5)
			differ := 0
			for i, r := range rows {
				task := TaskFromRow(r, i)
				start := []Message{Text(RoleSystem, "system"), Text(RoleUser, r.Prompt[0].Content)}
				first, err := e.Demonstrate(task, start)
				again, _ := e.Demonstrate(task, start)
				perfect, perr := e.DemonstratePerfect(task, start)
				if err != nil || perr != nil || first != again {
					t.Fatalf("task %d: %q then %q (%v); perfect %q (%v)", i, first, again, err, perfect, perr)
				}
				if first != perfect {
					differ++
					if !imperfect[c.name](first) {
						t.Fatalf("task %d: imperfect demonstration %q", i, first)
					}
				}
			}
			// FrozenLake has no wrong move to make on the lakes where every other cell is a
			// hole or a step away leaves too few moves: a few points fewer (0.263 here).
			tol := 0.05
			if got := float64(differ) / n; math.Abs(got-share) > tol && !(c.name == "frozenlake" && got > share-0.1 && got <= share+tol) {
				t.Errorf("%d of %d demonstrations imperfect (%.3f), want %.2f", differ, n, got, share)
			}
		})
	}
}

// The first message of each environment's demonstrator is a valid action: a well-formed call
// of the environment's tool, a game move the game takes, or a final answer its rubric reads.
func TestDemonstratorFirstMessageValid(t *testing.T) {
	for _, c := range demoCases {
		t.Run(c.name, func(t *testing.T) {
			e := openDemo(t, c.name, c.cfg)
			for _, task := range demoTasks(t, e)[:20] {
				env := e.New()
				start, err := env.Reset(t.Context(), task)
				if err != nil {
					t.Fatal(err)
				}
				first, err := e.Demonstrate(task, start.Messages)
				if err != nil {
					t.Fatal(err)
				}
				res, err := env.Step(t.Context(), first)
				if err != nil {
					t.Fatal(err)
				}
				info := res.Info
				switch c.name {
				case "gsm8k":
					if ExtractStrict(first) != task.GroundTruth {
						t.Fatalf("%q: no \"#### %s\"", first, task.GroundTruth)
					}
				case "countdown":
					var truth CountdownTruth
					eq, _ := ExtractTag(first, "answer")
					if err := json.Unmarshal([]byte(task.GroundTruth), &truth); err != nil || CheckCountdown(eq, truth) != nil {
						t.Fatalf("%q: %v", first, CheckCountdown(eq, truth))
					}
				case "frozenlake", "guess_number":
					if info.InvalidActions != 0 || info.ValidActions == 0 {
						t.Fatalf("%q: %+v", first, info)
					}
				default:
					p := ParseToolCalls(first)
					if len(p.Calls) != 1 || len(p.Errors) != 0 || info.ToolCalls != 1 || info.ToolSuccesses != 1 {
						t.Fatalf("%q: calls %v, errors %v, %+v", first, p.Calls, p.Errors, info)
					}
				}
				env.Close()
			}
		})
	}
}

// Every environment with a task generator has a demonstrator (Demonstrates), and data has
// none; with an extra tool (an MCP server's) gsm8k and countdown, whose demonstrations call no
// tool, have none either. Demonstrates says what Open does in each case.
func TestDemonstratesEveryGenerator(t *testing.T) {
	for _, extra := range []bool{false, true} {
		cfg := Config{Python: quickPython}
		if extra {
			cfg.ExtraTools = []Tool{echoTool{}}
		}
		for _, name := range Names() {
			e, err := Open(name, cfg)
			if err != nil {
				t.Logf("%s, extra tools %v: %v", name, extra, err)
				continue
			}
			if got := e.Demonstrate != nil; got != Demonstrates(name, extra) {
				t.Errorf("%s, extra tools %v: demonstrator %v, Demonstrates %v", name, extra, got, Demonstrates(name, extra))
			}
		}
	}
	if Demonstrates("data", false) || Demonstrates("gsm8k", true) || !Demonstrates("gsm8k", false) {
		t.Error("Demonstrates: want data none, gsm8k one without extra tools only")
	}
}

// Hand-worked plays. Countdown over [44, 19, 35] to 98: the first pair tried, 44 + 19 = 63,
// leaves [35, 63], and 35 + 63 = 98.
func TestDemonstratorCountdownSolves(t *testing.T) {
	task := Task{ID: "c", Prompt: []Message{Text(RoleUser, "Using the numbers [44, 19, 35], create an equation that equals 98. Show ...")}}
	got, err := demonstrateCountdown(task, nil)
	if want := "<think>44 + 19 = 63, 35 + 63 = 98.</think>\n<answer>35 + (44 + 19)</answer>"; err != nil || got != want {
		t.Errorf("got %q (%v), want %q", got, err, want)
	}
	// 7 / 2 is no integer: [7, 2, 4] to 14 needs it ((7 / 2) * 4), found by the rational pass.
	steps, eq, ok := countdownSolve([]int{7, 2, 4}, 14)
	if !ok || CheckCountdown(eq, CountdownTruth{Target: 14, Numbers: []int{7, 2, 4}}) != nil {
		t.Errorf("7, 2, 4 → 14: %v %q %v", steps, eq, ok)
	}
	if _, _, ok := countdownSolve([]int{2, 3}, 7); ok {
		t.Error("2 and 3 make 7")
	}
}

// guess_number, secret 70, seen through the last step alone: 50 (Higher) → 51-100, 75 (Lower)
// → 51-74, 62 (Higher) → 63-74, 68 (Higher) → 69-74, 71 (Lower) → 69-70, 69 (Higher) → 70-70, 70.
func TestDemonstratorGuessBinarySearch(t *testing.T) {
	e := open(t, "guess_number", Config{})
	task := firstTask(t, e, 1)
	task.GroundTruth = "70"
	traj, s := play(t, e, e.Demonstrate, task, lastN(1))
	var guesses []string
	for _, tu := range traj.Turns {
		guesses = append(guesses, tu.Assistant)
	}
	want := []string{"Range 1-100. <answer>50</answer>", "Range 51-100. <answer>75</answer>", "Range 51-74. <answer>62</answer>",
		"Range 63-74. <answer>68</answer>", "Range 69-74. <answer>71</answer>", "Range 69-70. <answer>69</answer>", "Range 70-70. <answer>70</answer>"}
	if strings.Join(guesses, "\n") != strings.Join(want, "\n") || s.Reward != 1 {
		t.Errorf("guesses %q (reward %v), want %q", guesses, s.Reward, want)
	}
}

// FrozenLake on a hand-drawn lake (P at the top left, holes O, goal G):
//
//	P_O_
//	_O__
//	___G
//
// Moves to the goal from each cell: P 5, the cell right of it 6 (a dead end between two holes).
// The shortest path is Down, Down, Right, Right, Right; firm ice takes three moves per turn, so
// the demonstrator sends Down, Down, Right, then Right, Right. Its wrong first move steps away
// from the goal, into the dead end: Right. On "PG" over two holes no safe cell is farther, and
// the wrong move bumps the wall: Left.
func TestDemonstratorLakeShortestPath(t *testing.T) {
	lake := "P_O_\n_O__\n___G"
	perfect, imperfect := lakeDemonstrators(Config{})
	task := Task{ID: "l", GroundTruth: `{"map": ["SFHF", "FHFF", "FFFG"], "slippery": false}`}
	msgs := []Message{Text(RoleUser, "The lake:\n"+lake+"\nDecide your next action(s).")}
	if got, _ := perfect(task, msgs); got != "<answer>Down || Down || Right</answer>" {
		t.Errorf("first turn %q", got)
	}
	msgs = append(msgs, Text(RoleAssistant, "<answer>Down || Down || Right</answer>"), Text(RoleUser, "You moved: Down, Down, Right.\n__O_\n_O__\n_P_G"))
	if got, _ := perfect(task, msgs); got != "<answer>Right || Right</answer>" {
		t.Errorf("second turn %q", got)
	}
	if got, _ := imperfect(task, msgs[:1]); got != "<answer>Right</answer>" {
		t.Errorf("wrong move %q", got)
	}
	small := []Message{Text(RoleUser, "The lake:\nPG\nOO\nDecide your next action(s).")}
	if got, _ := imperfect(Task{ID: "s"}, small); got != "<answer>Left</answer>" {
		t.Errorf("wrong move on PG/OO %q", got)
	}
	v, ok := readLake("You moved: Up.\n_X\nG_\nYou fell into a hole.")
	if !ok || v.row != 0 || v.col != 1 || strings.Join(v.cells, "|") != "FH|GF" {
		t.Errorf("lake with the player in a hole: %+v %v", v, ok)
	}
}

// gsm8k_python's program redoes the worked solution's calculator annotations, an earlier
// step's result read from its variable; the answer is what it printed ("4.0" is 4).
func TestDemonstratorGSM8KProgram(t *testing.T) {
	sol := "The packs hold 3 * 4 = <<3*4=12>>12 stickers.\nAva has 5 + 12 = <<5+12=17>>17 stickers.\n#### 17"
	code, err := solutionProgram(Task{ID: "g", Extra: map[string]any{"answer": sol}})
	if want := "s1 = 3*4\ns2 = 5+s1\nprint(s2)"; err != nil || code != want {
		t.Errorf("program %q (%v), want %q", code, err, want)
	}
	step := []Message{{Role: RoleAssistant, ToolCalls: []ToolCall{{Function: FunctionCall{Name: "python", Arguments: []byte(`{"code": "print(8/2)"}`)}}}}, Text(RoleTool, "4.0\n")}
	if got, err := demonstrateGSM8KPython(Task{ID: "g"}, step); got != "#### 4" || err != nil {
		t.Errorf("answer %q (%v)", got, err)
	}
	if _, err := solutionProgram(Task{ID: "g", Extra: map[string]any{"answer": "no steps #### 3"}}); err == nil {
		t.Error("a solution without annotations made a program")
	}
	if plainNumber("2.5") != "2.5" || plainNumber("12") != "12" || plainNumber(strconv.Itoa(7)+".0") != "7" {
		t.Error("plainNumber")
	}
}
