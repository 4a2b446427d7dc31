package env

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

func TestAnswerExtraction(t *testing.T) {
	text := "First 3 + 4 = 7.\nThen 7 * 6 = 42.\n#### 1,042"
	if a := ExtractStrict(text); a != "1042" {
		t.Errorf("strict %q", a)
	}
	cases := []struct{ in, strict, lenient string }{
		{"so #### 12 then #### 13", "13", "13"}, // last #### wins
		{`The answer is \boxed{\frac{1}{2}} or \boxed{5}`, "", "5"},
		// One number in the box is the answer, whatever LaTeX or units surround it.
		{`so \boxed{\$1,072}`, "", "1072"},
		{`\boxed{72 \text{ apples}}`, "", "72"},
		{`\boxed{\text{-3.5}\%}`, "", "-3.5"},
		{`\boxed{\frac{1}{2}}`, "", `\frac{1}{2}`},
		{"Answer: $1,200.", "", "1200"},
		{"We get 3 apples, then 4.5 apples.", "", "4.5"},
		{"#### -7", "-7", "-7"},
		// verl's strict regex is "#### (\-?[0-9\.\,]+)": one space, then the number.
		{"####42", "", "42"},
		{"####  42", "", "42"},
		{"#### 42.", "42", "42"},
		{"no numbers", "", ""},
	}
	for _, c := range cases {
		if s := ExtractStrict(c.in); s != c.strict {
			t.Errorf("strict(%q) = %q, want %q", c.in, s, c.strict)
		}
		if l := ExtractLenient(c.in); l != c.lenient {
			t.Errorf("lenient(%q) = %q, want %q", c.in, l, c.lenient)
		}
	}
	for _, c := range [][2]string{{"72.0", "72"}, {"$72", "72"}, {"1,000", "1000"}, {"Paris", "paris"}} {
		if !AnswersEqual(c[0], c[1]) {
			t.Errorf("%q != %q", c[0], c[1])
		}
	}
	for _, c := range [][2]string{{"", ""}, {"7", "72"}, {"1/2", "0.5"}} {
		if AnswersEqual(c[0], c[1]) {
			t.Errorf("%q == %q", c[0], c[1])
		}
	}
}

func TestGSM8KScriptedPolicies(t *testing.T) {
	e := open(t, "gsm8k", Config{})
	if e.MultiTurn {
		t.Fatal("gsm8k is single-turn")
	}
	task := firstTask(t, e, 1)
	truth := task.GroundTruth
	contains(t, task.Prompt[0].Content, GSM8KInstruction)
	cases := []struct {
		name                    string
		answer                  string
		strict, format, lenient float64
	}{
		{"correct", "Some steps.\n#### " + truth, 1, 1, 1},
		{"wrong", "#### 999999", 0, 1, 0},
		{"unformatted but right", "The answer is " + truth + ".", 0, 0, 1},
		{"malformed", "<tool_call>{oops", 0, 0, 0},
		{"empty", "", 0, 0, 0},
	}
	for _, c := range cases {
		traj, s := episode(t, e.New(), task, say(c.answer))
		if len(traj.Turns) != 1 || !traj.Final().Final {
			t.Fatalf("%s: want one final turn, got %+v", c.name, traj.Final())
		}
		wantMetric(t, s, "reward/accuracy_strict", c.strict)
		wantMetric(t, s, "reward/format", c.format)
		wantMetric(t, s, "reward/accuracy", c.lenient)
		if s.Reward != c.strict { // reward = 1·strict + 0·format + 0·lenient
			t.Errorf("%s: reward %v", c.name, s.Reward)
		}
	}
}

