package env

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mtgrpo/mtgrpo/env/data"
)

func lakeTask(m []string, slippery bool, seed int64) Task {
	truth, _ := json.Marshal(LakeTruth{Map: m, Slippery: slippery})
	return Task{ID: "lake", Prompt: []Message{Text(RoleUser, "The lake.")}, GroundTruth: string(truth), Seed: seed}
}

var lake4 = []string{
	"SFFF",
	"FHFH",
	"FFFH",
	"HFFG",
}

func TestFrozenLakeSolved(t *testing.T) {
	e := open(t, "frozenlake", Config{})
	// Right Right Down, then Down Down Right: (0,0)→(0,2)→(1,2)→(3,2)→(3,3) = G.
	moves := []string{"<think>go</think><answer>Right || Right || Down</answer>", "<answer>Down, Down, Right</answer>"}
	traj, s := episode(t, e.New(), lakeTask(lake4, false, 1), func(turn int, _ []Message) string { return moves[turn] })
	first := traj.Turns[0].Result.Messages[0].Content
	// After turn 0 the player stands at row 1, column 2.
	want := "You moved: Right, Right, Down.\n____\n_OPO\n___O\nO__G"
	if first != want {
		t.Fatalf("feedback\n%s\nwant\n%s", first, want)
	}
	last := traj.Turns[1].Result
	if !last.Done || !last.Info.Success || last.Info.Reward != 1 || last.Info.ValidActions != 3 {
		t.Fatalf("last turn %+v", last.Info)
	}
	contains(t, last.Messages[0].Content, "O__√\nYou reached the goal!")
	// reward = success 1; turn rewards 0 and 0: every move was understood.
	if s.Reward != 1 || s.TurnRewards[0] != 0 || s.TurnRewards[1] != 0 {
		t.Fatalf("score %+v", s)
	}
}

func TestFrozenLakeFailures(t *testing.T) {
	e := open(t, "frozenlake", Config{})
	task := lakeTask(lake4, false, 1)
	// Into the hole at (1,1): Down then Right. The grid shows X; the episode ends unsuccessful.
	traj, s := episode(t, e.New(), task, say("<answer>Down || Right</answer>"))
	if len(traj.Turns) != 1 || traj.Final().Success || s.Reward != 0 {
		t.Fatalf("hole: %+v", traj.Final())
	}
	contains(t, traj.Turns[0].Result.Messages[0].Content, "_X_O")
	// Invalid actions are counted and explained; the episode goes on.
	en := e.New()
	if _, err := en.Reset(context.Background(), task); err != nil {
		t.Fatal(err)
	}
	res, _ := en.Step(context.Background(), "<answer>Jump || Left</answer>")
	if res.Done || res.Info.InvalidActions != 1 || res.Info.ValidActions != 1 {
		t.Fatalf("invalid: %+v", res.Info)
	}
	res, _ = en.Step(context.Background(), "I go down")
	if res.Info.InvalidActions != 1 || res.Info.ValidActions != 0 {
		t.Fatalf("no answer tag: %+v", res.Info)
	}
	contains(t, res.Messages[0].Content, "invalid action")
	// Each move not understood costs 0.1 in its turn's reward; a move understood earns nothing.
	moves := []string{"<answer>Jump || Left</answer>", "I go down", "<answer>Right || Right || Down</answer>", "<answer>Down, Down, Right</answer>"}
	traj, s = episode(t, e.New(), task, func(turn int, _ []Message) string { return moves[turn] })
	if want := []float64{-0.1, -0.1, 0, 0}; s.Reward != 1 || !slices.Equal(s.TurnRewards, want) {
		t.Fatalf("invalid moves, then the goal: reward %v, turn rewards %v, want 1 and %v", s.Reward, s.TurnRewards, want)
	}
	// Looping into the wall: 5 turns, then out of moves; lasting earns no turn reward.
	traj, s = episode(t, e.New(), task, say("<answer>Up</answer>"))
	if len(traj.Turns) != 5 || !traj.Final().Truncated || s.Reward != 0 || slices.Max(s.TurnRewards) != 0 || slices.Min(s.TurnRewards) != 0 {
		t.Fatalf("loop: %d turns %+v, turn rewards %v", len(traj.Turns), traj.Final(), s.TurnRewards)
	}
	// Bad ground truth is an error at Reset, naming the task.
	if _, err := e.New().Reset(context.Background(), Task{ID: "7", GroundTruth: `{"map": ["SX"]}`}); err == nil {
		t.Fatal("bad map accepted")
	}
}

