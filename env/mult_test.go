package env

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/mtgrpo/mtgrpo/env/data"
)

// calc_mult's task shapes: operand digits and factor counts, with the product as ground truth.
func TestCalcMultShapes(t *testing.T) {
	for _, c := range []struct {
		cfg      Config
		question string
		turns    int
	}{
		{Config{}, `^What is \d{3} \* \d{3}\?$`, 2},
		{Config{Mult: MultTask{Digits: 1}}, `^What is [2-9] \* [2-9]\?$`, 2},
		{Config{Mult: MultTask{Digits: 2, Factors: 3}}, `^What is \d{2} \* \d{2} \* \d{2}\?$`, 3},
		{Config{Mult: MultTask{Digits: 4, Factors: 4}}, `^What is \d{4} \* \d{4} \* \d{4} \* \d{4}\?$`, 4},
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
	for _, bad := range []MultTask{{Digits: 7}, {Digits: -1}, {Factors: 1}, {Factors: 5}} {
		if _, err := Open("calc_mult", Config{Mult: bad}); err == nil || !strings.Contains(err.Error(), "env.digits") && !strings.Contains(err.Error(), "env.factors") {
			t.Errorf("%+v: error %v", bad, err)
		}
	}
}

// DirectDemos: that share of the tasks is demonstrated with the product at once (one turn, still
// right), the same tasks every time; the rest call the calculator first.
func TestCalcMultDirectDemos(t *testing.T) {
	e := open(t, "calc_mult", Config{Mult: MultTask{Digits: 2}, DirectDemos: 0.5})
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
	// The perfect demonstrator (what sft.perfect_first trains on first) calls the calculator on
	// every task, the directly demonstrated ones too; with no direct share there is none.
	for i, row := range rows {
		d, err := e.DemonstratePerfect(TaskFromRow(row, i), []Message{Text(RoleUser, row.Prompt[0].Content)})
		if err != nil || !strings.Contains(d, `"name": "calculator"`) {
			t.Fatalf("perfect demonstrator on task %d: %q, %v", i, d, err)
		}
	}
	none := open(t, "calc_mult", Config{Mult: MultTask{Digits: 2}})
	if none.DemonstratePerfect != nil {
		t.Error("DirectDemos 0 has a separate perfect demonstrator; want nil (Demonstrate is perfect)")
	}
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

// calc_mult's turn reward partial_product credits each calculator turn for its own step: a new
// product of two or more of the question's numbers. Worked by hand on "What is 12 * 34 * 56?":
// the partial products are 408 (12·34), 672 (12·56), 1904 (34·56) and 22848.
func TestCalcMultPartialProductTurn(t *testing.T) {
	got := partialProducts([]string{"12", "34", "56"})
	want := []string{"408", "672", "1904", "22848"}
	if len(got) != len(want) {
		t.Fatalf("partial products %v, want %v", got, want)
	}
	for _, p := range want {
		if !got[p] {
			t.Fatalf("partial products %v lack %s", got, p)
		}
	}
	notMult := Task{Prompt: []Message{Text(RoleUser, "What is 2 + 3?")}}
	if xs := multFactors(notMult); xs != nil || len(partialProducts(xs)) != 0 {
		t.Fatalf("a question that is no product has numbers %v", xs)
	}

	e := open(t, "calc_mult", Config{Mult: MultTask{Digits: 2, Factors: 3}})
	task := TaskFromRow(data.Row{
		Prompt:      []data.Message{{Role: "user", Content: "What is 12 * 34 * 56?"}},
		RewardModel: data.RewardModel{GroundTruth: "22848"},
	}, 0)
	calls := func(exprs ...string) policy {
		return func(turn int, h []Message) string {
			if turn < len(exprs) {
				return fmt.Sprintf("<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"expression\": %q}}\n</tool_call>", exprs[turn])
			}
			return "#### " + lastContent(h)
		}
	}
	for _, c := range []struct {
		name    string
		policy  policy
		reward  float64   // the outcome
		partial []float64 // partial_product per turn
		rTurn   float64   // R_turn: tool_success + partial_product up to the first call
	}{
		// The demonstrator's steps: 12*34 = 408, then 408*56 = 22848, then the answer.
		{"steps", calls("12 * 34", "408 * 56"), 1, []float64{1, 1, 0}, 2},
		// Another order is as good: 34*56 = 1904, then 1904*12.
		{"other order", calls("34 * 56", "1904 * 12"), 1, []float64{1, 1, 0}, 2},
		// A number copied wrong in the first call (13 for 12): 442 is no partial product, and
		// 442*56 is not either; the wrong answer earns 0.
		{"miscopied", calls("13 * 34", "442 * 56"), 0, []float64{0, 0, 0}, 1},
		// The second call repeats the first: no new step.
		{"repeated", calls("12 * 34", "12 * 34"), 0, []float64{1, 0, 0}, 2},
		// All at once in one call: the full product is a new partial product; then the answer.
		{"one call", calls("12 * 34 * 56"), 1, []float64{1, 0}, 2},
	} {
		traj, s := episode(t, e.New(), task, c.policy)
		if s.Reward != c.reward || s.TurnReward != c.rTurn || len(traj.Turns) != len(c.partial) {
			t.Errorf("%s: reward %v, R_turn %v, %d turns; want %v, %v, %d", c.name, s.Reward, s.TurnReward, len(traj.Turns), c.reward, c.rTurn, len(c.partial))
			continue
		}
		for i, want := range c.partial {
			if got := PartialProductTurn(1).Fn(traj, i); got != want {
				t.Errorf("%s: turn %d partial_product %v, want %v", c.name, i, got, want)
			}
		}
	}
}