// The seed's trajectory reward: 0 for a bad format, 0 for a wrong answer, else 1/max|c_t|.
// The single turn's context is the opening user message: 1 message · 100 tokens = 100, so the
// correct answer earns 1/100 = 0.01 and, scaled with budget 1000, 1000/100 = 10.
func TestContextLengthReward(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want float64
	}{{Config{RewardRule: RuleInverse}, 0.01}, {Config{RewardRule: RuleScaled, RewardBudget: 1000}, 10}} {
		e := open(t, "gsm8k", c.cfg)
		task := firstTask(t, e, 1)
		_, s := episode(t, e.New(), task, say("#### "+task.GroundTruth))
		if s.Reward != c.want {
			t.Errorf("%s: reward %v, want %v", c.cfg.RewardRule, s.Reward, c.want)
		}
		wantMetric(t, s, "context/max_tokens", 100)
		for _, bad := range []string{"#### 999999", "The answer is " + task.GroundTruth} {
			if _, s := episode(t, e.New(), task, say(bad)); s.Reward != 0 {
				t.Errorf("%s: %q earned %v", c.cfg.RewardRule, bad, s.Reward)
			}
		}
	}
	if _, err := Open("gsm8k", Config{RewardRule: RuleScaled}); err == nil {
		t.Error("scaled without a budget accepted")
	}
	if _, err := Open("gsm8k", Config{RewardRule: "sqrt"}); err == nil {
		t.Error("unknown rule accepted")
	}
}

// calc_mult with a tool-using policy: turn 0 calls the calculator, turn 1 answers.
func TestCalcMultToolPolicy(t *testing.T) {
	e := open(t, "calc_mult", Config{RewardRule: RuleInverse})
	task := firstTask(t, e, 3)
	var a, b int
	if _, err := fmt.Sscanf(task.Extra["question"].(string), "What is %d * %d?", &a, &b); err != nil {
		t.Fatal(err)
	}
	toolUser := func(turn int, h []Message) string {
		if turn == 0 {
			return fmt.Sprintf("I will use the tool.\n<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"%d * %d\"}}\n</tool_call>", a, b)
		}
		return "#### " + lastContent(h)
	}
	traj, s := episode(t, e.New(), task, toolUser)
	if len(traj.Turns) != 2 {
		t.Fatalf("turns %d", len(traj.Turns))
	}
	t0 := traj.Turns[0].Result
	if t0.Info.ToolCalls != 1 || t0.Info.ToolSuccesses != 1 || !t0.Info.AnswerInToolResult || t0.Done {
		t.Fatalf("turn 0 info %+v", t0.Info)
	}
	if m := t0.Messages[0]; m.Role != RoleTool || m.Content != fmt.Sprint(a*b) || m.ToolCallID != "call_0_0" {
		t.Fatalf("tool message %+v", m)
	}
	if tc := t0.Assistant.ToolCalls; len(tc) != 1 || t0.Assistant.Content != "I will use the tool." {
		t.Fatalf("parsed assistant %+v", t0.Assistant)
	}
	// Turn contexts: system + user = 2 messages (200 tokens), then + assistant + tool = 400.
	// Correct and formatted → 1/400. Turn rewards: turn 0 = tool_success 1 + answer_in_result 1
	// = 2, turn 1 = 0; R_turn sums the turns up to the first tool call: 2.
	if s.Reward != 1.0/400 || s.TurnRewards[0] != 2 || s.TurnRewards[1] != 0 || s.TurnReward != 2 {
		t.Fatalf("score %+v", s)
	}
	wantMetric(t, s, "turn_reward/tool_success", 0.5) // mean over 2 turns
	// Same tool use, wrong final answer: outcome 0, the turn credit stays (R_turn = 2).
	wrong := func(turn int, h []Message) string {
		if turn == 0 {
			return toolUser(0, h)
		}
		return "#### 1"
	}
	if _, s := episode(t, e.New(), task, wrong); s.Reward != 0 || s.TurnReward != 2 {
		t.Fatalf("wrong answer: %+v", s)
	}
	if len(e.New().(*ChatEnv).Tools.Specs()) != 1 {
		t.Fatal("calc_mult lists one tool")
	}
}

