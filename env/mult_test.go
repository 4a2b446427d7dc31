package env

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// calc_mult's task shapes: operand digits and factor counts, with the product as ground truth.
func TestCalcMultShapes(t *testing.T) {
	for _, c := range []struct {
		cfg      Config
		question string
		turns    int
	}{
		{Config{}, `^What is \d{3} \* \d{3}\?$`, 2},
		{Config{Digits: 1}, `^What is [2-9] \* [2-9]\?$`, 2},
		{Config{Digits: 2, Factors: 3}, `^What is \d{2} \* \d{2} \* \d{2}\?$`, 3},
		{Config{Digits: 4, Factors: 4}, `^What is \d{4} \* \d{4} \* \d{4} \* \d{4}\?$`, 4},
	} {
		e := open(t, "calc_mult", c.cfg)
		rows, err := e.Generate(50, 7)
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range rows {
			q := row.Prompt[0].Content
			if !regexp.MustCompile(c.question).MatchString(q) {
				t.Fatalf("%+v: question %q", c.cfg, q)
			}
			// The ground truth is the product, worked out here by hand from the question.
			product := 1
			for _, x := range strings.Split(strings.TrimSuffix(strings.TrimPrefix(q, "What is "), "?"), " * ") {
				var v int
				fmt.Sscan(x, &v)
				product *= v
			}
			if row.RewardModel.GroundTruth != fmt.Sprint(product) {
				t.Fatalf("%q: ground truth %s, want %d", q, row.RewardModel.GroundTruth, product)
			}
		}
		// The demonstrator multiplies one call at a time and answers after the last call, seeing
		// the whole history here and the last step alone below.
		task := TaskFromRow(rows[0], 0)
		for _, lastStepOnly := range []bool{false, true} {
			demo := func(_ int, h []Message) string {
				if lastStepOnly && len(h) > 4 {
					h = append(append([]Message(nil), h[:2]...), h[len(h)-2:]...)
				}
				text, err := e.Demonstrate(task, h)
				if err != nil {
					t.Fatal(err)
				}
				return text
			}
			traj, s := episode(t, e.New(), task, demo)
			if len(traj.Turns) != c.turns || s.Reward != 1 {
				t.Fatalf("%+v (last step only %v): %d turns, reward %v, turns %+v", c.cfg, lastStepOnly, len(traj.Turns), s.Reward, traj.Turns)
			}
		}
	}
	// The default shape draws what calc_mult always drew (seeded datasets and runs stay
	// reproducible): two numbers 100 + IntN(900) per task from the "calc_mult" stream.
	r := newRand(5, "calc_mult")
	for i, row := range GenerateMult(20, 5) {
		a, b := 100+r.IntN(900), 100+r.IntN(900)
		if q := row.Prompt[0].Content; q != fmt.Sprintf("What is %d * %d?", a, b) {
			t.Fatalf("row %d: %q, want %d * %d", i, q, a, b)
		}
	}
	for _, bad := range []Config{{Digits: 7}, {Digits: -1}, {Factors: 1}, {Factors: 5}} {
		if _, err := Open("calc_mult", bad); err == nil || !strings.Contains(err.Error(), "calc_mult") {
			t.Errorf("%+v: error %v", bad, err)
		}
	}
}

// DirectDemos: that share of the tasks is demonstrated with the product at once (one turn, still
// right), the same tasks every time; the rest call the calculator first.
func TestCalcMultDirectDemos(t *testing.T) {
	e := open(t, "calc_mult", Config{Digits: 2, DirectDemos: 0.5})
	rows, err := e.Generate(400, 1)
	if err != nil {
		t.Fatal(err)
	}
	direct := 0
	for i, row := range rows {
		task := TaskFromRow(row, i)
		first, err := e.Demonstrate(task, []Message{Text(RoleUser, row.Prompt[0].Content)})
		if err != nil {
			t.Fatal(err)
		}
		again, _ := e.Demonstrate(task, []Message{Text(RoleUser, row.Prompt[0].Content)})
		if again != first {
			t.Fatalf("task %d demonstrated as %q, then %q", i, first, again)
		}
		if strings.HasPrefix(first, "#### ") {
			direct++
			traj, s := episode(t, e.New(), task, func(int, []Message) string { return first })
			if len(traj.Turns) != 1 || s.Reward != 1 {
				t.Fatalf("direct demonstration %q: %d turns, reward %v", first, len(traj.Turns), s.Reward)
			}
		} else if !strings.Contains(first, `"name": "calculator"`) {
			t.Fatalf("task %d demonstrated as %q", i, first)
		}
	}
	// 400 draws of a fair coin: 200 ± 10 (one standard deviation); ±50 is five of them.
	if direct < 150 || direct > 250 {
		t.Errorf("%d of 400 demonstrations direct, want about 200", direct)
	}
	none := open(t, "calc_mult", Config{Digits: 2})
	for i, row := range rows[:50] {
		if d, _ := none.Demonstrate(TaskFromRow(row, i), nil); strings.HasPrefix(d, "#### ") {
			t.Fatalf("DirectDemos 0 answered task %d directly", i)
		}
	}
	for _, bad := range []float64{-0.1, 1.5} {
		if _, err := Open("calc_mult", Config{DirectDemos: bad}); err == nil || !strings.Contains(err.Error(), "direct_demos") {
			t.Errorf("DirectDemos %v: %v", bad, err)
		}
	}
}