// On slippery ice "Down" from the middle of an open lake goes Down, Left or Right with
// probability 1/3 each (gym's FrozenLake), never Up. 600 seeded episodes: each outcome ~200.
func TestFrozenLakeSlippery(t *testing.T) {
	m := []string{"FFFFF", "FFFFF", "FFSFF", "FFFFF", "FFFFG"}
	count := map[string]int{}
	for seed := int64(0); seed < 600; seed++ {
		f := &FrozenLake{}
		if _, err := f.Reset(context.Background(), lakeTask(m, true, seed)); err != nil {
			t.Fatal(err)
		}
		f.move(1) // Down
		count[fmt.Sprint(f.row-2, f.col-2)]++
	}
	if count["-1 0"] != 0 {
		t.Fatalf("slipped backwards: %v", count)
	}
	for _, k := range []string{"1 0", "0 -1", "0 1"} {
		if count[k] < 150 || count[k] > 250 {
			t.Fatalf("outcome %s: %d of 600 (want ~200): %v", k, count[k], count)
		}
	}
}

func TestGeneratedLakesAreSolvable(t *testing.T) {
	for size := MinLakeSize; size <= MaxLakeSize; size++ {
		for i, r := range GenerateFrozenLake(200, 3, size, false) {
			expectSolvableLake(t, fmt.Sprintf("size %d, row %d", size, i), r, size)
		}
	}
}

func expectSolvableLake(t *testing.T, what string, r data.Row, size int) {
	t.Helper()
	var truth LakeTruth
	if err := json.Unmarshal([]byte(r.RewardModel.GroundTruth), &truth); err != nil {
		t.Fatal(err)
	}
	if err := checkLake(truth.Map); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if len(truth.Map) != size || len(truth.Map[0]) != size {
		t.Fatalf("%s: %d×%d lake, want %d×%d: %v", what, len(truth.Map), len(truth.Map[0]), size, size, truth.Map)
	}
	v, ok := readLake(r.Prompt[0].Content)
	if !ok || v.cells[v.row][v.col] != 'F' || truth.Map[v.row][v.col] != 'S' ||
		strings.Join(v.cells, "") != strings.ReplaceAll(strings.Join(truth.Map, ""), "S", "F") {
		t.Fatalf("%s: the prompt does not draw the lake %v: %q", what, truth.Map, r.Prompt[0].Content)
	}
	g := make([][]byte, size)
	for j, line := range truth.Map {
		g[j] = []byte(line)
	}
	if !reachable(g, v.row, v.col) {
		t.Fatalf("%s: unsolvable: %v", what, truth.Map)
	}
}

// binarySearch plays guess_number optimally, reading "Higher."/"Lower." feedback.
func binarySearch() policy {
	lo, hi := 1, 100
	var last int
	return func(turn int, h []Message) string {
		if turn > 0 {
			switch lastContent(h) {
			case "Higher.":
				lo = last + 1
			case "Lower.":
				hi = last - 1
			}
		}
		last = (lo + hi) / 2
		return fmt.Sprintf("<answer>%d</answer>", last)
	}
}