func TestCalcMultBadPolicies(t *testing.T) {
	e := open(t, "calc_mult", Config{})
	task := firstTask(t, e, 3)
	// Looping: calls the tool every turn and never answers → truncated after 3 turns, reward 0.
	loop := say(`<tool_call>{"name": "calculator", "arguments": {"expression": "1+1"}}</tool_call>`)
	traj, s := episode(t, e.New(), task, loop)
	if len(traj.Turns) != 3 || !traj.Final().Truncated || s.Reward != 0 {
		t.Fatalf("loop: %d turns, final %+v, reward %v", len(traj.Turns), traj.Final(), s.Reward)
	}
	if s.TurnRewards[0] != 1 || s.TurnReward != 1 { // success 1, answer not in "2"
		t.Fatalf("loop turn rewards %+v", s)
	}
	// Malformed calls: an error message back to the model, counted, never a crash.
	for _, bad := range []string{
		`<tool_call>{"name": "calculator", "arguments": {"expression": "1/0"}}</tool_call>`,
		`<tool_call>{"name": "calculator", "arguments": {"x": 1}}</tool_call>`,
		`<tool_call>{"name": "web", "arguments": {}}</tool_call>`,
		`<tool_call>not json</tool_call>`,
	} {
		en := e.New()
		if _, err := en.Reset(t.Context(), task); err != nil {
			t.Fatal(err)
		}
		res, err := en.Step(t.Context(), bad)
		if err != nil || res.Done || res.Info.ToolErrors != 1 || res.Info.ToolSuccesses != 0 || !strings.HasPrefix(res.Messages[0].Content, "Error: ") {
			t.Fatalf("%s: %+v %v", bad, res, err)
		}
	}
}

func TestGeneratorsAreDeterministic(t *testing.T) {
	for _, name := range GeneratorNames() {
		a, err := Generate(name, Config{}, 20, 5)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := Generate(name, Config{}, 20, 5)
		c, _ := Generate(name, Config{}, 20, 6)
		if fmt.Sprint(a) != fmt.Sprint(b) {
			t.Errorf("%s: same seed, different rows", name)
		}
		if fmt.Sprint(a) == fmt.Sprint(c) {
			t.Errorf("%s: different seeds, same rows", name)
		}
		for i, r := range a {
			if err := r.Validate(); err != nil || r.RewardModel.GroundTruth == "" {
				t.Fatalf("%s row %d: %v %+v", name, i, err, r)
			}
		}
	}
	if _, err := Generate("chess", Config{}, 1, 1); err == nil {
		t.Error("unknown task generated")
	}
	if _, err := Generate("gsm8k", Config{Math: MathTasks{MaxNumber: 5}}, 1, 1); err == nil || !strings.Contains(err.Error(), "max_number: 5") {
		t.Errorf("max_number 5: %v", err)
	}
}

// GSM8K solutions end in "#### answer", their <<a*b=c>> annotations are true, and with a cap
// (env.max_number) no number of the question or its solution exceeds it, while every template
// still comes up.
func TestGSM8KSolutionsAreRight(t *testing.T) {
	for _, top := range []int{0, MinMaxNumber, 20, 100, MaxMaxNumber} {
		rows := GenerateGSM8K(400, 9, top)
		largest, templates := 0, map[string]bool{}
		for i, r := range rows {
			sol := r.ExtraInfo["answer"].(string)
			if ExtractStrict(sol) != r.RewardModel.GroundTruth {
				t.Fatalf("cap %d, row %d: solution %q vs truth %s", top, i, sol, r.RewardModel.GroundTruth)
			}
			for _, m := range calcAnnot.FindAllStringSubmatch(sol, -1) {
				v, err := Evaluate(m[1])
				if err != nil || FormatRat(v) != m[2] {
					t.Fatalf("cap %d, row %d: <<%s=%s>> evaluates to %v (%v)", top, i, m[1], m[2], v, err)
				}
			}
			for _, n := range number.FindAllString(r.ExtraInfo["question"].(string)+" "+sol, -1) {
				v, _ := strconv.Atoi(n)
				if v < 1 || top > 0 && v > top {
					t.Fatalf("cap %d, row %d: number %d in %q", top, i, v, sol)
				}
				largest = max(largest, v)
			}
			for _, w := range []string{"packs", "per hour", "baker", "pages", "box holds"} {
				if strings.Contains(r.ExtraInfo["question"].(string), w) {
					templates[w] = true
				}
			}
		}
		if len(templates) != 5 {
			t.Errorf("cap %d: %d templates came up, want 5: %v", top, len(templates), templates)
		}
		// The cap binds: the largest number is near it (the templates' own ranges reach
		// DefaultMaxNumber, so a larger cap leaves them as they are).
		if want := cmp.Or(min(top, DefaultMaxNumber), DefaultMaxNumber); largest < want*3/4 || largest > want {
			t.Errorf("cap %d: largest number %d, want %d to %d", top, largest, want*3/4, want)
		}
	}
}

var number = regexpMust(`[0-9]+`)

var calcAnnot = regexpMust(`<<([^=]+)=([0-9]+)>>`)