func TestGuessNumber(t *testing.T) {
	e := open(t, "guess_number", Config{})
	task := func(secret int) Task {
		return Task{ID: "g", Prompt: []Message{Text(RoleUser, "Guess.")}, GroundTruth: fmt.Sprint(secret)}
	}
	// Secret 37: 50 → "Lower.", 25 → "Higher.", 37 → correct, in 3 turns.
	traj, s := episode(t, e.New(), task(37), binarySearch())
	if len(traj.Turns) != 3 || lastContentOf(traj, 0) != "Lower." || lastContentOf(traj, 1) != "Higher." || s.Reward != 1 {
		t.Fatalf("secret 37: %d turns, reward %v", len(traj.Turns), s.Reward)
	}
	for secret := 1; secret <= 100; secret++ { // binary search always wins within 7
		if traj, s := episode(t, e.New(), task(secret), binarySearch()); s.Reward != 1 || len(traj.Turns) > 7 {
			t.Fatalf("secret %d: %d turns, reward %v", secret, len(traj.Turns), s.Reward)
		}
	}
	// Looping on one wrong guess: 7 turns, no success; each turn one valid action, which earns
	// no turn reward.
	traj, s = episode(t, e.New(), task(37), say("<answer>50</answer>"))
	if len(traj.Turns) != 7 || s.Reward != 0 || s.TurnRewards[6] != 0 || !traj.Final().Truncated {
		t.Fatalf("loop: %d turns %+v", len(traj.Turns), s)
	}
	// Malformed guesses are invalid actions, each costing 0.1.
	traj, s = episode(t, e.New(), task(37), say("fifty"))
	if traj.Turns[0].Result.Info.InvalidActions != 1 || traj.Turns[0].Result.Info.ValidActions != 0 || s.TurnRewards[0] != -0.1 {
		t.Fatalf("malformed: %+v, turn reward %v", traj.Turns[0].Result.Info, s.TurnRewards[0])
	}
}

func lastContentOf(traj *Trajectory, turn int) string {
	m := traj.Turns[turn].Result.Messages
	return m[len(m)-1].Content
}

func TestCountdown(t *testing.T) {
	truth := `{"target": 16, "numbers": [3, 5, 2]}`
	task := Task{ID: "c", Prompt: []Message{Text(RoleUser, "Countdown.")}, GroundTruth: truth}
	e := open(t, "countdown", Config{})
	// TinyZero's values: 1 correct, 0.1 formatted but wrong or rule-breaking, 0 without answer.
	for _, c := range []struct {
		answer string
		want   float64
	}{
		{"<think>8*2</think>\n<answer>(3 + 5) * 2</answer>", 1},
		{"<answer>3 + 5 + 2</answer>", 0.1},       // = 10
		{"<answer>3 * 3 + 5 + 2</answer>", 0.1},   // 3 used twice
		{"<answer>(3 + 5) * 2 + 0</answer>", 0.1}, // 0 is not given
		{"<answer>(3 + 5) ^ 2</answer>", 0.1},     // ^ is not allowed
		{"(3 + 5) * 2", 0},
		{"", 0},
	} {
		_, s := episode(t, e.New(), task, say(c.answer))
		if d := s.Reward - c.want; d > 1e-12 || d < -1e-12 {
			t.Errorf("%q: reward %v, want %v", c.answer, s.Reward, c.want)
		}
	}
	// TinyZero's rule: every number exactly once. 3 + 5 = 8 leaves 2 out: a wrong answer (0.1),
	// unless the row relaxes the rule to "at most once".
	for _, c := range []struct {
		truth string
		want  float64
	}{
		{`{"target": 8, "numbers": [3, 5, 2]}`, 0.1},
		{`{"target": 8, "numbers": [3, 5, 2], "at_most_once": true}`, 1},
	} {
		task := Task{ID: "c", Prompt: []Message{Text(RoleUser, "Countdown.")}, GroundTruth: c.truth}
		if _, s := episode(t, e.New(), task, say("<answer>3 + 5</answer>")); s.Reward != c.want {
			t.Errorf("%s: reward %v, want %v", c.truth, s.Reward, c.want)
		}
	}
	if CheckCountdown("(3 + 5) * 2 / 2", CountdownTruth{Target: 8, Numbers: []int{3, 5, 2, 2}}) != nil {
		t.Error("a repeated number used as often as given")
	}
	// Every generated task is solvable: its recorded solution checks.
	for i, r := range GenerateCountdown(300, 4) {
		var ct CountdownTruth
		if err := json.Unmarshal([]byte(r.RewardModel.GroundTruth), &ct); err != nil {
			t.Fatal(err)
		}
		if err := CheckCountdown(r.ExtraInfo["solution"].(string), ct); err != nil {
			t.Fatalf("row %d: %v (%s)", i, err, r.ExtraInfo["solution"])
		}
	}
}
